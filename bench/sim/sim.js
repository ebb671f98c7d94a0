'use strict';
// The policy simulator: W engines made of the emulator's own KvCache and
// Scheduler (bench/emulator), a closed loop of C clients sending the
// seed's workload (bench/loadgen/workload.js), and a routing policy given
// a view of the engines, all on a virtual clock. It answers "what would a
// policy do" in a fraction of a second per point, deterministically; the
// figures that count are kvbench's, through nginx and kvroute's C code.

const clock = require('./clock');
const { KvCache, noneHash, extendBlockHashes } = require('../emulator/kv_cache');
const { Scheduler, Request } = require('../emulator/scheduler');
const { rng, PREFIX_TOKENS, TAIL_TOKENS } = require('../loadgen/workload');
const { Gpu, runStepsOn } = require('./gpu');
const { percentile } = require('../loadgen/stats');

const BS = 16;

// o: workers, prefixes, concurrency, requests, seed, maxTokens (16),
//    capacityBlocks (585), timing (emulator timing overrides), gpuPairs
//    (engines 2g and 2g+1 share a GPU), share (1), measureFrom (requests
//    before this index are not counted); policy(view, q) -> engine index
function simulate(o, policy) {
  clock.reset();
  const root = noneHash(0);
  const cap = o.capacityBlocks || 585;
  const maxTokens = o.maxTokens || 16;
  const engines = [];
  let gpu = null;
  for (let i = 0; i < o.workers; i++) {
    const cache = new KvCache({ numBlocks: cap, blockSize: BS });
    const sched = new Scheduler(cache, { hashRoot: root, outputTokenId: () => 7, timing: o.timing });
    if (o.gpuPairs) {
      if (i % 2 === 0) gpu = new Gpu(clock.now, o.share === undefined ? 1 : o.share);
      runStepsOn(sched, gpu);
    }
    engines.push({ index: i, cache, sched, inflight: 0, inflightTokens: 0, inflightUncached: 0 });
  }

  // the workload: token ids only (the simulator never tokenizes)
  const r = rng(o.seed);
  const draw = (n) => Array.from({ length: n }, () => 1000 + Math.floor(r() * 50000));
  const prefixes = [];
  for (let p = 0; p < o.prefixes; p++) prefixes.push(draw(PREFIX_TOKENS));
  const requests = [];
  for (let k = 0; k < o.requests; k++) {
    const prefixId = Math.floor(r() * o.prefixes);
    const ids = prefixes[prefixId].concat(draw(TAIL_TOKENS));
    const hashes = extendBlockHashes([], ids, ids.length, BS, root);
    requests.push({ prefixId, ids, hashes, firstKey: hashes[0].toString('hex') });
  }

  const view = {
    engines,
    blockSize: BS,
    capacity: cap,
    maxTokens,
    firstKeys: new Set(),   // first blocks of the prefixes seen so far
    picks: 0,
    // leading blocks of q cached on engine e (what kv mode would know)
    overlap: (e, q) => e.cache.lookup(q.hashes, q.ids.length).length,
    // prefixes seen so far whose first block engine e holds
    held: (e) => {
      let n = 0;
      for (const k of view.firstKeys) if (e.cache.cached.has(k)) n++;
      return n;
    },
  };

  const records = [];
  let next = 0;
  const issue = () => {
    if (next >= requests.length) return;
    const q = requests[next++];
    view.firstKeys.add(q.firstKey);
    const e = engines[policy(view, q)];
    view.picks++;
    const overlap = view.overlap(e, q);
    const uncached = q.ids.length - overlap * BS;
    const rec = { prefixId: q.prefixId, engine: e.index, sent: clock.now(), ttft: null, end: null,
      cached: 0, waited: null };
    records.push(rec);
    e.inflight++;
    e.inflightTokens += q.ids.length;
    e.inflightUncached += uncached;
    const req = new Request(next, q.ids, maxTokens, {
      onToken: (id, i) => {
        if (i !== 0) return;
        rec.ttft = clock.now() - rec.sent;
        rec.cached = Math.max(0, req.numCachedTokens);
      },
      onFinish: () => {
        e.inflight--;
        e.inflightTokens -= q.ids.length;
        e.inflightUncached -= uncached;
        rec.end = clock.now();
        issue();
      },
    });
    req.blockHashes = q.hashes.slice();
    e.sched.submit(req);
  };
  for (let c = 0; c < o.concurrency; c++) issue();
  clock.drain();
  return summary(records, o.measureFrom || 0, o);
}

function summary(records, from, o) {
  const rs = records.slice(from);
  const prompt = PREFIX_TOKENS + TAIL_TOKENS;
  const ttfts = rs.map((x) => x.ttft);
  const start = rs.length ? Math.min(...rs.map((x) => x.sent)) : 0;
  const end = rs.length ? Math.max(...rs.map((x) => x.end)) : 0;
  const perPrefix = new Map();
  for (const x of rs) {
    if (!perPrefix.has(x.prefixId)) perPrefix.set(x.prefixId, new Set());
    perPrefix.get(x.prefixId).add(x.engine);
  }
  let spread = 0;
  for (const s of perPrefix.values()) spread += s.size;
  const round = (x, d) => Math.round(x * 10 ** d) / 10 ** d;
  return {
    workers: o.workers,
    prefixes: o.prefixes,
    concurrency: o.concurrency,
    requests: rs.length,
    request_hit_rate: round(rs.filter((x) => x.cached > 0).length / rs.length, 4),
    cached_token_ratio: round(rs.reduce((a, x) => a + x.cached, 0) / (rs.length * prompt), 4),
    ttft_p50_ms: round(percentile(ttfts, 50), 1),
    ttft_p99_ms: round(percentile(ttfts, 99), 1),
    requests_per_s: round(rs.length / ((end - start) / 1000), 2),
    engines_per_prefix: round(spread / perPrefix.size, 2),
  };
}

module.exports = { simulate };
