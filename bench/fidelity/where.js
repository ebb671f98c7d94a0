#!/usr/bin/env node
'use strict';
// Where each of the seed's variants runs its requests, per engine: the
// share of requests, how many of them missed, their mean end-to-end time
// and a miss's mean time to first token. It shows what a KV router's gain
// over round robin is made of in a fitted world (BENCHMARKS §3.4): which
// engines its misses land on, and what a miss costs there.
//
//   node bench/fidelity/where.js --point 3/8/24 [--seed 1] [--requests 240]
//       [--start JSON]      (a fit.js parameter set over the defaults)
//
// One JSON line a variant. Engines are numbered as the simulator places
// them on the seed's nodes (24g,8g,8g): with 3 workers engine 0 is the
// 24 GB node.

require('../sim/clock');
const { parseArgs } = require('node:util');
const { simulate } = require('../sim/sim');
const { simWorld, policyFor, defaultParams, useBaseline, provenance } = require('./fit');
const { SEED_BASELINE } = require('./model');

// a request counts as a miss when the cache gave it fewer than 1,000 of
// its tokens, under half its 2,032-token shared prefix: a full hit gives
// the whole prefix, a partial one (some of its blocks evicted) counts as
// a hit while it keeps most of it
const MISS_BELOW_TOKENS = 1000;

function whereRuns(point, prm, seed, requests, variant) {
  const [w, c, p] = point;
  let recs = [];
  const out = simulate(Object.assign({ workers: w, prefixes: p, concurrency: c, requests, seed,
    trace: (r) => { recs = r; } }, simWorld(prm)), policyFor(variant));
  const per = Array.from({ length: w }, () => ({ n: 0, miss: 0, latency: 0, missTtft: 0 }));
  for (const r of recs) {
    const e = per[r.engine];
    e.n++;
    e.latency += r.end - r.sent;
    if (r.cached < MISS_BELOW_TOKENS) {
      e.miss++;
      e.missTtft += r.ttft;
    }
  }
  const round = (x, d) => Math.round(x * 10 ** d) / 10 ** d;
  return {
    variant, point: point.join('/'), seed, requests_per_s: out.requests_per_s,
    cached_token_ratio: out.cached_token_ratio, ttft_p99_ms: out.ttft_p99_ms,
    engines: per.map((e, i) => ({
      engine: i,
      share: round(e.n / recs.length, 3),
      miss_share: round(e.miss / Math.max(1, e.n), 3),
      mean_latency_ms: round(e.latency / Math.max(1, e.n), 1),
      miss_ttft_ms: round(e.missTtft / Math.max(1, e.miss), 1),
    })),
  };
}

function main() {
  const { values: v } = parseArgs({ options: {
    point: { type: 'string', default: '3/8/24' },
    seed: { type: 'string', default: '1' },
    requests: { type: 'string', default: '240' },
    start: { type: 'string' },
  } });
  useBaseline(SEED_BASELINE);
  const prm = Object.assign(defaultParams(), v.start ? JSON.parse(v.start) : {});
  const point = v.point.split('/').map(Number);
  for (const variant of ['baseline', 'round_robin', 'kv']) {
    console.log(JSON.stringify(Object.assign(
      whereRuns(point, prm, Number(v.seed), Number(v.requests), variant),
      { params: prm }, provenance(prm, [Number(v.seed)]))));
  }
}

if (require.main === module) main();

module.exports = { whereRuns, MISS_BELOW_TOKENS };
