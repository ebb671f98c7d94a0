'use strict';
// The emulator's physical model (bench/emulator/gpu.js, scheduler.js) on
// the simulator's virtual clock: GPU sharing, vLLM V1 preemption, chunked
// prefill and the absolute step deadlines. (node --test runs each file in
// a process of its own, so replacing the timers here touches nothing else.)

const clock = require('../sim/clock');
const test = require('node:test');
const assert = require('node:assert/strict');
const { Gpu } = require('../emulator/gpu');
const { processClock } = require('../emulator/model_clock');
const { KvCache, noneHash } = require('../emulator/kv_cache');
const { Scheduler, Request } = require('../emulator/scheduler');

const ROOT = noneHash('physics');
const T = { baseUs: 2000, gpuStepUs: 3000, prefillUsPerToken: 10, decodeUsPerSeq: 1000,
  maxBatchedTokens: 2048, timeScale: 1 };

function seq(start, n) {
  return Array.from({ length: n }, (_, i) => start + i);
}

// an engine on `gpu`: its scheduler and a submit that records token times
function engine(gpu, numBlocks = 400, timing = T) {
  const cache = new KvCache({ numBlocks, blockSize: 16 });
  const sched = new Scheduler(cache, { timing, hashRoot: ROOT, gpu, outputTokenId: (i) => 7 + i });
  const submit = (tokens, maxTokens) => {
    const r = { times: [], finished: null, req: null };
    r.req = new Request(0, tokens, maxTokens, {
      onToken: () => r.times.push(clock.now()),
      onFinish: () => { r.finished = clock.now(); },
    });
    sched.submit(r.req);
    return r;
  };
  return { cache, sched, submit };
}

test('two engines on one GPU are slower than one, and as slow as the sharing says', () => {
  const run = (share, together) => {
    clock.reset();
    const mc = processClock(clock.now);
    const g1 = new Gpu(mc, { share });
    const g2 = together ? g1 : new Gpu(mc, { share });
    const a = engine(g1);
    const b = engine(g2);
    const ra = a.submit(seq(1, 1000), 1);
    const rb = b.submit(seq(5000, 1000), 1);
    clock.drain();
    return [ra.times[0], rb.times[0]];
  };
  const apart = run(1, false);
  const shared = run(1, true);
  const half = run(0.5, true);
  // one step: CPU 2 ms, then GPU 3 + 10 x 1,000 tokens = 13 ms
  assert.deepEqual(apart, [15, 15]);
  // time-slicing: both GPU phases run at half speed
  assert.deepEqual(shared, [28, 28]);
  assert.deepEqual(half, [21.5, 21.5]);
});

test('a slower node takes longer in proportion to all its work', () => {
  clock.reset();
  const e = engine(new Gpu(processClock(clock.now), { speed: 0.5 }));
  const r = e.submit(seq(1, 1000), 1);
  clock.drain();
  assert.equal(r.times[0], (2 + 13) / 0.5);
});

test('compute speed slows prefill only; step speed slows the step and decode', () => {
  // first token: one step of 1,000 prefill tokens (cpu 2, step 3, prefill
  // 10 ms at speed 1); the second: one decode step (cpu 2, step 3 + 1)
  const times = (speeds) => {
    clock.reset();
    const e = engine(new Gpu(processClock(clock.now), speeds));
    const r = e.submit(seq(1, 1000), 2);
    clock.drain();
    return [r.times[0], r.times[1] - r.times[0]];
  };
  assert.deepEqual(times({ speed: 1, stepSpeed: 1 }), [15, 6]);
  assert.deepEqual(times({ speed: 0.5, stepSpeed: 1 }), [2 + 3 + 10 / 0.5, 6]);
  assert.deepEqual(times({ speed: 1, stepSpeed: 0.5 }), [(2 + 3) / 0.5 + 10, 6 / 0.5]);
});

test('--gpus takes classes, speeds and compute/step pairs', () => {
  const { parseGpus, gpuSpec, GPU_CLASSES } = require('../emulator/options');
  const g = parseGpus('24g,0.5,0.9/0.6');
  assert.deepEqual(gpuSpec(g[0]), { speed: GPU_CLASSES['24g'].compute, stepSpeed: GPU_CLASSES['24g'].step });
  assert.deepEqual(gpuSpec(g[1]), { speed: 0.5, stepSpeed: 0.5 });
  assert.deepEqual(gpuSpec(g[2]), { speed: 0.9, stepSpeed: 0.6 });
  assert.throws(() => parseGpus('1,0.9/x'));
});

test("a long prefill delays the sibling engine's tokens", () => {
  const gaps = (withSibling) => {
    clock.reset();
    const gpu = new Gpu(processClock(clock.now), { share: 1 });
    const a = engine(gpu);
    const b = engine(gpu);
    const ra = a.submit(seq(1, 32), 40);
    if (withSibling) setTimeout(() => b.submit(seq(9000, 6000), 1), 50);
    clock.drain();
    // the largest gap between two of A's tokens
    let worst = 0;
    for (let i = 1; i < ra.times.length; i++) worst = Math.max(worst, ra.times[i] - ra.times[i - 1]);
    return worst;
  };
  const alone = gaps(false);
  const beside = gaps(true);
  assert.equal(alone, 2 + 3 + 1);              // a decode step of one request
  // beside B's prefill chunks, A's GPU phase runs at half speed
  assert.equal(beside, 2 + 2 * (3 + 1), `A's token gap grew from ${alone} to ${beside} ms`);
});

test('the token budget chunks a long prompt and decodes ride along in the same steps', () => {
  clock.reset();
  const e = engine(new Gpu(processClock(clock.now)), 800);
  const short = e.submit(seq(1, 32), 6);
  let long = null;
  setTimeout(() => { long = e.submit(seq(20000, 5000), 1); }, 6);
  let steps = 0;
  const orig = e.sched.schedule.bind(e.sched);
  const plans = [];
  e.sched.schedule = () => {
    const p = orig();
    steps++;
    plans.push(p.scheduled.map(([r, n]) => (long && r === long.req ? n : -n)));
    return p;
  };
  clock.drain();
  // 5,000 tokens in chunks of at most 2,048 minus the decodes in the step
  const chunks = plans.map((p) => p.filter((n) => n > 0)).flat();
  assert.equal(chunks.reduce((a, n) => a + n, 0), 5000);
  assert.ok(chunks.length >= 3, `chunks ${chunks}`);
  assert.ok(chunks.every((n) => n <= 2048));
  // the short request's decodes were scheduled in steps that prefilled
  assert.ok(plans.some((p) => p.includes(-1) && p.some((n) => n > 1)), JSON.stringify(plans));
  assert.equal(short.times.length, 6);
  assert.ok(steps > 0);
});

test("preemption frees the newest request's blocks into the prefix cache; it recomputes with hits", () => {
  clock.reset();
  // 20 blocks of 16: two 150-token prompts (10 blocks each) fill it
  const e = engine(new Gpu(processClock(clock.now)), 20);
  const first = e.submit(seq(1, 150), 20);
  const second = e.submit(seq(3000, 150), 20);
  let cachedAfterPreempt = null;
  const origPreempt = e.sched._preempt.bind(e.sched);
  e.sched._preempt = (req) => {
    origPreempt(req);
    if (cachedAfterPreempt === null) {
      // its full blocks are still cached, free for reuse but not forgotten
      cachedAfterPreempt = e.cache.lookup(req.blockHashes, req.tokens.length).length;
    }
  };
  clock.drain();
  assert.ok(e.sched.preemptionCount >= 1);
  assert.equal(second.req.preemptions >= 1 || first.req.preemptions >= 1, true);
  assert.ok(cachedAfterPreempt >= 9, `blocks still cached after the preemption: ${cachedAfterPreempt}`);
  assert.equal(first.times.length, 20);
  assert.equal(second.times.length, 20);
  // the preempted request was recomputed from its cached blocks: the
  // cache's hit counter saw it only once (cached_tokens is fixed at first
  // scheduling), and all blocks came back
  assert.equal(e.cache.numFree(), 20);
});

test('step ends are absolute: a clock that always wakes late does not slow the engine', () => {
  clock.reset();
  const late = { now: clock.now, after: (ms, fn) => setTimeout(fn, Math.max(0, ms) + 5),
    cancel: (h) => clearTimeout(h) };
  const gpu = new Gpu(late, {});
  const e = engine(gpu);
  const r = e.submit(seq(1, 100), 10);
  clock.drain();
  // 1 prefill step (2 + 3 + 1 ms) and 9 decode steps (2 + 3 + 1 ms): the
  // model's last token at 60 ms; processed at most one wake-up (5 ms) late,
  // where steps started from their late wake-ups would end at 110 ms
  assert.ok(r.finished <= 60 + 5 + 1e-6, `finished at ${r.finished}`);
  assert.ok(r.finished >= 60);
  const late2 = gpu.latenessSummary();
  assert.ok(late2.p50 > 0 && late2.max <= 5 + 1e-6, JSON.stringify(late2));
});

test('an engine that stops leaves the GPU to its sibling at full speed', () => {
  clock.reset();
  const gpu = new Gpu(processClock(clock.now), { share: 1 });
  const a = engine(gpu);
  const b = engine(gpu);
  const ra = a.submit(seq(1, 1000), 1);
  b.submit(seq(5000, 1000), 1);
  // B goes away 4 ms into A's GPU phase (which started at 2 ms)
  setTimeout(() => b.sched.stop(), 6);
  clock.drain();
  // A: from 2 to 6 ms at half speed (2 ms of its 13 done), then the
  // remaining 11 at full speed: 6 + 11 (alone it would be 15, shared 28)
  assert.equal(ra.times[0], 17);
});

test('the model ends its answer where its prompt says (--eos-tokens): one length a prompt, uniform over the range, cut at max_tokens', () => {
  const { outputLength, parseRange, rangeOfSpread, spreadOfRange } = require('../emulator/eos');
  const prompts = Array.from({ length: 2000 }, (_, k) => seq(1000 + k * 3001, 40));
  // no range: every answer is max_tokens long
  assert.ok(prompts.every((p) => outputLength(p, 29, null) === 29));
  // a prompt always gets the same length; 1-57 is covered evenly
  const range = parseRange('1-57');
  const lens = prompts.map((p) => outputLength(p, 100, range));
  assert.deepEqual(prompts.map((p) => outputLength(p, 100, range)), lens);
  assert.equal(Math.min(...lens), 1);
  assert.equal(Math.max(...lens), 57);
  const mean = lens.reduce((a, b) => a + b, 0) / lens.length;
  assert.ok(Math.abs(mean - 29) < 1, `mean ${mean}`);
  const low = lens.filter((n) => n <= 19).length / lens.length;
  assert.ok(Math.abs(low - 19 / 57) < 0.04, `share of the lowest third ${low}`);
  // max_tokens cuts the model's answer, and only the answers past it
  const cut = prompts.map((p) => outputLength(p, 20, range));
  assert.ok(cut.every((n, i) => n === Math.min(20, lens[i])));
  // the fit's spread: the top half of 1..57
  assert.deepEqual(rangeOfSpread(57, 0.5), { lo: 29, hi: 57 });
  assert.equal(rangeOfSpread(57, 0), null);
  // and back: the emulator's range as the fit's spread
  for (const r of [{ lo: 12, hi: 43 }, { lo: 1, hi: 57 }, { lo: 29, hi: 57 }, { lo: 43, hi: 43 }]) {
    assert.deepEqual(rangeOfSpread(r.hi, spreadOfRange(r)) || { lo: r.hi, hi: r.hi }, r);
  }
  assert.throws(() => parseRange('9-3'), /eos-tokens/);
  assert.throws(() => parseRange('0-3'), /eos-tokens/);
});

test('an answer the model ends early finishes with reason stop, at its length, and frees its blocks', () => {
  const { outputLength } = require('../emulator/eos');
  clock.reset();
  const cache = new KvCache({ numBlocks: 100, blockSize: 16 });
  const sched = new Scheduler(cache, { timing: T, hashRoot: ROOT, gpu: new Gpu(processClock(clock.now)),
    eosTokens: { lo: 1, hi: 40 } });
  // a prompt whose answer ends well before max_tokens
  let prompt = null;
  for (let k = 0; prompt === null; k++) {
    const p = seq(50 + k * 977, 100);
    const n = outputLength(p, 40, { lo: 1, hi: 40 });
    if (n > 5 && n < 20) prompt = p;
  }
  const want = outputLength(prompt, 40, { lo: 1, hi: 40 });
  const got = { tokens: 0, last: null, reason: null };
  sched.submit(new Request(0, prompt, 40, {
    onToken: (id, i, last) => { got.tokens++; got.last = last; },
    onFinish: (reason) => { got.reason = reason; },
  }));
  clock.drain();
  assert.equal(got.tokens, want);
  assert.equal(got.last, 'stop');
  assert.equal(got.reason, 'stop');
  assert.equal(cache.numFree(), 100);
  // max_tokens below the model's own length: 'length', as vLLM says
  const capped = { tokens: 0, reason: null };
  sched.submit(new Request(1, prompt, 3, {
    onToken: () => { capped.tokens++; },
    onFinish: (reason) => { capped.reason = reason; },
  }));
  clock.drain();
  assert.ok(want > 3);
  assert.equal(capped.tokens, 3);
  assert.equal(capped.reason, 'length');
});
