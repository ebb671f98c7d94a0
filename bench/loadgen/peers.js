'use strict';
// The peers' routing policies, run by the load generator itself as the
// bench's Dynamo is (loadgen/dynamo.js): each request asks route(q) for an
// engine and reports its first token and its end.  Each follows the
// published rules of its project (../shared/docs/routers.md), on what that
// project's router can see:
//
// llmd       llm-d's EPP with the precise prefix-cache scorer (C.3-C.5):
//            score = 3 prefix + 2 queue + 2 kv-util, the highest wins (ties
//            shuffled); prefix = longest run of the prompt's leading blocks
//            an engine's KV events say it holds / the prompt's blocks;
//            queue = (maxQ - q) / (maxQ - minQ) over the candidates (1 for
//            all when equal), q the engine's vllm:num_requests_waiting;
//            kv-util = 1 - vllm:kv_cache_usage_perc; both scraped from the
//            engines' /metrics every 50 ms of model time, as the EPP does.
// sglang     SGLang Model Gateway `cache_aware` (B.1-B.4, defaults): load =
//            the router's in-flight requests an engine; if max - min > 64
//            and max > 1.5 min, the least loaded; else if the best match
//            rate in the router's own tree of routed prompts is above 0.3,
//            the engine of that match; else the engine with the smallest
//            tree.  The tree never evicts at this size (2^26 characters an
//            engine).  Matched at block granularity (16 tokens) on token ids,
//            where SGLang matches characters: the same ratio within 1 %.
// partition  the oracle of the cached-token ceiling: each prefix type
//            pinned to engines of its own (types >= engines: type mod W;
//            fewer types: the engines e with e mod types = type, in turn).

const http = require('node:http');
const { EventIndex } = require('./dynamo');
const { extendBlockHashes, noneHash, hashKeyOf } = require('../emulator/kv_cache');

const METRICS_INTERVAL_MS = 50;

// Prometheus text -> { running, waiting, usage } of the vLLM names
function parseEngineMetrics(text) {
  const val = (name) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  };
  return {
    running: val('vllm:num_requests_running'),
    waiting: val('vllm:num_requests_waiting'),
    usage: val('vllm:kv_cache_usage_perc'),
  };
}

// The engines' /metrics, scraped every interval (real ms), newest kept.
class MetricsScraper {
  constructor(ports, intervalMs) {
    this.ports = ports;
    this.intervalMs = intervalMs;
    this.latest = ports.map(() => ({ running: 0, waiting: 0, usage: 0 }));
    this.agent = new http.Agent({ keepAlive: true });
    this.timer = null;
    this.failures = 0;
  }

  scrapeOne(i) {
    return new Promise((resolve) => {
      http.get({ host: '127.0.0.1', port: this.ports[i], path: '/metrics', agent: this.agent }, (res) => {
        let b = '';
        res.on('data', (d) => { b += d; });
        res.on('end', () => {
          const m = parseEngineMetrics(b);
          if (m.waiting === null || m.usage === null) this.failures++; else this.latest[i] = m;
          resolve();
        });
      }).on('error', () => { this.failures++; resolve(); });
    });
  }

  async start() {
    await Promise.all(this.ports.map((_, i) => this.scrapeOne(i)));
    const tick = async () => {
      await Promise.all(this.ports.map((_, i) => this.scrapeOne(i)));
      if (this.timer) this.timer = setTimeout(tick, this.intervalMs);
    };
    this.timer = setTimeout(tick, this.intervalMs);
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = null;
    this.agent.destroy();
  }
}

// llm-d's weighted scores; metrics[i] = { waiting, usage }, overlaps in
// blocks, promptBlocks > 0; shuffle(i) a tie-break rank
function llmdScores(metrics, overlaps, promptBlocks) {
  const qs = metrics.map((m) => m.waiting);
  const maxQ = Math.max(...qs);
  const minQ = Math.min(...qs);
  return metrics.map((m, i) => {
    const prefix = promptBlocks ? overlaps[i] / promptBlocks : 0;
    const queue = maxQ === minQ ? 1 : (maxQ - m.waiting) / (maxQ - minQ);
    const kv = 1 - m.usage;
    return 3 * prefix + 2 * queue + 2 * kv;
  });
}

function pickMax(scores, rank) {
  let best = 0;
  for (let i = 1; i < scores.length; i++) {
    if (scores[i] > scores[best] || (scores[i] === scores[best] && rank(i) < rank(best))) best = i;
  }
  return best;
}

class LlmdRouter {
  // o: eventsPorts[], enginePorts[], blockSize, hashSeed, timeScale
  constructor(o) {
    this.index = new EventIndex(o);
    this.metrics = new MetricsScraper(o.enginePorts, METRICS_INTERVAL_MS / (o.timeScale || 1));
    this.picks = 0;
  }

  async start() {
    await this.index.start();
    await this.metrics.start();
  }

  async stop() {
    this.metrics.stop();
    await this.index.stop();
  }

  route(q) {
    const { digests, overlaps } = this.index.lookup(q.ids);
    const scores = llmdScores(this.metrics.latest, overlaps, digests.length);
    const salt = this.picks++;
    const best = pickMax(scores, (i) => shuffleRank(i, salt));
    return { engine: best, overlap: overlaps[best], onFirstToken: () => {}, onFinish: () => {} };
  }
}

// a deterministic shuffle rank of engine i at pick `salt`
function shuffleRank(i, salt) {
  let z = (Math.imul(i + 1, 0x9e3779b1) ^ Math.imul(salt + 1, 0x85ebca77)) >>> 0;
  z = Math.imul(z ^ (z >>> 15), 0x2c1b3c6d) >>> 0;
  return (z ^ (z >>> 12)) >>> 0;
}

// SGLang's approximate tree, per engine: the block keys of every prompt
// routed to it (prefix-closed, as a radix tree's paths are), its size in
// tokens, and which engine a match was last routed to.
class SglangRouter {
  // o: engines, blockSize, cacheThreshold, balanceAbs, balanceRel
  constructor(o) {
    this.bs = o.blockSize;
    this.root = noneHash(0);
    this.cacheThreshold = o.cacheThreshold === undefined ? 0.3 : o.cacheThreshold;
    this.balanceAbs = o.balanceAbs === undefined ? 64 : o.balanceAbs;
    this.balanceRel = o.balanceRel === undefined ? 1.5 : o.balanceRel;
    const n = o.engines;
    this.trees = Array.from({ length: n }, () => new Set());
    this.treeTokens = new Array(n).fill(0);
    this.load = new Array(n).fill(0);
    this.lastTenant = new Map();     // block key -> the engine last routed there
  }

  start() { return Promise.resolve(); }

  stop() { return Promise.resolve(); }

  choose(keys, tokens) {
    const n = this.load.length;
    const maxL = Math.max(...this.load);
    const minL = Math.min(...this.load);
    const leastLoaded = () => this.load.indexOf(minL);
    if (maxL - minL > this.balanceAbs && maxL > this.balanceRel * minL) return leastLoaded();
    // the deepest match among the engines' trees
    let depth = 0;
    let holders = [];
    for (let e = 0; e < n; e++) {
      let d = 0;
      while (d < keys.length && this.trees[e].has(keys[d])) d++;
      if (d > depth) { depth = d; holders = [e]; } else if (d === depth && d > 0) holders.push(e);
    }
    if (depth > 0 && (depth * this.bs) / tokens > this.cacheThreshold) {
      const last = this.lastTenant.get(keys[depth - 1]);
      return holders.includes(last) ? last : holders[0];
    }
    let smallest = 0;
    for (let e = 1; e < n; e++) {
      if (this.treeTokens[e] < this.treeTokens[smallest]
          || (this.treeTokens[e] === this.treeTokens[smallest] && this.load[e] < this.load[smallest])) smallest = e;
    }
    return smallest;
  }

  // the request is inserted into the chosen engine's tree either way
  insert(keys, e) {
    for (const k of keys) {
      if (!this.trees[e].has(k)) {
        this.trees[e].add(k);
        this.treeTokens[e] += this.bs;
      }
      this.lastTenant.set(k, e);
    }
  }

  route(q) {
    const keys = extendBlockHashes([], q.ids, q.ids.length, this.bs, this.root).map(hashKeyOf);
    const e = this.choose(keys, q.ids.length);
    this.insert(keys, e);
    this.load[e]++;
    let done = false;
    return {
      engine: e, onFirstToken: () => {},
      onFinish: () => { if (!done) { done = true; this.load[e]--; } },
    };
  }
}

class PartitionRouter {
  // o: engines, prefixes
  constructor(o) {
    this.engines = o.engines;
    this.prefixes = o.prefixes;
    this.turn = new Map();
  }

  start() { return Promise.resolve(); }

  stop() { return Promise.resolve(); }

  route(q) {
    const W = this.engines;
    const P = this.prefixes;
    let e;
    if (P >= W) {
      e = q.prefixId % W;
    } else {
      const own = [];
      for (let i = 0; i < W; i++) if (i % P === q.prefixId % P) own.push(i);
      const t = this.turn.get(q.prefixId) || 0;
      this.turn.set(q.prefixId, t + 1);
      e = own[t % own.length];
    }
    return { engine: e, onFirstToken: () => {}, onFinish: () => {} };
  }
}

module.exports = { LlmdRouter, SglangRouter, PartitionRouter, MetricsScraper, parseEngineMetrics, llmdScores,
  pickMax, shuffleRank, METRICS_INTERVAL_MS };
