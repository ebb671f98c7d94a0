'use strict';
// The paged KV cache and the scheduler's use of it, checked against
// vLLM v1's rules as kv-events.md section 6 states them.

const test = require('node:test');
const assert = require('node:assert/strict');
const { KvCache, extendBlockHashes, noneHash } = require('../emulator/kv_cache');
const { Scheduler, Request } = require('../emulator/scheduler');

const ROOT = noneHash('test');

function seq(start, n) {
  return Array.from({ length: n }, (_, i) => start + i);
}

function hashesOf(tokens, bs) {
  return extendBlockHashes([], tokens, tokens.length, bs, ROOT);
}

// Allocate blocks for a whole prompt, cache its full blocks, as a request would.
function runPrompt(cache, tokens) {
  const bs = cache.blockSize;
  const hashes = hashesOf(tokens, bs);
  const hit = cache.lookup(hashes, tokens.length);
  cache.touch(hit);
  const blocks = hit.concat(cache.allocate(Math.ceil(tokens.length / bs) - hit.length));
  cache.cacheBlocks(blocks, hashes, tokens, hit.length, Math.floor(tokens.length / bs));
  return { blocks, hashes, hit };
}

test('hash chain: same block tokens under different prefixes hash differently', () => {
  const a = hashesOf([1, 2, 3, 4, 9, 9, 9, 9], 4);
  const b = hashesOf([5, 6, 7, 8, 9, 9, 9, 9], 4);
  assert.equal(a.length, 2);
  assert.notDeepEqual(a[1], b[1]);
  assert.deepEqual(hashesOf([1, 2, 3, 4, 7], 4)[0], a[0]);
  assert.equal(hashesOf([1, 2, 3], 4).length, 0, 'partial blocks are not hashed');
});

test('hit is the longest cached leading run of full blocks', () => {
  const cache = new KvCache({ numBlocks: 40, blockSize: 4 });
  const a = seq(100, 40);                       // 10 full blocks
  const r = runPrompt(cache, a);
  cache.freeBlocks(r.blocks);
  // shares the first 5 blocks (20 tokens), then diverges
  const b = a.slice(0, 20).concat(seq(900, 20));
  assert.equal(cache.lookup(hashesOf(b, 4), b.length).length, 5);
  // diverging inside block 3 (token 13): 3 full blocks match
  const c = a.slice();
  c[13] = 7;
  assert.equal(cache.lookup(hashesOf(c, 4), c.length).length, 3);
  // different first token: no hit
  const d = a.slice();
  d[0] = 1;
  assert.equal(cache.lookup(hashesOf(d, 4), d.length).length, 0);
});

test('hit is capped so the last prompt token is recomputed', () => {
  const cache = new KvCache({ numBlocks: 40, blockSize: 4 });
  const a = seq(1, 32);                         // exactly 8 blocks
  cache.freeBlocks(runPrompt(cache, a).blocks);
  // (32-1)/4 -> 7 blocks
  assert.equal(cache.lookup(hashesOf(a, 4), 32).length, 7);
  // 33 tokens: the 8 full blocks may all hit ((33-1)/4 = 8)
  const b = a.concat([99]);
  assert.equal(cache.lookup(hashesOf(b, 4), 33).length, 8);
});

test('free is tail first; unhashed blocks go to the head; eviction is lazy', () => {
  const events = [];
  const cache = new KvCache({ numBlocks: 10, blockSize: 4, onEvent: (e) => events.push(e) });
  const a = seq(1, 14);                         // blocks 0,1,2 full, 3 partial
  const r = runPrompt(cache, a);
  assert.deepEqual(r.blocks.map((b) => b.id), [0, 1, 2, 3]);
  assert.equal(events.length, 1);
  assert.equal(events[0].type, 'BlockStored');
  assert.equal(events[0].hashes.length, 3);
  assert.equal(events[0].parent, null);
  assert.deepEqual(events[0].tokenIds, seq(1, 12));
  events.length = 0;

  cache.freeBlocks(r.blocks);
  assert.equal(events.length, 0, 'freeing emits nothing');
  // partial block 3 at the head, then the untouched 4..9, then 2,1,0
  assert.deepEqual(cache.free.ids(), [3, 4, 5, 6, 7, 8, 9, 2, 1, 0]);
  // still a hit after free
  assert.equal(cache.lookup(r.hashes, a.length).length, 3);

  cache.allocate(7);                            // 3..9: no cached block popped
  assert.equal(events.length, 0, 'no BlockRemoved before a cached block is reused');
  cache.allocate(1);                            // block 2: chain tail evicted first
  assert.equal(events.length, 1);
  assert.equal(events[0].type, 'BlockRemoved');
  assert.deepEqual(events[0].hashes, [r.hashes[2]]);
  cache.allocate(2);
  assert.deepEqual(events.map((e) => e.hashes[0]), [r.hashes[2], r.hashes[1], r.hashes[0]]);
  assert.equal(cache.lookup(r.hashes, a.length).length, 0);
});

test('across requests eviction is LRU by free time', () => {
  const events = [];
  const cache = new KvCache({ numBlocks: 4, blockSize: 2, onEvent: (e) => events.push(e) });
  const a = runPrompt(cache, [1, 2, 3, 4]);
  const b = runPrompt(cache, [5, 6, 7, 8]);
  cache.freeBlocks(b.blocks);                   // b freed first -> evicted first
  cache.freeBlocks(a.blocks);
  events.length = 0;
  cache.allocate(4);
  assert.deepEqual(events.map((e) => e.hashes[0]),
    [b.hashes[1], b.hashes[0], a.hashes[1], a.hashes[0]]);
});

test('a hit touches blocks: removed from the free queue and refcounted', () => {
  const events = [];
  const cache = new KvCache({ numBlocks: 6, blockSize: 2, onEvent: (e) => events.push(e) });
  const p = [1, 2, 3, 4, 5];                    // 2 full blocks + partial
  const first = runPrompt(cache, p);
  cache.freeBlocks(first.blocks);
  // two concurrent users of the same prefix
  const u1 = runPrompt(cache, p);
  const u2 = runPrompt(cache, p);
  assert.equal(u1.hit.length, 2);
  assert.equal(u2.hit.length, 2);
  assert.equal(u1.hit[0], first.blocks[0]);
  assert.equal(first.blocks[0].refCnt, 2);
  assert.equal(first.blocks[0].inFreeQueue, false);
  // fill the rest of the cache: the touched blocks must not be evicted
  events.length = 0;
  cache.allocate(cache.numFree());
  assert.equal(events.filter((e) => e.type === 'BlockRemoved').length, 0);
  cache.freeBlocks(u1.blocks);
  assert.equal(first.blocks[0].refCnt, 1);
  assert.equal(first.blocks[0].inFreeQueue, false, 'still held by u2');
  cache.freeBlocks(u2.blocks);
  assert.equal(first.blocks[0].refCnt, 0);
  assert.equal(first.blocks[0].inFreeQueue, true);
  assert.throws(() => cache.freeBlocks(u2.blocks), /double free/);
});

test('no de-duplication: one hash may be stored twice and removed twice', () => {
  const events = [];
  const cache = new KvCache({ numBlocks: 4, blockSize: 2, onEvent: (e) => events.push(e) });
  const p = [1, 2, 3];
  const h = hashesOf(p, 2);
  // two requests miss at the same time and compute the same block
  const b1 = cache.allocate(2);
  const b2 = cache.allocate(2);
  cache.cacheBlocks(b1, h, p, 0, 1);
  cache.cacheBlocks(b2, h, p, 0, 1);
  assert.equal(events.filter((e) => e.type === 'BlockStored').length, 2);
  cache.freeBlocks(b1);
  cache.freeBlocks(b2);
  events.length = 0;
  cache.allocate(4);
  const removed = events.filter((e) => e.type === 'BlockRemoved');
  assert.equal(removed.length, 2);
  assert.deepEqual(removed[0].hashes[0], h[0]);
  assert.deepEqual(removed[1].hashes[0], h[0]);
});

test('reset clears everything only when no block is in use', () => {
  const events = [];
  const cache = new KvCache({ numBlocks: 4, blockSize: 2, onEvent: (e) => events.push(e) });
  const r = runPrompt(cache, [1, 2, 3, 4]);
  assert.equal(cache.reset(), false);
  cache.freeBlocks(r.blocks);
  assert.equal(cache.reset(), true);
  assert.equal(events[events.length - 1].type, 'AllBlocksCleared');
  assert.equal(cache.lookup(r.hashes, 4).length, 0);
});

// ---- scheduler ----

function runRequests(sched, specs) {
  return Promise.all(specs.map(([tokens, maxTokens]) => new Promise((resolve) => {
    const out = [];
    const req = new Request(0, tokens, maxTokens, {
      onToken: (id) => out.push(id),
      onFinish: (reason) => resolve({ req, out, reason }),
    });
    sched.submit(req);
  })));
}

const FAST = { timeScale: 1000, baseUs: 1000, gpuStepUs: 0, prefillUsPerToken: 1, decodeUsPerSeq: 10 };

test('scheduler: cached_tokens of a repeated prompt and BlockStored at scheduling time', async () => {
  const events = [];
  const cache = new KvCache({ numBlocks: 64, blockSize: 16, onEvent: (e) => events.push(e) });
  const sched = new Scheduler(cache, { timing: FAST, hashRoot: ROOT });
  const prompt = seq(1000, 100);                // 6 full blocks + 4 tokens
  const [first] = await runRequests(sched, [[prompt, 3]]);
  assert.equal(first.req.numCachedTokens, 0);
  assert.equal(first.out.length, 3);
  const [second] = await runRequests(sched, [[prompt, 3]]);
  assert.equal(second.req.numCachedTokens, Math.floor(99 / 16) * 16);
  // a prompt of exactly 6 blocks recomputes its last block
  const exact = seq(1000, 96);
  const [third] = await runRequests(sched, [[exact, 1]]);
  assert.equal(third.req.numCachedTokens, 80);
  sched.stop();
});

test('scheduler: two identical prompts in one step share blocks cached at scheduling', async () => {
  const cache = new KvCache({ numBlocks: 64, blockSize: 16 });
  const sched = new Scheduler(cache, { timing: FAST, hashRoot: ROOT });
  const prompt = seq(5, 70);
  const [a, b] = await runRequests(sched, [[prompt, 2], [prompt, 2]]);
  assert.equal(a.req.numCachedTokens, 0);
  assert.equal(b.req.numCachedTokens, 64);
  sched.stop();
});

test('scheduler: decode blocks are stored with the previous block as parent', async () => {
  const events = [];
  const cache = new KvCache({ numBlocks: 64, blockSize: 4, onEvent: (e) => events.push(e) });
  const sched = new Scheduler(cache, { timing: FAST, hashRoot: ROOT, outputTokenId: (i) => 500 + i });
  const [r] = await runRequests(sched, [[seq(1, 6), 7]]);   // 6 + 7 = 13 tokens
  const stored = events.filter((e) => e.type === 'BlockStored');
  // prompt: block 0 at scheduling; decode completes block 1 (tokens 4..7)
  // and block 2 (tokens 8..11); the last generated token's KV is never
  // computed, so block 3 stays partial
  assert.deepEqual(stored.map((e) => e.hashes.length), [1, 1, 1]);
  const all = seq(1, 6).concat(seq(500, 7));
  const h = hashesOf(all, 4);
  assert.deepEqual(stored[1].parent, h[0]);
  assert.deepEqual(stored[1].tokenIds, all.slice(4, 8));
  assert.deepEqual(stored[2].hashes[0], h[2]);
  assert.equal(r.out.length, 7);
  sched.stop();
});

test('scheduler: a full cache preempts the newest request, which recomputes and still finishes', async () => {
  const cache = new KvCache({ numBlocks: 10, blockSize: 4 });
  const sched = new Scheduler(cache, { timing: FAST, hashRoot: ROOT });
  // each prompt takes 5 blocks (vLLM V1 admits on the prompt's blocks) and
  // grows to 6 while decoding: two are admitted, then the second is
  // preempted so the first can grow
  const specs = [0, 1, 2, 3].map((k) => [seq(100 * (k + 1), 20), 4]);
  const outs = specs.map(() => []);
  let maxRunning = 0;
  const origSchedule = sched.schedule.bind(sched);
  sched.schedule = () => {
    const p = origSchedule();
    maxRunning = Math.max(maxRunning, sched.running.length);
    return p;
  };
  const reqs = [];
  await Promise.all(specs.map(([t, m], k) => new Promise((resolve) => {
    const r = new Request(k, t, m, { onToken: (id, i) => outs[k].push(i), onFinish: () => resolve() });
    reqs.push(r);
    sched.submit(r);
  })));
  assert.equal(maxRunning, 2, 'two prompts admitted at once');
  assert.ok(sched.preemptionCount > 0, 'the newest was preempted');
  // every request's tokens came once each, in order, despite recomputation
  for (const o of outs) assert.deepEqual(o, [0, 1, 2, 3]);
  assert.equal(cache.numFree(), 10, 'every block returned');
  sched.stop();
});

test('scheduler: a request larger than the whole cache is refused', () => {
  const cache = new KvCache({ numBlocks: 4, blockSize: 4 });
  const sched = new Scheduler(cache, { timing: FAST, hashRoot: ROOT });
  assert.throws(() => sched.submit(new Request(0, seq(1, 15), 2, {})), /more blocks than the whole cache/);
  sched.stop();
});

test('scheduler: step duration follows the timing model', () => {
  const cache = new KvCache({ numBlocks: 4, blockSize: 4 });
  const sched = new Scheduler(cache, {
    timing: { baseUs: 100, gpuStepUs: 30, prefillUsPerToken: 2, decodeUsPerSeq: 7 }, hashRoot: ROOT });
  assert.deepEqual(sched.stepPhasesUs(50, 3), { cpu: 100, gpu: 30 + 2 * 50 + 7 * 3 });
  assert.equal(sched.stepDurationUs(50, 3), 100 + 30 + 2 * 50 + 7 * 3);
});

test('scheduler: long prompts are prefilled in chunks of the token budget', async () => {
  const cache = new KvCache({ numBlocks: 64, blockSize: 16 });
  const sched = new Scheduler(cache, {
    timing: Object.assign({}, FAST, { maxBatchedTokens: 100 }), hashRoot: ROOT });
  const [r] = await runRequests(sched, [[seq(1, 250), 2]]);
  // 250 tokens at 100 per step: 3 prefill steps, then 1 decode step
  assert.equal(sched.stepCount, 4);
  assert.equal(r.out.length, 2);
  sched.stop();
});

// ---- the offload tier (CpuTier) ----

test('cpu tier: written through, hashes alone (vLLM connector form), LRU removals', () => {
  const events = [];
  const cache = new KvCache({ numBlocks: 16, blockSize: 4, cpuBlocks: 4,
    onEvent: (e) => events.push(e) });
  const p = runPrompt(cache, seq(1, 12));       // 3 blocks
  const cpu = events.filter((e) => e.medium === 'CPU');
  assert.equal(cpu.length, 1);
  assert.equal(cpu[0].type, 'BlockStored');
  assert.deepEqual(cpu[0].hashes, p.hashes);
  assert.deepEqual(cpu[0].tokenIds, [], 'no token ids');
  assert.equal(cpu[0].parent, null, 'no parent');
  assert.equal(cpu[0].blockSize, 4);
  events.length = 0;
  runPrompt(cache, seq(1, 12).concat(seq(50, 8)));  // 2 more: 5 > 4
  const more = events.filter((e) => e.medium === 'CPU');
  assert.equal(more.length, 2);
  assert.equal(more[0].hashes.length, 2, 'held blocks are not stored again');
  assert.equal(more[1].type, 'BlockRemoved');
  assert.equal(more[1].hashes.length, 1);
  assert.equal(cache.cpu.lookup(p.hashes, 0, 3), 0, 'the LRU block went first');
  assert.equal(cache.cpu.lookup(p.hashes, 1, 3), 2);
});

test('cpu tier: the tokens form (SGLang) carries token ids and parent', () => {
  const events = [];
  const cache = new KvCache({ numBlocks: 16, blockSize: 4, cpuBlocks: 8,
    cpuMedium: 'CPU_PINNED', cpuForm: 'tokens', onEvent: (e) => events.push(e) });
  const p = runPrompt(cache, seq(1, 8));
  runPrompt(cache, seq(1, 12));
  const cpu = events.filter((e) => e.medium === 'CPU_PINNED');
  assert.equal(cpu.length, 2);
  assert.deepEqual(cpu[0].tokenIds, seq(1, 8));
  assert.deepEqual(cpu[1].parent, p.hashes[1]);
  assert.deepEqual(cpu[1].tokenIds, seq(9, 4));
});

test('cpu tier in groups: a tier block of 2 GPU blocks, named by its last, loaded whole', () => {
  const events = [];
  const cache = new KvCache({ numBlocks: 16, blockSize: 4, cpuBlocks: 4, cpuGroup: 2,
    onEvent: (e) => events.push(e) });
  const p = runPrompt(cache, seq(1, 12));       // 3 GPU blocks: 1 whole group
  const cpu = events.filter((e) => e.medium === 'CPU');
  assert.equal(cpu.length, 1);
  assert.deepEqual(cpu[0].hashes, [p.hashes[1]], 'the group is named by its last block');
  assert.equal(cpu[0].blockSize, 8, 'block_size: 2 GPU blocks');
  assert.deepEqual(cpu[0].tokenIds, []);
  assert.equal(cache.cpu.lookup(p.hashes, 0, 3), 2, 'group 0 loads whole');
  assert.equal(cache.cpu.lookup(p.hashes, 1, 3), 0, 'from block 1: less than a group, none');
  assert.equal(cache.cpu.lookup(p.hashes, 0, 1), 0, 'a group past max is not loaded');
  events.length = 0;
  const q = runPrompt(cache, seq(1, 12).concat(seq(50, 8)));   // 5 blocks: groups 0, 1
  const more = events.filter((e) => e.medium === 'CPU');
  assert.deepEqual(more[0].hashes, [q.hashes[3]], 'group 0 held: only group 1 stored');
  assert.equal(cache.cpu.lookup(q.hashes, 0, 5), 4);
  assert.equal(cache.cpu.lookup(q.hashes, 2, 5), 2);
  runPrompt(cache, seq(900, 8));                 // 1 more group: 3 > 4 / 2
  const removed = events.filter((e) => e.medium === 'CPU' && e.type === 'BlockRemoved');
  assert.deepEqual(removed[0].hashes, [q.hashes[1]], 'the LRU group goes, by its name');
  assert.throws(() => new KvCache({ numBlocks: 4, blockSize: 4, cpuBlocks: 4, cpuGroup: 2,
    cpuForm: 'tokens' }), /groups need form hashes/);
});

// a prompt whose blocks the GPU evicted, the host tier kept
async function evictedThenAgain(cpuBlocks) {
  const cache = new KvCache({ numBlocks: 14, blockSize: 16, cpuBlocks });
  const sched = new Scheduler(cache, { timing: FAST, hashRoot: ROOT });
  const plans = [];
  const schedule = sched.schedule.bind(sched);
  sched.schedule = () => {
    const plan = schedule();
    plans.push(plan);
    return plan;
  };
  const prompt = seq(1000, 100);                // 6 full blocks + 4 tokens
  await runRequests(sched, [[prompt, 1]]);
  await runRequests(sched, [[seq(5000, 220), 1]]);  // 14 blocks: evicts it
  assert.equal(cache.lookup(hashesOf(prompt, 16), 100).length, 0,
    'the GPU holds none of it');
  plans.length = 0;
  const [again] = await runRequests(sched, [[prompt, 1]]);
  sched.stop();
  return { again, plan: plans[0] };
}

test('scheduler: a hit in the host tier is loaded back, not computed, and cached', async () => {
  const { again, plan } = await evictedThenAgain(64);
  assert.equal(again.req.numCachedTokens, 96,
    'cached_tokens counts the blocks loaded back, as vLLM counts external hits');
  assert.equal(plan.loadTokens, 96);
  assert.equal(plan.prefillTokens, 4, 'only the rest is prefilled');
  const none = await evictedThenAgain(0);
  assert.equal(none.again.req.numCachedTokens, 0, 'without the tier: a miss');
  assert.equal(none.plan.prefillTokens, 100);
  assert.equal(none.plan.loadTokens, 0);
});

test('scheduler: loading back costs load_us_per_token, less than recomputing', () => {
  const cache = new KvCache({ numBlocks: 8, blockSize: 16 });
  const sched = new Scheduler(cache, { hashRoot: ROOT });
  const load = sched.stepWorkUs(0, 0, 96);
  const compute = sched.stepWorkUs(96, 0, 0);
  assert.ok(load.load > 0 && load.load < compute.prefill);
  sched.stop();
});
