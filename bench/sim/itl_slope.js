#!/usr/bin/env node
'use strict';
// What a frontend could read of a world's decode cost from the engines'
// /metrics (BENCHMARKS §2.45): every 500 ms of model time, each engine's
// mean inter-token latency since the last scrape
// (vllm:inter_token_latency_seconds' _sum and _count) beside its
// vllm:num_requests_running (the mean of the gauge at the two scrapes);
// per engine a least-squares line itl = a + b x running. b / a is the
// share of a step one more decoding request adds, as the metrics show it;
// the world's own figure is its decode_us_per_seq against the step's
// fixed work. One run of one point under Dynamo's routing.
//
//   node bench/sim/itl_slope.js --worlds FILE [--point 3/8/24] [--seed 1]
//       [--requests 720]
//
// One JSON line a world.

require('./clock');
const clock = require('./clock');
const { parseArgs } = require('node:util');
const { simulate } = require('./sim');
const P = require('./policies');
const fit = require('../fidelity/fit');
const { readWorlds, decodeShare } = require('./worlds');

const SCRAPE_MS = 500;
const MIN_TOKENS = 8;   // as the module's kvr_engine_load_itl()

// samples: [{ running, itlMs }] of one engine
function line(samples) {
  const n = samples.length;
  if (n < 3) return null;
  const mx = samples.reduce((a, s) => a + s.running, 0) / n;
  const my = samples.reduce((a, s) => a + s.itlMs, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const s of samples) {
    sxy += (s.running - mx) * (s.itlMs - my);
    sxx += (s.running - mx) ** 2;
  }
  if (sxx === 0) return null;
  const b = sxy / sxx;
  const a = my - b * mx;
  return { samples: n, a_ms: a, b_ms: b, share: b / a };
}

function slopes(prm, point, seed, requests) {
  const [w, c, p] = point;
  const route = P.dynamoExact();
  let last = null;
  const per = Array.from({ length: w }, () => []);
  const scraping = (view, q) => {
    const now = clock.now();
    const read = () => view.engines.map((e) => ({ sumMs: e.sched.itl.sumMs, count: e.sched.itl.count,
      running: e.sched.running.length }));
    if (!last) last = { at: now, engines: read() };
    if (now - last.at >= SCRAPE_MS) {
      const cur = read();
      cur.forEach((x, i) => {
        const y = last.engines[i];
        if (x.count - y.count >= MIN_TOKENS) {
          per[i].push({ running: (x.running + y.running) / 2, itlMs: (x.sumMs - y.sumMs) / (x.count - y.count) });
        }
      });
      last = { at: now, engines: cur };
    }
    return route(view, q);
  };
  simulate(Object.assign({ workers: w, prefixes: p, concurrency: c, requests, seed }, fit.simWorld(prm)), scraping);
  return per.map(line);
}

function main() {
  const { values: v } = parseArgs({ options: {
    worlds: { type: 'string' },
    point: { type: 'string', default: '3/8/24' },
    seed: { type: 'string', default: '1' },
    requests: { type: 'string', default: '720' },
  } });
  if (!v.worlds) throw new Error('usage: itl_slope.js --worlds FILE');
  const point = v.point.split('/').map(Number);
  for (const w of readWorlds(v.worlds)) {
    const engines = slopes(w.params, point, Number(v.seed), Number(v.requests));
    const round = (x) => Math.round(x * 1000) / 1000;
    process.stdout.write(JSON.stringify({ world: w.name, point: v.point, seed: Number(v.seed), router: 'dynamo',
      decode_share: round(decodeShare(w.params)),
      engines: engines.map((e) => e && { samples: e.samples, a_ms: round(e.a_ms), b_ms: round(e.b_ms), share: round(e.share) }),
      ...fit.provenance(w.params, [Number(v.seed)]) }) + '\n');
  }
}

if (require.main === module) main();

module.exports = { slopes, line };
