#!/usr/bin/env node
'use strict';
// Issue #18 floor 5 in the policy simulator: open loop (Poisson arrivals
// at a fixed rate, as kvbench --rate draws them), the highest rate whose
// TTFT p99 stays at or under 1 s, for Dynamo and kvroute's policy=ttft
// with the engines' speeds, with and without this request's own output
// weighed (ttft_own). Rates step by --step; a policy's knee is bench/
// sweep.js's goodput() of the median p99s over the seeds.
//   node bench/sim/goodput.js [--workers 6,3] [--prefixes 24] [--seeds 1,2,3]
//       [--from 8] [--to 40] [--step 1] [--own 50,50:600] [--limit-ms 1000]

require('./clock');
const { parseArgs } = require('node:util');
const { simulate } = require('./sim');
const P = require('./policies');
const C = require('./cpolicy');
const { goodput } = require('../sweep');
const { parseGpus } = require('../emulator/options');
const { DEFAULT_MAX_TOKENS } = require('../fidelity/model');

const { values: v } = parseArgs({ options: {
  workers: { type: 'string', default: '6,3' },
  prefixes: { type: 'string', default: '24' },
  seeds: { type: 'string', default: '1,2,3' },
  requests: { type: 'string', default: '720' },
  from: { type: 'string', default: '8' },
  to: { type: 'string', default: '40' },
  step: { type: 'string', default: '1' },
  own: { type: 'string', default: '50,50:600' },
  'limit-ms': { type: 'string', default: '1000' },
  gpus: { type: 'string', default: '24g,8g,8g' },
} });

const POLICIES = { dynamo: () => P.dynamoExact() };
for (const spec of v.own.split(',')) {
  const t = C.ttftSpec(spec);
  POLICIES[t.name] = t.make;
}

const median = (xs) => {
  const a = xs.slice().sort((x, y) => x - y);
  return a.length % 2 ? a[(a.length - 1) / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
};

const seeds = v.seeds.split(',').map(Number);
const limit = Number(v['limit-ms']);
for (const w of v.workers.split(',').map(Number)) {
  for (const p of v.prefixes.split(',').map(Number)) {
    const knees = {};
    for (const [name, mk] of Object.entries(POLICIES)) {
      const points = [];
      for (let rate = Number(v.from); rate <= Number(v.to); rate += Number(v.step)) {
        // closed-loop concurrency names the clients the arrivals come from
        const p99 = median(seeds.map((seed) => simulate({ workers: w, prefixes: p, concurrency: 16,
          requests: Number(v.requests), seed, measureFrom: 96, rate, gpus: parseGpus(v.gpus),
          maxTokens: DEFAULT_MAX_TOKENS }, mk()).ttft_p99_ms));
        process.stdout.write(`${w}w/${p} ${name} rate ${rate}: p99 ${p99.toFixed(1)} ms\n`);
        points.push({ rate, ttft_p99_ms: p99 });
        if (p99 > limit) break;           // sweep.js's rule ends the knee here
      }
      knees[name] = goodput(points, limit) ?? 0;
    }
    const d = knees.dynamo;
    for (const [name, k] of Object.entries(knees)) {
      process.stdout.write(`KNEE ${w}w/${p} ${name}: ${k} req/s` + (d ? ` (${(k / d).toFixed(2)}x Dynamo)\n` : '\n'));
    }
  }
}
