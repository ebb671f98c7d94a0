'use strict';
// The policy simulator (bench/sim) runs the emulator's own scheduler on a
// virtual clock in a child process (it replaces the timers).

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const MAIN = path.join(__dirname, '..', 'sim', 'main.js');

function sim(args) {
  const out = execFileSync(process.execPath, [MAIN, ...args], { encoding: 'utf8' });
  return out.trim().split('\n').map((l) => JSON.parse(l));
}

test('one prompt on an idle engine: TTFT is its prefill steps of the timing model', () => {
  const { DEFAULT_TIMING: t } = require('../emulator/scheduler');
  const [r] = sim(['--workers', '1', '--prefixes', '1', '--concurrency', '1', '--requests', '1',
    '--seeds', '1', '--frontend-us', '0', '--max-tokens', '16', 'round_robin']);
  // 2,371 uncached tokens in chunks of the 2,048-token budget: two steps
  const step = (prefill, decodes) => (t.baseUs + t.gpuStepUs + t.prefillUsPerToken * prefill +
    t.decodeUsPerSeq * decodes) / 1000;
  const ttft = step(2048, 0) + step(323, 0);
  assert.equal(r.ttft_p50_ms, Math.round(ttft * 10) / 10);
  assert.equal(r.request_hit_rate, 0);
  // then 15 decode steps of one request
  assert.equal(r.requests_per_s, Math.round(1000 / (ttft + 15 * step(0, 1)) * 100) / 100);
});

test('two engines on one GPU share it: simultaneous prompts take longer, by the sharing', () => {
  const args = ['--workers', '2', '--prefixes', '2', '--concurrency', '2', '--requests', '2', '--seeds', '1'];
  const [apart] = sim(args.concat(['--gpus', '1,1', 'round_robin']));
  const [shared] = sim(args.concat(['--gpus', '1', '--share', '1', 'round_robin']));
  const [half] = sim(args.concat(['--gpus', '1', '--share', '0.5', 'round_robin']));
  const [slow] = sim(args.concat(['--gpus', '0.5,0.5', 'round_robin']));
  assert.ok(shared.ttft_p99_ms > half.ttft_p99_ms && half.ttft_p99_ms > apart.ttft_p99_ms,
    JSON.stringify([apart, half, shared]));
  // time-slicing doubles the GPU phase only; a node of half the speed
  // doubles its CPU phase too
  assert.ok(shared.ttft_p99_ms < slow.ttft_p99_ms, JSON.stringify([shared, slow]));
  const [gpuHalf] = sim(args.concat(['--gpus', '0.5/1,0.5/1', 'round_robin']));
  assert.ok(gpuHalf.ttft_p99_ms > apart.ttft_p99_ms && gpuHalf.ttft_p99_ms < slow.ttft_p99_ms,
    JSON.stringify([apart, gpuHalf, slow]));
});

test('deterministic; the partition pins each type to one engine and beats round robin on hits', () => {
  const args = ['--workers', '6', '--prefixes', '24', '--concurrency', '8', '--requests', '300', '--seeds', '2'];
  const a = sim(args.concat(['partition', 'round_robin', 'cost', 'kvroute']));
  const b = sim(args.concat(['partition', 'round_robin', 'cost', 'kvroute']));
  assert.deepEqual(a, b);
  const [part, rr, cost, kvr] = a;
  assert.equal(part.engines_per_prefix, 1);
  assert.ok(rr.engines_per_prefix > 5, `round robin spreads every prefix (${rr.engines_per_prefix})`);
  assert.ok(part.request_hit_rate > 3 * rr.request_hit_rate);
  // kvroute's rules and the cost keep most prefixes together
  assert.ok(cost.request_hit_rate > 2 * rr.request_hit_rate, JSON.stringify(cost));
  assert.ok(kvr.request_hit_rate > 2 * rr.request_hit_rate, JSON.stringify(kvr));
});

test('the peers in the simulator: llm-d and SGLang cache_aware keep prefixes together, each its own way', () => {
  const args = ['--workers', '6', '--prefixes', '24', '--concurrency', '8', '--requests', '300', '--seeds', '2'];
  const [rr, llmd, sglang] = sim(args.concat(['round_robin', 'llmd', 'sglang']));
  assert.deepEqual(sim(args.concat(['llmd', 'sglang'])), [llmd, sglang], 'deterministic');
  assert.ok(llmd.request_hit_rate > 2 * rr.request_hit_rate, JSON.stringify(llmd));
  assert.ok(sglang.request_hit_rate > 2 * rr.request_hit_rate, JSON.stringify(sglang));
  // SGLang's tree sends a matched prompt to its engine while loads are
  // within 64: a prefix stays on the engine it first went to
  assert.ok(sglang.engines_per_prefix < 1.5, JSON.stringify(sglang));
  // llm-d's queue and KV terms move a prefix when its holder is busier
  assert.ok(llmd.engines_per_prefix > sglang.engines_per_prefix, `${llmd.engines_per_prefix} ${sglang.engines_per_prefix}`);
});

test('floor tables: runs of a point are its median; each floor is judged against Dynamo or the partition', () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'floors-'));
  const kv = (router, rps, p99, ctr) => JSON.stringify({ w: 6, p: 24, c: 16, router, row: { router,
    workers: 6, prefixes: 24, concurrency: 16, runs: 1,
    steady: { requests_per_s: rps, ttft_p50_ms: 50, ttft_p99_ms: p99, cached_token_ratio: ctr } } });
  fs.writeFileSync(path.join(dir, 'rows.jsonl'), [kv('dynamo', 10, 200, 0.3), kv('dynamo', 12, 300, 0.3),
    kv('dynamo', 20, 100, 0.3), kv('kvroute-kv-own50-dec300', 11.5, 250, 0.6), kv('partition', 9, 900, 0.7)].join('\n'));
  const point = { w: 3, p: 24, c: 8, ttft_p50_ms: 70, cached_token_ratio: 0.3, runs: 3 };
  fs.writeFileSync(path.join(dir, 'sim.jsonl'), [
    Object.assign({ policy: 'dynamo', requests_per_s: 15, ttft_p99_ms: 120 }, point),
    Object.assign({ policy: 'kvroute ttft+speed', requests_per_s: 14, ttft_p99_ms: 150 }, point)]
    .map((r) => JSON.stringify(r)).join('\n'));
  execFileSync(process.execPath, [path.join(__dirname, '..', 'floor_tables.js'), '--out', dir,
    path.join(dir, 'rows.jsonl'), path.join(dir, 'sim.jsonl')]);
  const f1 = fs.readFileSync(path.join(dir, 'floor1_requests.md'), 'utf8');
  // Dynamo's three runs: median 12 req/s, p99 200 ms
  assert.match(f1, /\| 6w\/24\/c16 \| 12\.00 \| 9\.00 \| 11\.50 \| \*\*0\.958\*\* \|/);
  assert.match(f1, /\| 3w\/24\/c8 \| 15\.00 \| – \| 14\.00 \| \*\*0\.933\*\* \|/);
  assert.match(f1, /at \*\*0 of 2\*\* points/);
  const f2 = fs.readFileSync(path.join(dir, 'floor2_ttft.md'), 'utf8');
  assert.match(f2, /\| \*\*1\.250\*\* \| 1\.000 \|/, 'p99 250 vs the median 200');
  const f3 = fs.readFileSync(path.join(dir, 'floor3_cached.md'), 'utf8');
  assert.match(f3, /6w\/24\/c16 0\.857/, '0.6 / 0.7');
  assert.ok(!fs.existsSync(path.join(dir, 'floor4_approx.md')), 'no approximate rows, no floor 4 table');
});

test('floor tables: floor 4 compares approximate mode with kv mode point by point, within 0.05', () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'floor4-'));
  const kv = (router, w, p, c, ctr) => JSON.stringify({ router, workers: w, prefixes: p, concurrency: c,
    runs: 1, steady: { requests_per_s: 10, ttft_p50_ms: 50, ttft_p99_ms: 100, cached_token_ratio: ctr } });
  fs.writeFileSync(path.join(dir, 'rows.jsonl'), [kv('dynamo', 6, 24, 8, 0.4), kv('dynamo', 3, 24, 8, 0.2),
    kv('kvroute-kv-own50-dec300', 6, 24, 8, 0.6), kv('kvroute-kv-own50-dec300', 3, 24, 8, 0.5),
    kv('kvroute-kv-own50-dec300', 3, 7, 8, 0.7)].join('\n'));
  // the approximate rows in a file of their own, as kvbench's runs keep them;
  // the old setting's rows are not the default's
  fs.writeFileSync(path.join(dir, 'approx.jsonl'), [kv('kvroute-approx-metrics-dec300', 6, 24, 8, 0.64),
    kv('kvroute-approx-metrics-dec300', 3, 24, 8, 0.43), kv('kvroute-approx-metrics', 3, 7, 8, 0.1)].join('\n'));
  execFileSync(process.execPath, [path.join(__dirname, '..', 'floor_tables.js'), '--out', dir,
    path.join(dir, 'rows.jsonl'), path.join(dir, 'approx.jsonl')]);
  const f4 = fs.readFileSync(path.join(dir, 'floor4_approx.md'), 'utf8');
  assert.match(f4, /\| 6w\/24\/c8 \| 0\.640 \| 0\.600 \| \+0\.040 \| yes \|/);
  assert.match(f4, /\| 3w\/24\/c8 \| 0\.430 \| 0\.500 \| -0\.070 \| \*\*no\*\* \|/);
  assert.doesNotMatch(f4, /3w\/7\/c8/, 'a point without the default approximate row is not judged');
  assert.match(f4, /at \*\*1 of 2\*\* points/);
  assert.match(f4, /largest difference is 0\.070/);
});

test('robustness table: medians over seeds, p99 against the reference seed by seed, late runs counted', () => {
  const { collect, table } = require('../robustness_table');
  const fs = require('node:fs');
  const os = require('node:os');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'robust-'));
  const run = (router, seed, rps, p99, late, decode) => JSON.stringify({ scenario: 'zipf', router, seed,
    row: { errors: router === 'dynamo' ? 1 : 0, emulator: { clock_ok: !late },
      ttft_decode: decode ? [{ tokens: decode, source: 'learned' }] : undefined,
      steady: { request_hit_rate: 0.5, ttft_p50_ms: 50, ttft_p99_ms: p99, requests_per_s: rps } } });
  const f = path.join(dir, 'rows.jsonl');
  fs.writeFileSync(f, [run('dynamo', 1, 10, 200), run('dynamo', 2, 12, 100), run('dynamo', 3, 11, 300),
    run('kv', 1, 13, 100), run('kv', 2, 14, 150, true, 320), run('kv', 3, 16, 150, false, 300)].join('\n'));
  const md = table(collect([f]), 'dynamo');
  // Dynamo first; kv's medians 14 req/s and p99 150 against Dynamo's 11 and 200
  assert.match(md, /\| skewed popularity[^|]*\| dynamo \| 50\.0% \| 50 \/ 200 \| 11\.00 \|/);
  assert.match(md, /\| kv \| 50\.0% \| 50 \/ 150 \| 14\.00 \| 1\.27x \| 0\.75 \| 0\.50 \/ 1\.50 \/ 0\.50 \| 0 \| 1 of 3 \| - \/ 320 \/ 300 \|/);
  assert.match(md, /\| dynamo [^\n]*\| 3 \| 0 of 3 \|/, 'errors summed over the seeds');
});

test('unknown policies are refused', () => {
  assert.throws(() => execFileSync(process.execPath, [MAIN, 'fastest'], { stdio: 'pipe' }),
    /unknown policy fastest/);
});

test('a host tier: more hits than without; weighing it (the C policy, Dynamo weights) more still', () => {
  const base = ['--workers', '3', '--prefixes', '24', '--concurrency', '8', '--requests', '240',
    '--measure-from', '48', '--seeds', '1', '--gpus', '24g,8g,8g'];
  const [none] = sim([...base, 'ttft_c']);
  const [on, off] = sim([...base, '--cpu-blocks', '3000', 'ttft_c', 'ttft_c:1200:2:40000:0']);
  assert.ok(off.request_hit_rate > none.request_hit_rate,
    `the tier loads hits back: ${off.request_hit_rate} > ${none.request_hit_rate}`);
  assert.ok(on.request_hit_rate > off.request_hit_rate,
    `weighed, prompts go where their tier is: ${on.request_hit_rate} > ${off.request_hit_rate}`);
});

test('policy=ttft with speeds learned from the engines\' inter-token latency: more work to the fast node', () => {
  // the seed's nodes (a desktop GPU, two laptops whose steps take 3.3
  // times as long), two prefix types: every request hits, so where it
  // runs is what counts
  const args = ['--workers', '3', '--prefixes', '2', '--concurrency', '8', '--requests', '240',
    '--measure-from', '40', '--seeds', '1', '--gpus', '24g,8g,8g'];
  const [blind, learned] = sim(args.concat(['ttft_c:1200:2:40000:0.75:0', 'ttft_c:1200:2:40000:0.75:500']));
  assert.ok(learned.requests_per_s > 1.1 * blind.requests_per_s, JSON.stringify([blind, learned]));
  assert.ok(learned.ttft_p99_ms <= blind.ttft_p99_ms, JSON.stringify([blind, learned]));
});

test('open loop (--rate): arrivals do not wait for answers; past capacity the queue, not the rate, grows', () => {
  const args = ['--workers', '2', '--prefixes', '4', '--concurrency', '4', '--requests', '400', '--seeds', '1',
    '--measure-from', '50'];
  // a closed loop of 4 clients sets its own pace; arrivals at 8 a second
  // are well under what two engines serve: they finish at about that rate
  const [closed] = sim(args.concat(['round_robin']));
  const [light] = sim(args.concat(['--rate', '8', 'round_robin']));
  assert.ok(Math.abs(light.requests_per_s - 8) < 1.2, JSON.stringify(light));
  assert.ok(light.requests_per_s < closed.requests_per_s, JSON.stringify([light, closed]));
  // far past what they serve, requests/s is the engines' and the wait for
  // a first token, counted from arrival, grows with the queue
  const [heavy] = sim(args.concat(['--rate', '400', 'round_robin']));
  const [heavier] = sim(args.concat(['--rate', '800', 'round_robin']));
  assert.ok(heavy.requests_per_s < 200 && heavier.requests_per_s < 1.2 * heavy.requests_per_s,
    JSON.stringify([heavy, heavier]));
  assert.ok(heavy.ttft_p50_ms > 10 * light.ttft_p50_ms, JSON.stringify([heavy, light]));
  // the same arrivals every time
  assert.deepEqual(sim(args.concat(['--rate', '8', 'round_robin'])), [light]);
});

test('ttft_own: on unequal nodes the answer decodes slower on a laptop, so more stays on the fast node; equal engines: no change', () => {
  const base = ['--workers', '6', '--prefixes', '7', '--concurrency', '4', '--requests', '300',
    '--seeds', '1', '--max-tokens', '29'];
  const spec = (own) => `ttft_c:600:2:40000:0.75:500:${own}`;
  const [off, on] = sim([...base, '--gpus', '24g,8g,8g', spec(0), spec(50)]);
  assert.ok(on.requests_per_s > 1.05 * off.requests_per_s, JSON.stringify([off, on]));
  const [eqOff, eqOn] = sim([...base, spec(0), spec(50)]);
  const strip = (r) => Object.assign({}, r, { policy: '' });
  assert.deepEqual(strip(eqOn), strip(eqOff));
});

test('rollout: replayed choices reproduce a run; looking ahead beats its base; limit sends a prefix of the run', () => {
  const script = `
    require(${JSON.stringify(path.join(__dirname, '..', 'sim', 'clock'))});
    const { simulate } = require(${JSON.stringify(path.join(__dirname, '..', 'sim', 'sim'))});
    const R = require(${JSON.stringify(path.join(__dirname, '..', 'sim', 'rollout'))});
    const o = { workers: 3, prefixes: 6, concurrency: 4, requests: 48, seed: 1, measureFrom: 8,
      gpus: [{ compute: 1, step: 1 }, { compute: 1, step: 0.5 }, { compute: 1, step: 0.5 }] };
    const out = {};
    // kvroute's C policy keeps state (the speeds it scrapes): forcing its
    // own choices back must not change the run
    let recs = null;
    out.base = simulate(Object.assign({}, o, { trace: (r) => { recs = r; } }), R.BASES.kvroute());
    out.replayed = R.replay(o, R.BASES.kvroute, recs.map((r) => r.engine));
    let short = null;
    simulate(Object.assign({}, o, { limit: 10, trace: (r) => { short = r; } }), R.BASES.kvroute());
    out.shortLength = short.length;
    out.shortFirst = short.slice(0, 4).map((r) => r.engine);
    out.fullFirst = recs.slice(0, 4).map((r) => r.engine);
    // a base that sends everything to the slowest engine
    const last = () => () => 2;
    out.last = simulate(o, last());
    const r = R.rollout(o, last, 8, R.OBJECTIVES.latency);
    out.differ = r.differ;
    out.rolled = R.replay(o, last, r.choices);
    // not knowing the order: futures drawn from the mix
    const f = R.rollout(o, last, 8, R.OBJECTIVES.latency, null, 2);
    out.drawn = R.replay(o, last, f.choices);
    const { workloadOf } = require(${JSON.stringify(path.join(__dirname, '..', 'sim', 'sim'))});
    const real = workloadOf(o);
    const heads = R.headsOf(real);
    const a = R.drawFuture(real, heads, 20, 40, o, 0);
    const b = R.drawFuture(real, heads, 20, 40, o, 0);
    const c = R.drawFuture(real, heads, 20, 40, o, 1);
    out.future = { length: a.length, kept: a.slice(0, 21).every((q, i) => q === real[i]),
      same: a.slice(21).every((q, i) => q.prefixId === b[21 + i].prefixId),
      other: a.slice(21).some((q, i) => q.prefixId !== c[21 + i].prefixId),
      headed: a.slice(21).every((q) => q.blockKeys[0] === heads.get(q.prefixId).keys[0]
        && q.firstKey === q.blockKeys[0] && q.ids.length === real[0].ids.length),
      moved: a.slice(21).some((q, i) => q.prefixId !== real[21 + i].prefixId) };
    process.stdout.write(JSON.stringify(out));`;
  const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }));
  assert.deepEqual(out.replayed, out.base);
  assert.equal(out.shortLength, 10);
  assert.deepEqual(out.shortFirst, out.fullFirst);
  assert.ok(out.differ > 0);
  assert.ok(out.rolled.requests_per_s > 1.5 * out.last.requests_per_s, JSON.stringify([out.last, out.rolled]));
  assert.ok(out.drawn.requests_per_s > 1.5 * out.last.requests_per_s, JSON.stringify([out.last, out.drawn]));
  // a drawn future: the run up to the choice as it was, then requests of
  // types drawn (the same for the same draw, others for another) on their heads
  assert.deepEqual(out.future, { length: 40, kept: true, same: true, other: true, headed: true, moved: true });
});

test('answers of unequal length (--eos-tokens) lengthen round robin\'s wait at 3 workers: a long answer holds its blocks while the next request waits', () => {
  const { simulate } = require('../sim/sim');
  const P = require('../sim/policies');
  const o = { workers: 3, prefixes: 24, concurrency: 8, requests: 300, seed: 1, measureFrom: 60,
    gpus: [1, { compute: 1, step: 0.3 }, { compute: 1, step: 0.3 }] };
  // the same mean answer (28 tokens), once fixed and once spread over 1..55
  const fixed = simulate(Object.assign({ maxTokens: 28, eosTokens: null }, o), P.roundRobin());
  const spread = simulate(Object.assign({ maxTokens: 55, eosTokens: { lo: 1, hi: 55 } }, o), P.roundRobin());
  assert.ok(spread.ttft_p99_ms > 1.3 * fixed.ttft_p99_ms,
    `p99 ${spread.ttft_p99_ms} against ${fixed.ttft_p99_ms}`);
  // the engines' work is about the same: requests/s within a fifth
  assert.ok(Math.abs(spread.requests_per_s / fixed.requests_per_s - 1) < 0.2,
    `req/s ${spread.requests_per_s} against ${fixed.requests_per_s}`);
});

test("judge.js: the floors of one policy against Dynamo's and the partition's rows at the same points", () => {
  const { judge } = require('../sim/judge');
  const row = (policy, w, p, c, rps, p50, p99, ctr) => ({ policy, w, p, c, requests_per_s: rps,
    ttft_p50_ms: p50, ttft_p99_ms: p99, cached_token_ratio: ctr });
  const rows = [
    row('dynamo', 3, 24, 8, 10, 50, 100, 0.2), row('partition', 3, 24, 8, 8, 60, 400, 0.4),
    row('llmd', 3, 24, 8, 8, 50, 90, 0.3), row('kvroute', 3, 24, 8, 11.5, 54, 101, 0.3),
    row('dynamo', 6, 2, 4, 10, 40, 80, 0.8), row('kvroute', 6, 2, 4, 9.7, 43, 200, 0.8),
  ];
  const j = judge(rows, 'kvroute', ['llmd', 'sglang']);
  assert.equal(j.points, 2);
  assert.equal(j.rps_met, 1, '0.97x is under 0.98x');
  assert.deepEqual(j.rps_ratio.map((x) => Math.round(x * 1000) / 1000), [0.97, 1.15]);
  assert.equal(j.p99_points, 1, 'p99 is judged at 7+ types only');
  assert.equal(j.p99_met, 0, '101 ms against 100');
  assert.equal(j.p50_met, 2, '54 and 43 within 1.1x of 50 and 40');
  assert.ok(Math.abs(j.headline['3w/24/c8'] - 1.15) < 1e-9);
  assert.ok(Math.abs(j.cached_vs_partition['3w/24/c8'] - 0.75) < 1e-9);
  assert.deepEqual(Object.keys(j.vs), ['llmd'], 'no rows of SGLang: no comparison');
  assert.equal(j.vs.llmd.ahead, 1);
  assert.match(j.misses.join(';'), /rps 6w\/2\/c4 0\.970/);
});

test('worlds.js: floors.js in each world, judged beside its fit to the seed, and a world with its own decode cost', () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'worlds-'));
  // the list of worlds in the output directory, as bench/results keeps it
  fs.writeFileSync(path.join(dir, 'worlds.jsonl'), [
    JSON.stringify({ name: 'defaults', source: 'test', params: {} }),
    JSON.stringify({ name: 'dear_decode', source: 'test', params: { decodeUsPerSeq: 4000 } })].join('\n'));
  execFileSync(process.execPath, [path.join(__dirname, '..', 'sim', 'worlds.js'), '--worlds', path.join(dir, 'worlds.jsonl'),
    '--out', dir, '--seeds', '1', '--fit-seeds', '1', '--workers', '3', '--prefixes', '24', '--concurrency', '8',
    '--policies', 'dynamo,partition,kvroute ttft+speed'], { stdio: 'pipe' });
  const sums = fs.readFileSync(path.join(dir, 'summary.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(sums.map((s) => s.world), ['defaults', 'dear_decode']);
  const rowsOf = (n) => fs.readFileSync(path.join(dir, `${n}.jsonl`), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(rowsOf('defaults').length, 3, 'one row a policy at the one point');
  // the world's decode cost reached the simulator: every step is dearer
  const dyn = (n) => rowsOf(n).find((r) => r.policy === 'dynamo').requests_per_s;
  assert.ok(dyn('dear_decode') < 0.9 * dyn('defaults'), `${dyn('dear_decode')} ${dyn('defaults')}`);
  assert.ok(sums[1].decode_share > 100 * sums[0].decode_share);
  assert.equal(rowsOf('dear_decode')[0].emulator_params.timing.decodeUsPerSeq, 4000);
  for (const s of sums) {
    assert.match(s.fit.within_all, /^\d+\/132$/);
    assert.equal(s.floors.points, 1);
    assert.ok(s.floors.headline['3w/24/c8'] > 0);
  }
  // the defaults' world fits the seed better than the one with dear decodes
  assert.ok(Number(sums[0].fit.within_all.split('/')[0]) > Number(sums[1].fit.within_all.split('/')[0]));
  assert.match(fs.readFileSync(path.join(dir, 'summary.md'), 'utf8'), /\| dear_decode \| 1\.00 \/ 0\.30 \|/);
  assert.equal(require('../sim/worlds').readWorlds(path.join(dir, 'worlds.jsonl')).length, 2, 'the list is left alone');
});

test("itl_slope.js: the engines' inter-token latency against their running requests shows a dear decode, not a free one", () => {
  const { line, slopes } = require('../sim/itl_slope');
  const { defaultParams } = require('../fidelity/fit');
  const exact = line([1, 2, 3, 4].map((r) => ({ running: r, itlMs: 10 + 2 * r })));
  assert.ok(Math.abs(exact.a_ms - 10) < 1e-9 && Math.abs(exact.b_ms - 2) < 1e-9);
  assert.equal(line([{ running: 2, itlMs: 5 }, { running: 2, itlMs: 6 }, { running: 2, itlMs: 7 }]), null,
    'no spread in the running count: no line');
  const share = (prm) => {
    const es = slopes(prm, [3, 8, 24], 1, 360).filter((e) => e);
    assert.equal(es.length, 3);
    return es.reduce((a, e) => a + e.share, 0) / es.length;
  };
  const free = share(defaultParams());
  const dear = share(Object.assign(defaultParams(), { decodeUsPerSeq: 4000 }));
  assert.ok(dear > free + 0.05, `${dear} against ${free}`);
});

test('auto_decode.js: ttft_decode=auto (the module\'s C learner) stays low where decoding is free and rises where it is dear', () => {
  const { autoDecode } = require('../sim/auto_decode');
  const { simWorld, defaultParams } = require('../fidelity/fit');
  const { simulate } = require('../sim/sim');
  const learn = (prm) => {
    const pol = autoDecode();
    simulate(Object.assign({ workers: 3, prefixes: 7, concurrency: 4, requests: 360, seed: 1 }, simWorld(prm)), pol);
    assert.ok(pol.weights.length >= 3, `${pol.weights}`);
    return pol.weights[pol.weights.length - 1];
  };
  const free = learn(defaultParams());
  const dear = learn(Object.assign(defaultParams(), { decodeUsPerSeq: 4000 }));
  assert.ok(free <= 450, `free ${free}`);
  assert.ok(dear > 2 * free, `dear ${dear} against ${free}`);
});

test('auto_decode.js: past the engines\' rate, requests that found no KV room are not learned from, so the weight does not climb', () => {
  const { autoDecode } = require('../sim/auto_decode');
  const { simWorld, defaultParams } = require('../fidelity/fit');
  const { simulate } = require('../sim/sim');
  const C = require('../sim/cpolicy');
  // 3 engines of 585 blocks, 24 types at 24 requests/s: more arrive than
  // they serve, and most requests wait for room
  const run = (pol) => simulate(Object.assign({ workers: 3, prefixes: 24, concurrency: 16, requests: 480,
    seed: 1, measureFrom: 96, rate: 24 }, simWorld(defaultParams())), pol);
  let queued = 0;
  let sent = 0;
  const auto = autoDecode();
  const counting = (view, q) => {
    const pick = auto(view, q);
    sent++;
    // what the learner is told: the policy's own verdict on the pick
    if (auto.lastQueued()) queued++;
    return pick;
  };
  counting.finished = auto.finished;
  const learned = run(counting);
  assert.ok(queued > sent / 2, `${queued} of ${sent} sent without room`);
  assert.ok(auto.weights.every((w) => w <= 450), `weights ${auto.weights}`);
  // the same requests learned from: the weight climbs, and fewer prompts hit
  const learnAll = C.learner();
  let weight = 0;
  let policy = C.ttftMetrics(50, 300);
  const all = (view, q) => policy(view, q);
  all.finished = (rec, q) => {
    const w = learnAll.ended(rec.engine, q.ids.length - rec.overlap * 16, rec.inflight, (rec.end - rec.sent) / 1000, false);
    if (w !== weight) { weight = w; policy = C.ttftMetrics(50, w); }
  };
  const climbed = run(all);
  assert.ok(weight > 1000, `learned from every request: ${weight}`);
  assert.ok(learned.cached_token_ratio > climbed.cached_token_ratio,
    `${learned.cached_token_ratio} against ${climbed.cached_token_ratio}`);
});
