'use strict';
// The peers' policies on the simulator's view, by the rules kvbench runs
// them by (loadgen/peers.js, ../shared/docs/routers.md), so that issue
// #18's floors can set kvroute beside every peer at every point:
//
// llmd    llm-d's precise prefix-cache scorer: 3 prefix + 2 queue + 2
//         kv-util, the highest wins (ties shuffled as kvbench shuffles
//         them); the prefix from what the engines cache (their events),
//         the queue and the KV usage sampled every 50 model ms, as the
//         EPP scrapes the engines' /metrics.
// sglang  SGLang Model Gateway's cache_aware: the router's own trees of
//         routed prompts and its own in-flight counts (loadgen/peers.js
//         SglangRouter, the same code).

const clock = require('./clock');
const { SglangRouter, llmdScores, pickMax, shuffleRank, METRICS_INTERVAL_MS } =
  require('../loadgen/peers');

const llmd = () => {
  let at = -Infinity;
  let latest = null;
  return (view, q) => {
    // the engines' figures as the last scrape saw them
    if (clock.now() - at >= METRICS_INTERVAL_MS) {
      at = clock.now();
      latest = view.engines.map((e) => ({ waiting: e.sched.waiting.length, usage: e.cache.usage() }));
    }
    const overlaps = view.engines.map((e) => view.overlap(e, q));
    const scores = llmdScores(latest, overlaps, q.hashes.length);
    const salt = view.picks;
    return pickMax(scores, (i) => shuffleRank(i, salt));
  };
};

const sglang = () => {
  let router = null;
  return (view, q) => {
    if (!router) router = new SglangRouter({ engines: view.engines.length, blockSize: view.blockSize });
    // its load is its own requests in flight: the simulator's count
    router.load = view.engines.map((e) => e.inflight);
    const e = router.choose(q.blockKeys, q.ids.length);
    router.insert(q.blockKeys, e);
    return e;
  };
};

module.exports = { llmd, sglang };
