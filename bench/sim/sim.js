'use strict';
// The policy simulator: W engines made of the emulator's own KvCache and
// Scheduler (bench/emulator), a closed loop of C clients sending the
// seed's workload (bench/loadgen/workload.js), and a routing policy given
// a view of the engines, all on a virtual clock. It answers "what would a
// policy do" in a fraction of a second per point, deterministically; the
// figures that count are kvbench's, through nginx and kvroute's C code.

const clock = require('./clock');
const { KvCache, noneHash, extendBlockHashes, hashKeyOf } = require('../emulator/kv_cache');
const { Scheduler, Request } = require('../emulator/scheduler');
const { rng, poissonArrivals, arrivalSeed, PREFIX_TOKENS, TAIL_TOKENS } = require('../loadgen/workload');
const { Gpu } = require('../emulator/gpu');
const { processClock } = require('../emulator/model_clock');
const { placeEngines, gpuSpec, GPU_SHARE, FRONTEND_US, EOS_TOKENS } = require('../emulator/options');
const { parseRange } = require('../emulator/eos');
const { summarise } = require('../loadgen/stats');
const { Worker, addActive, firstToken, removeActive } = require('../loadgen/dynamo');

const BS = 16;

// The seed workload as token ids (the simulator never tokenizes), made
// once per (prefix types, requests, seed): hashing is most of a point's time.
const workloads = new Map();
function workload(prefixes, count, seed, root) {
  const key = `${prefixes}/${count}/${seed}`;
  if (workloads.has(key)) return workloads.get(key);
  const r = rng(seed);
  const draw = (n) => Array.from({ length: n }, () => 1000 + Math.floor(r() * 50000));
  const heads = [];
  for (let p = 0; p < prefixes; p++) heads.push(draw(PREFIX_TOKENS));
  const requests = [];
  for (let k = 0; k < count; k++) {
    const prefixId = Math.floor(r() * prefixes);
    const ids = heads[prefixId].concat(draw(TAIL_TOKENS));
    const hashes = extendBlockHashes([], ids, ids.length, BS, root);
    requests.push({ prefixId, ids, hashes, firstKey: hashes[0].toString('hex'),
      blockKeys: hashes.map(hashKeyOf) });
  }
  if (workloads.size > 64) workloads.clear();
  workloads.set(key, requests);
  return requests;
}

// o: workers, prefixes, concurrency, requests, seed, maxTokens (16),
//    capacityBlocks (585), cpuBlocks (each engine's host tier, kv_cache.js
//    CpuTier; 0: none), timing (emulator timing overrides), gpus
//    (speeds; default a GPU of speed 1 per engine), placement (engines per
//    GPU, as the emulator's --placement), share (GPU_SHARE), frontendUs
//    (the emulator's --frontend-us), eosTokens (--eos-tokens as eos.js's range),
//    measureFrom (requests before this
//    index are not counted), limit (send only the first `limit` of the
//    workload's requests: a prefix of the same run, bench/sim/rollout.js),
//    workload (the requests to send instead of the seed's: workloadOf's
//    form);
//    policy(view, q) -> engine index (and, when the policy has it,
//    policy.finished(rec, q) as each request ends: what it was sent with,
//    sent and end times), where q.client
//    is the closed-loop client (0..C-1) that sends it; rate (requests a
//    second: open loop, Poisson arrivals drawn as kvbench --rate draws
//    them for run 0, q.client then the arrival's index mod concurrency)
function simulate(o, policy) {
  clock.reset();
  const root = noneHash(0);
  const cap = o.capacityBlocks || 585;
  const maxTokens = o.maxTokens || 16;
  const engines = [];
  const gpuSpeeds = o.gpus || [];
  const gpuOf = placeEngines(o.workers, gpuSpeeds, o.placement || 0);
  const gpus = new Map();
  const mclock = processClock(clock.now);
  for (let i = 0; i < o.workers; i++) {
    const cache = new KvCache({ numBlocks: cap, blockSize: BS, cpuBlocks: o.cpuBlocks || 0 });
    const g = gpuOf[i];
    if (!gpus.has(g)) {
      gpus.set(g, new Gpu(mclock, Object.assign(gpuSpec(gpuSpeeds.length ? gpuSpeeds[g] : 1),
        { share: o.share === undefined ? GPU_SHARE : o.share })));
    }
    const sched = new Scheduler(cache, { hashRoot: root, outputTokenId: () => 7, timing: o.timing,
      gpu: gpus.get(g), eosTokens: o.eosTokens === undefined ? parseRange(EOS_TOKENS) : o.eosTokens });
    engines.push({ index: i, cache, sched, inflight: 0, inflightTokens: 0, inflightUncached: 0,
      // Dynamo's own bookkeeping of what it routed (loadgen/dynamo.js)
      dyn: new Worker(i) });
  }

  const requests = o.workload || workloadOf(o);

  const view = {
    engines,
    rng: rng(o.seed * 7919 + 17),   // the policies' own draws
    blockSize: BS,
    capacity: cap,
    maxTokens,
    firstKeys: new Set(),   // first blocks of the prefixes seen so far
    picks: 0,
    // leading blocks of q cached on engine e (what kv mode would know)
    overlap: (e, q) => e.cache.lookup(q.hashes, q.ids.length).length,
    // blocks of q its host tier holds from block `from` on (kv mode's
    // offload tier index: what the connector's events said)
    hostRun: (e, q, from) => (e.cache.cpu ? e.cache.cpu.lookup(q.hashes, from, q.hashes.length) : 0),
    // prefixes seen so far whose first block engine e holds
    held: (e) => {
      let n = 0;
      for (const k of view.firstKeys) if (e.cache.cached.has(k)) n++;
      return n;
    },
  };

  const records = [];
  let next = 0;
  const frontendMs = (o.frontendUs === undefined ? FRONTEND_US : o.frontendUs) / 1000;
  const last = Math.min(requests.length, o.limit || requests.length);
  const issue = (client, arrivedAt) => {
    if (next >= last) return;
    const q = requests[next++];
    q.client = client;
    view.firstKeys.add(q.firstKey);
    const e = engines[policy(view, q)];
    view.picks++;
    const overlap = view.overlap(e, q);
    const uncached = q.ids.length - overlap * BS;
    const rec = { prefixId: q.prefixId, engine: e.index, sent: arrivedAt === undefined ? clock.now() : arrivedAt, ttft: null, end: null,
      cached: 0, waited: null, inflight: e.inflight, overlap,
      loads: engines.map((x) => x.inflight), pending: engines.map((x) => x.dyn.pendingPrefill),
      usage: Math.round(e.cache.usage() * 100) };
    records.push(rec);
    e.inflight++;
    e.inflightTokens += q.ids.length;
    e.inflightUncached += uncached;
    const dq = { tokens: q.ids.length, blockKeys: q.blockKeys };
    addActive(e.dyn, dq, uncached);
    const req = new Request(next, q.ids, maxTokens, {
      onToken: (id, i) => {
        if (i !== 0) return;
        firstToken(e.dyn, uncached);
        rec.ttft = clock.now() - rec.sent;
        rec.cached = Math.max(0, req.numCachedTokens);
      },
      onFinish: () => {
        e.inflight--;
        e.inflightTokens -= q.ids.length;
        e.inflightUncached -= uncached;
        removeActive(e.dyn, dq);
        rec.end = clock.now();
        if (policy.finished) policy.finished(rec, q);
        if (!o.rate) issue(client);
      },
    });
    req.blockHashes = q.hashes.slice();
    if (frontendMs > 0) setTimeout(() => e.sched.submit(req), frontendMs);
    else e.sched.submit(req);
  };
  if (o.rate) {
    poissonArrivals(last, o.rate, arrivalSeed(o.seed, 0))
      .forEach((t, i) => setTimeout(() => issue(i % o.concurrency, t), t));
  } else {
    for (let c = 0; c < o.concurrency; c++) issue(c);
  }
  clock.drain();
  if (o.trace) o.trace(records);
  const out = summary(records, o.measureFrom || 0, o);
  out.preemptions = engines.reduce((a, e) => a + e.sched.preemptionCount, 0);
  return out;
}

// kvbench's own summary (loadgen/stats.js) of the counted requests, the
// window from the first one sent to the last one finished as wall time
function summary(records, from, o) {
  const rs = records.slice(from);
  const prompt = PREFIX_TOKENS + TAIL_TOKENS;
  const start = rs.length ? Math.min(...rs.map((x) => x.sent)) : 0;
  const end = rs.length ? Math.max(...rs.map((x) => x.end)) : 0;
  const s = summarise(rs.map((x) => ({ ok: true, prefixId: x.prefixId, engine: x.engine,
    cachedTokens: x.cached, promptTokens: prompt, expectedPromptTokens: prompt, ttftMs: x.ttft })),
  end - start, { workers: o.workers, prefixes: o.prefixes, concurrency: o.concurrency,
    capacityTokens: (o.capacityBlocks || 585) * BS, promptTokens: prompt });
  const out = {};
  for (const k of ['workers', 'prefixes', 'concurrency', 'requests', 'request_hit_rate',
    'cached_token_ratio', 'ttft_p50_ms', 'ttft_p99_ms', 'requests_per_s', 'engines_per_prefix']) {
    out[k] = s[k];
  }
  return out;
}

// the run's requests as simulate() sends them (a rollout's futures are
// made from them)
const workloadOf = (o) => workload(o.prefixes, o.requests, o.seed, noneHash(0));

module.exports = { simulate, workloadOf, BLOCK_SIZE: BS };
