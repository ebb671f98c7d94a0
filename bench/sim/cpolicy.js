'use strict';
// The module's own policy (src/route/kvr_policy.c) in the simulator: built
// to WebAssembly by `make policy-wasm` (mk/wasm.mk) and called through the
// flat form of bench/sim/c/kvr_policy_flat.c, so the simulator and nginx
// run one implementation. `ttftC` is policy=ttft fed what the module
// would see: the pending prefill until a first token, the requests in
// flight, the distinct blocks they pin (the simulator's own Dynamo-style
// bookkeeping) and their output, the prefixes an engine holds.
const fs = require('node:fs');
const path = require('node:path');

const WASM = process.env.KVR_POLICY_WASM
  || path.join(__dirname, '..', '..', 'build', 'kvr_policy.wasm');

const POLICY = { kvroute: 0, dynamo: 1, cost: 2, ttft: 3 };
const HEAD = 22;
const CAND = 15;
const MAX = 64;

let exportsOf = null;

function load() {
  if (exportsOf) return exportsOf;
  if (!fs.existsSync(WASM)) throw new Error(`${WASM} missing: run make policy-wasm`);
  const mod = new WebAssembly.Module(fs.readFileSync(WASM));
  exportsOf = new WebAssembly.Instance(mod, {}).exports;
  return exportsOf;
}

// flat: Float64Array(HEAD + n * CAND); returns { pick, why, queued (the
// server picked had no KV room for the request: kvr_policy_waits) }
function pickFlat(flat, n) {
  if (n < 1 || n > MAX || flat.length < HEAD + n * CAND) throw new Error('bad flat input');
  const e = load();
  new Float64Array(e.memory.buffer, e.kvr_flat_buffer(), HEAD + n * CAND).set(flat.subarray(0, HEAD + n * CAND));
  const r = e.kvr_flat_pick(0, n);
  return { pick: r >> 3, why: r & 7, queued: e.kvr_flat_queued() === 1 };
}

// conf: {policy (name), blockSize, overlapWeight, balanceAbs, balanceRel,
// spread, corun, evict, ttftDecode, ttftEvict, ttftWait, hostWeight,
// diskWeight (Dynamo's 0.75, 0.25), ttftOwn (0: not weighed)}; demand: {blocks, tokens, firstBlock:
// [hi, lo], share, random: [hi, lo], outBlocks}; cands: [{overlap,
// inflight, inflightTokens, inflightPrefill, id: [hi, lo], weight,
// cachedBlocks, capacity, prefixes, pinned, pinnedOwn, overlapHost,
// overlapDisk (the offload tiers' blocks after the GPU overlap), speed}]
function flatten(conf, demand, cands) {
  const f = new Float64Array(HEAD + cands.length * CAND);
  f.set([POLICY[conf.policy], conf.blockSize || 16, conf.overlapWeight ?? 1, conf.balanceAbs ?? 4,
    conf.balanceRel ?? 1.5, conf.spread ?? 1, conf.corun ?? 4096, conf.evict ?? 4,
    conf.ttftDecode ?? 1200, conf.ttftEvict ?? 2, conf.ttftWait ?? 40000]);
  const fb = demand.firstBlock || [0, 0];
  const rnd = demand.random || [0, 0];
  f.set([demand.blocks, demand.tokens, fb[0], fb[1], demand.share || 0, rnd[0], rnd[1],
    demand.outBlocks || 0], 11);
  f.set([conf.hostWeight ?? 0.75, conf.diskWeight ?? 0.25, conf.ttftOwn ?? 0], 19);
  cands.forEach((c, i) => {
    f.set([c.overlap, c.inflight, c.inflightTokens || 0, c.inflightPrefill || 0, c.id[0], c.id[1],
      c.weight || 1, c.cachedBlocks || 0, c.capacity || 0, c.prefixes || 0, c.pinned || 0,
      c.pinnedOwn || 0, c.overlapHost || 0, c.overlapDisk || 0, c.speed || 1], HEAD + i * CAND);
  });
  return f;
}

// KVR_POLICY_RECORD=file: every call appended as a line, "n flat... pick"
// (bench/test/policy_c.test.js replays them through the native CLI)
function recorder() {
  const file = process.env.KVR_POLICY_RECORD;
  if (!file) return null;
  return (flat, n, pick) => fs.appendFileSync(file, `${n} ${Array.from(flat).join(' ')} ${pick}\n`);
}

// The engines' step speeds as a frontend learns them from their /metrics
// (vllm:inter_token_latency_seconds' _sum and _count), scraped every
// intervalMs of model time: src/route/kvr_engine_load.c's
// kvr_engine_load_itl() and kvr_engine_load_speeds(), restated on the
// simulator's engines. Returns each engine's speed against the fastest.
const ITL_MIN_TOKENS = 8;
function itlSpeeds(view, intervalMs) {
  const clock = require('./clock');
  if (!view.itlState) {
    view.itlState = { at: -Infinity, per: view.engines.map(() => ({ sumUs: 0, count: 0, itlUs: 0 })) };
  }
  const st = view.itlState;
  if (clock.now() - st.at >= intervalMs) {
    st.at = clock.now();
    view.engines.forEach((e, i) => itlUpdate(st.per[i], Math.floor(e.sched.itl.sumMs * 1000), e.sched.itl.count));
  }
  let fastest = 0;
  for (const p of st.per) if (p.itlUs > 0 && (fastest === 0 || p.itlUs < fastest)) fastest = p.itlUs;
  return st.per.map((p) => (p.itlUs > 0 ? Math.max(0.05, fastest / p.itlUs) : 1));
}

// one scrape's cumulative sum (µs) and count into the smoothed mean
function itlUpdate(p, sumUs, count) {
  // the first figures, or the engine restarted: only the base
  if (count < p.count || sumUs < p.sumUs || (p.count === 0 && p.itlUs === 0)) {
    p.sumUs = sumUs;
    p.count = count;
    return;
  }
  const dc = count - p.count;
  if (dc < ITL_MIN_TOKENS) return;            // too few tokens: wait
  const mean = Math.min(1e9, (sumUs - p.sumUs) / dc);
  p.itlUs = Math.max(1, Math.floor((p.itlUs ? (p.itlUs + mean) / 2 : mean) + 0.5));
  p.sumUs = sumUs;
  p.count = count;
}

// ttft_decode=auto's learner (src/route/kvr_inflight_cost.c) in the same
// WebAssembly, one of KVR_FLAT_LEARNERS slots taken in turn (a simulated
// frontend at a time needs one): ended(engine, computed prompt tokens,
// in flight when sent, seconds, queued: no KV room there when sent)
// returns the weight in use after it, 0 until the first fit
const LEARNERS = 8;
let nextLearner = 0;
function learner() {
  const e = load();
  const k = nextLearner++ % LEARNERS;
  if (e.kvr_flat_learn_init(k) !== 0) throw new Error('no learner');
  return {
    ended: (engine, computed, inflight, seconds, queued) =>
      e.kvr_flat_learn_ended(k, engine, computed, inflight, seconds, queued ? 1 : 0),
    learned: () => e.kvr_flat_learn_learned(k),
    fits: () => e.kvr_flat_learn_fits(k),
  };
}

// policy=ttft on the simulator's view; hostWeight: the host tier's blocks
// after the GPU overlap (view.hostRun), 0 to ignore the tier; speedMs > 0:
// the engines' speeds learned from their inter-token latency scraped every
// speedMs. After each pick, .queued says whether the server had no KV
// room for the request (what ttft_decode=auto's learner is told).
const ttftC = (decode = 1200, evict = 2, wait = 40000, hostWeight = 0.75, speedMs = 0, own = 0) => {
  const f = (view, q) => {
    const record = ttftC.record === undefined ? (ttftC.record = recorder()) : ttftC.record;
    const es = view.engines;
    const bs = view.blockSize;
    const out = Math.ceil(view.maxTokens / bs);
    const overlaps = es.map((e) => view.overlap(e, q));
    const longest = Math.max(...overlaps);
    const speeds = speedMs > 0 ? itlSpeeds(view, speedMs) : null;
    const cands = es.map((e) => {
      let own = 0;
      for (const k of q.blockKeys) if (e.dyn.activeBlocks.has(k)) own++;
      return {
        overlap: overlaps[e.index], inflight: e.inflight, inflightTokens: e.inflightTokens,
        inflightPrefill: e.dyn.pendingPrefill, id: [e.index + 1, ((e.index + 1) * 2654435761) >>> 0],
        weight: 1, capacity: view.capacity,
        // the module counts prefixes only where the prompt's longest is not
        prefixes: longest && overlaps[e.index] === longest ? 0 : view.held(e),
        pinned: e.dyn.activeBlocks.size + e.inflight * out, pinnedOwn: own,
        overlapHost: hostWeight > 0 && view.hostRun ? view.hostRun(e, q, overlaps[e.index]) : 0,
        speed: speeds ? speeds[e.index] : 1,
      };
    });
    const demand = { blocks: q.blockKeys.length, tokens: q.ids.length, outBlocks: out,
      random: [view.picks >>> 0, (view.picks * 2246822519) >>> 0] };
    const flat = flatten({ policy: 'ttft', blockSize: bs, ttftDecode: decode, ttftEvict: evict, ttftWait: wait,
      hostWeight, ttftOwn: own }, demand, cands);
    const { pick, queued } = pickFlat(flat, es.length);
    if (record) record(flat, es.length, pick);
    f.queued = queued;
    return pick;
  };
  return f;
};

// policy=ttft as `metrics=on ttft_decode=300` configures it in the module
// (its speeds scraped every 500 ms, ttft_own 50: check_params in
// ngx_http_kvroute_module.c; 300 was metrics=on's default from 2026-12-05
// to 2026-12-06, 600 before, and the learned weight since: auto_decode.js);
// own and decode to try other values
const ttftMetrics = (own = 50, decode = 300) => ttftC(decode, 2, 40000, 0.75, 500, own);

// kvroute's policy with metrics=on at ttft_own / ttft_decode (own left
// out: the module's default; decode left out: 300, named in the line, as
// the module's default is learned since 2026-12-06), with the kvroute
// line it stands for (the simulator's one fleet, 585 blocks): result rows
// name the configuration from the same pair the simulator ran
function metricsPolicy(own, decode) {
  const set = (own === undefined ? '' : ` ttft_own=${own}`) + ` ttft_decode=${decode === undefined ? 300 : decode}`;
  return { make: () => ttftMetrics(own, decode), kvroute: `kvroute mode=kv metrics=on${set} capacity=585` };
}

// the scripts' --own N[:D] (ttft_own N, ttft_decode D): its name in the
// simulator's rows, its maker and its kvroute line
function ttftSpec(spec) {
  const [own, decode] = spec.split(':').map(Number);
  return Object.assign({ name: `kvroute ttft+speed own=${spec}` }, metricsPolicy(own, decode));
}

module.exports = { pickFlat, flatten, learner, ttftC, ttftMetrics, metricsPolicy, ttftSpec, itlUpdate, POLICY, HEAD, CAND, MAX };
