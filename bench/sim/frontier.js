#!/usr/bin/env node
'use strict';
// The trade-off between hits and throughput / tail latency that policies
// can reach on the emulator: every setting of kvroute's balance thresholds
// and of the cost policy's weights, with Dynamo's cost, round robin and the
// partition of prefix types, simulated at one point (mean of 3 seeds,
// requests after the first 96 counted). Writes OUT/frontier_<tag>.dat and,
// with gnuplot, OUT/frontier_<tag>.png.
//   node bench/sim/frontier.js [--workers 6] [--prefixes 24]
//       [--concurrency 8] [--gpus 24g,8g,8g] [--max-tokens N] [--frontend-us N]
//       [--out bench/results/sim]

require('./clock');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { parseArgs } = require('node:util');
const { simulate } = require('./sim');
const P = require('./policies');

const { values: v } = parseArgs({ options: {
  workers: { type: 'string', default: '6' },
  prefixes: { type: 'string', default: '24' },
  concurrency: { type: 'string', default: '8' },
  requests: { type: 'string', default: '720' },
  gpus: { type: 'string', default: '24g,8g,8g' },
  'max-tokens': { type: 'string', default: String(require('../fidelity/model').DEFAULT_MAX_TOKENS) },
  'frontend-us': { type: 'string', default: '0' },
  out: { type: 'string', default: path.join(__dirname, '..', 'results', 'sim') },
} });

// the emulator's own defaults: the calibrated model (BENCHMARKS.md §3.1)
const timing = {};

const families = [
  ['round_robin', [['', P.roundRobin()]]],
  ['dynamo', [['', P.dynamoExact()]]],
  ['partition', [['', P.partition()]]],
  ['kvroute', [[0, 1], [1, 1], [2, 1.25], [3, 1.5], [4, 1.5], [8, 3]]
    .map(([a, r]) => [`${a}/${r}`, P.kvroute(a, r)])],
  ['cost', [2048, 4096, 8192].flatMap((c) => [1, 2, 4, 8].map((e) => [`${c}/${e}`, P.costTokens(c, e)]))],
];

const o = { workers: Number(v.workers), prefixes: Number(v.prefixes), concurrency: Number(v.concurrency),
  requests: Number(v.requests), measureFrom: 96, timing, gpus: require('../emulator/options').parseGpus(v.gpus),
  maxTokens: Number(v['max-tokens']), frontendUs: Number(v['frontend-us']) };
const tag = `w${o.workers}_p${o.prefixes}_c${o.concurrency}`;
fs.mkdirSync(v.out, { recursive: true });
const dat = path.join(v.out, `frontier_${tag}.dat`);
const lines = [];
let dynamoAt = null;
families.forEach(([family, settings]) => {
  // first line of each block: its title (gnuplot columnhead), then
  // setting, hit rate %, requests/s, TTFT p99 ms, cached-token ratio
  lines.push(`"${family.replace(/_/g, " ")}" hit_rate req_per_s ttft_p99_ms cached_ratio`);
  for (const [setting, policy] of settings) {
    const m = { request_hit_rate: 0, requests_per_s: 0, ttft_p99_ms: 0, cached_token_ratio: 0 };
    for (const seed of [1, 2, 3]) {
      const r = simulate(Object.assign({ seed }, o), policy);
      for (const k of Object.keys(m)) m[k] += r[k] / 3;
    }
    lines.push([`"${family}${setting ? ' ' + setting : ''}"`, (100 * m.request_hit_rate).toFixed(1),
      m.requests_per_s.toFixed(2), m.ttft_p99_ms.toFixed(0), m.cached_token_ratio.toFixed(3)].join(' '));
    process.stdout.write(lines[lines.length - 1] + '\n');
  }
  lines.push('', '');   // gnuplot index separator
  if (family === 'dynamo') dynamoAt = lines[lines.length - 3].split(' ');
});
fs.writeFileSync(dat, lines.join('\n'));

const title = `${o.workers} workers, ${o.prefixes} types, concurrency ${o.concurrency}` +
  `, GPUs ${v.gpus}, the calibrated emulator`;
const png = path.join(v.out, `frontier_${tag}.png`);
const script = `
set terminal pngcairo size 1100,480 font ",10"
set output "${png}"
set multiplot layout 1,2 title "${title} (simulated, mean of 3 seeds)"
set key bottom left
set grid
set xlabel "request hit rate (%)"
set ylabel "requests/s"
plot for [i=0:4] "${dat}" index i using 2:3 with points pt (i+4) lc (i+1) ps 1.5 title columnhead(1), \
     ${dynamoAt[2]} with lines dt 2 lc 2 title "Dynamo's requests/s"
set ylabel "TTFT p99 (ms)"
set key top left
plot for [i=0:4] "${dat}" index i using 2:4 with points pt (i+4) lc (i+1) ps 1.5 title columnhead(1), \
     ${dynamoAt[3]} with lines dt 2 lc 2 title "Dynamo's TTFT p99"
unset multiplot
`;
const g = spawnSync('gnuplot', [], { input: script, encoding: 'utf8' });
if (g.status !== 0) process.stderr.write(`frontier: gnuplot: ${g.stderr || g.error}\n`);
else process.stdout.write(`wrote ${png}\n`);
