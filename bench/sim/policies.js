'use strict';
const { pickDynamo, mix } = require('../loadgen/dynamo');
// Routing policies for the simulator, each a function (view, q) -> engine
// index. They see what kvroute in kv mode would see: each engine's cached
// overlap with the prompt and its requests in flight. `kvroute` and
// `dynamo` restate, in a few lines, the decision rules of src/route/kvr_policy.c
// (without kvroute's spreading of hot prefixes, which a uniform workload
// does not trigger); the others are references.


const roundRobin = () => (view) => view.picks % view.engines.length;

// the seed's baseline, a Kubernetes Service: kube-proxy picks an engine at
// random for each connection, and each closed-loop client keeps its one
// keep-alive connection for the whole run
const randomPerConnection = () => {
  const chosen = new Map();
  return (view, q) => {
    if (!chosen.has(q.client)) chosen.set(q.client, Math.floor(view.rng() * view.engines.length));
    return chosen.get(q.client);
  };
};

const random = () => (view) => Math.floor(view.rng() * view.engines.length);

// every prefix type pinned to one engine: the most hits a router can have
// when prefixes do not fit twice, whatever the load
const partition = () => (view, q) => q.prefixId % view.engines.length;

// NVIDIA Dynamo's default cost: overlap_weight x prefill blocks + decode blocks
const dynamo = (overlapWeight = 1) => (view, q) => {
  const bs = view.blockSize;
  const blocks = Math.ceil(q.ids.length / bs);
  let best = 0;
  let bestCost = Infinity;
  let bestTie = 0;
  for (const e of view.engines) {
    const overlap = view.overlap(e, q);
    const prefill = (e.inflightUncached + q.ids.length - overlap * bs) / bs;
    const decode = e.inflightTokens / bs + (blocks - overlap);
    const cost = overlapWeight * prefill + decode;
    const tie = mix(e.index, view.picks);
    if (cost < bestCost || (cost === bestCost && tie < bestTie)) {
      best = e.index;
      bestCost = cost;
      bestTie = tie;
    }
  }
  return best;
};

// NVIDIA Dynamo's router as it runs (loadgen/dynamo.js): its own
// bookkeeping of active blocks (deduplicated) and pending prefill, and the
// overlap its KV-event index would give (the engine's cached leading
// blocks)
const dynamoExact = () => (view, q) => {
  const dq = { tokens: q.ids.length, blockKeys: q.blockKeys };
  const overlap = (w) => {
    const e = view.engines[w.index];
    let n = 0;
    while (n < q.hashes.length && e.cache.cached.has(q.blockKeys[n])) n++;
    return n;
  };
  return pickDynamo(view.engines.map((e) => e.dyn), dq, overlap, view.blockSize, view.picks);
};

// kvroute's rule: the least loaded engine holding the longest prefix, or
// for a prefix nobody holds the engine holding the fewest prefixes; kept
// unless it is busier than the least loaded by more than balanceAbs
// requests and by more than balanceRel times, then the least loaded
// (longest overlap first) takes it
const kvroute = (balanceAbs = 4, balanceRel = 1.5) => (view, q) => {
  const es = view.engines;
  const overlaps = es.map((e) => view.overlap(e, q));
  const longest = Math.max(...overlaps);
  const minLoad = Math.min(...es.map((e) => e.inflight));
  let best = -1;
  if (longest > 0) {
    for (const e of es) {
      if (overlaps[e.index] === longest && (best < 0 || e.inflight < es[best].inflight)) best = e.index;
    }
  } else {
    let fewest = Infinity;
    for (const e of es) {
      const held = view.held(e);
      if (held < fewest || (held === fewest && e.inflight < es[best].inflight)) {
        fewest = held;
        best = e.index;
      }
    }
  }
  const load = es[best].inflight;
  if (load <= minLoad + balanceAbs || load <= minLoad * balanceRel) return best;
  let least = -1;
  for (const e of es) {
    if (e.inflight === minLoad && (least < 0 || overlaps[e.index] > overlaps[least])) least = e.index;
  }
  return least;
};

// An estimate of what a choice costs everyone, in ms of request time,
// with the emulator's timing as the model: the requests already running
// there are slowed by one more decoding sequence while they overlap, this
// one by theirs, the prefill stalls them all, and a miss on an engine
// whose cache is full of other prefixes evicts one, which costs another
// miss later (weighted by evictWeight).
const cost = (evictWeight = 2, timing = {}) => (view, q) => {
  const decodeMs = (timing.decodeUsPerSeq || 10000) / 1000;
  const prefillMs = (timing.prefillUsPerToken || 38) / 1000;
  const es = view.engines;
  const meanLoad = es.reduce((a, e) => a + e.inflight, 0) / es.length;
  const prefixBlocks = Math.floor(2032 / view.blockSize);
  const blocks = Math.ceil(q.ids.length / view.blockSize);
  let best = 0;
  let bestCost = Infinity;
  for (const e of es) {
    const overlap = view.overlap(e, q);
    const uncached = q.ids.length - overlap * view.blockSize;
    const k = e.inflight;
    const overlapSteps = Math.min(view.maxTokens, view.maxTokens / 2);
    let c = 2 * k * overlapSteps * decodeMs + prefillMs * (uncached * (1 + k) + e.inflightUncached);
    if (overlap < prefixBlocks && (view.held(e) + 1) * blocks > view.capacity) {
      c += evictWeight * prefillMs * prefixBlocks * view.blockSize * (1 + meanLoad);
    }
    if (c < bestCost) {
      bestCost = c;
      best = e.index;
    }
  }
  return best;
};

module.exports = {
  randomPerConnection,
  dynamoExact,
  random, roundRobin, partition, dynamo, kvroute, cost };

// The cost policy as src/route/kvr_policy.c computes it (policy=cost), in
// prompt tokens of prefill: a server's cost is corun tokens for each
// request in flight there, plus the prefill this request and those in
// flight still need, each request in flight waiting on this one's
// prefill; a server that lacks the prefix and whose cache is full of
// other prefixes also pays evict x the prompt, scaled by the fleet's
// mean load, for the prefix it will push out.
const costTokens = (corun = 4096, evict = 4, admit = 0, dedup = 0) => (view, q) => {
  const es = view.engines;
  const bs = view.blockSize;
  const blocks = Math.floor(q.ids.length / bs);
  const overlaps = es.map((e) => view.overlap(e, q));
  const longest = Math.max(...overlaps);
  const meanLoad = es.reduce((a, e) => a + e.inflight, 0) / es.length;
  let best = 0;
  let bestCost = Infinity;
  for (const e of es) {
    const k = e.inflight;
    const uncached = Math.max(0, q.ids.length - overlaps[e.index] * bs);
    let c = corun * k + uncached * (1 + k) + e.inflightUncached;
    if ((longest === 0 || overlaps[e.index] < longest) && (view.held(e) + 1) * blocks > view.capacity) {
      c += evict * q.ids.length * (1 + meanLoad);
    }
    if (admit > 0 && k > 0) {
      // blocks the requests in flight hold (their prompts, counted apart,
      // or their uncached parts plus this prefix once) and this one's
      const held = dedup ? (e.inflightUncached + overlaps[e.index] * bs) : e.inflightTokens;
      const use = Math.ceil((held + k * view.maxTokens) / bs);
      const need = Math.ceil((uncached + view.maxTokens) / bs);
      if (use + need > view.capacity) c += admit * q.ids.length;
    }
    if (c < bestCost) {
      bestCost = c;
      best = e.index;
    }
  }
  return best;
};

module.exports.costTokens = costTokens;

// src/route/kvr_policy.c's admission check after another policy's choice: a
// server whose in-flight uncached work plus this prompt exceeds its
// capacity passes the request to one that can start it now (longest
// overlap, then least loaded)
const admitted = (inner) => (view, q) => {
  const bs = view.blockSize;
  const full = (e) => {
    if (e.inflight === 0) return false;
    const overlap = view.overlap(e, q);
    const cached = Math.min(overlap * bs, q.ids.length);
    return Math.ceil((e.inflightUncached + q.ids.length - cached) / bs) + overlap > view.capacity;
  };
  const best = inner(view, q);
  if (!full(view.engines[best])) return best;
  let alt = -1;
  for (const e of view.engines) {
    if (e.index === best || full(e)) continue;
    if (alt < 0 || view.overlap(e, q) > view.overlap(view.engines[alt], q)
        || (view.overlap(e, q) === view.overlap(view.engines[alt], q) && e.inflight < view.engines[alt].inflight)) alt = e.index;
  }
  return alt < 0 ? best : alt;
};
module.exports.admitted = admitted;

// Experimental: time to first token first.  A server's cost is the prefill
// it must run before this request's first token (the prefill of requests
// routed there that have no first token yet, and this one's uncached
// part), plus `decode` tokens for each request in flight there (decode
// steps slow every prefill chunk), plus, when it lacks the prefix and its
// cache is full of other prefixes, `evict` x the prompt.
const ttftCost = (decode = 300, evict = 1, loadScale = 0) => (view, q) => {
  const es = view.engines;
  const bs = view.blockSize;
  const blocks = Math.floor(q.ids.length / bs);
  const overlaps = es.map((e) => view.overlap(e, q));
  const longest = Math.max(...overlaps);
  const meanLoad = es.reduce((a, e) => a + e.inflight, 0) / es.length;
  let best = 0;
  let bestCost = Infinity;
  for (const e of es) {
    const uncached = Math.max(0, q.ids.length - overlaps[e.index] * bs);
    let c = e.dyn.pendingPrefill + uncached + decode * e.inflight;
    if ((longest === 0 || overlaps[e.index] < longest) && (view.held(e) + 1) * blocks > view.capacity) {
      c += evict * q.ids.length * (1 + loadScale * meanLoad);
    }
    if (c < bestCost) {
      bestCost = c;
      best = e.index;
    }
  }
  return best;
};
module.exports.ttftCost = ttftCost;

// Experimental: ttftCost plus the KV room a request needs: the distinct
// blocks the requests in flight pin (Dynamo's active blocks) plus the
// blocks of this request not among them; a server without that room makes
// the request wait for one in flight to finish, `wait` tokens' worth.
const roomCost = (decode = 300, evict = 1, wait = 40000, pend = 1, slack = Infinity, dedup = 1) => (view, q) => {
  const es = view.engines;
  const bs = view.blockSize;
  const blocks = Math.floor(q.ids.length / bs);
  const overlaps = es.map((e) => view.overlap(e, q));
  const longest = Math.max(...overlaps);
  const out = Math.ceil(view.maxTokens / bs);
  // the prefill ahead of this request's first token, the least of it
  const ahead = es.map((e) => e.dyn.pendingPrefill + Math.max(0, q.ids.length - overlaps[e.index] * bs));
  const least = Math.min(...ahead);
  let best = 0;
  let bestCost = Infinity;
  for (const e of es) {
    const uncached = Math.max(0, q.ids.length - overlaps[e.index] * bs);
    if (ahead[e.index] > least + slack) continue;
    let c = pend * e.dyn.pendingPrefill + uncached + decode * e.inflight;
    let fresh = 0;
    for (const k of q.blockKeys) if (!e.dyn.activeBlocks.has(k)) fresh++;
    // pinned blocks: distinct (Dynamo's active blocks), or each request's
    // uncached part plus the longest overlap once (what a router that
    // keeps no block sets can count)
    const pinned = dedup ? e.dyn.activeBlocks.size
      : Math.ceil(e.inflightUncached / bs) + (e.inflight ? overlaps[e.index] : 0);
    const need = dedup ? fresh : Math.ceil(uncached / bs);
    if (pinned + e.inflight * out + need + out > view.capacity) c += wait;
    if ((longest === 0 || overlaps[e.index] < longest) && (view.held(e) + 1) * blocks > view.capacity) {
      c += evict * q.ids.length;
    }
    if (c < bestCost) {
      bestCost = c;
      best = e.index;
    }
  }
  return best;
};
module.exports.roomCost = roomCost;
