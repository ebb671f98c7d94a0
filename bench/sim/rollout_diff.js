#!/usr/bin/env node
'use strict';
// Where a rollout (bench/sim/rollout.js) chose unlike its base, and what
// the engines looked like then: replays the rollout's choices from its row
// and, at each request the two differ on, records what a router sees (each
// engine's cached leading blocks for the prompt, requests in flight,
// prompt tokens waiting for prefill, requests queued in its scheduler) and
// the request's own time to first token. Prints how the choices moved
// between engines and the mean view at the base's engine against the
// rollout's.
//   node bench/sim/rollout_diff.js FILE.jsonl [--row N]   (N: the Nth rollout row, from 0)

require('./clock');
const fs = require('node:fs');
const { parseArgs } = require('node:util');
const { simulate } = require('./sim');
const R = require('./rollout');
const { parseGpus } = require('../emulator/options');
const { DEFAULT_MAX_TOKENS } = require('../fidelity/model');

const { values: v, positionals } = parseArgs({ allowPositionals: true, options: {
  row: { type: 'string', default: '0' },
  gpus: { type: 'string', default: '24g,8g,8g' },
  'measure-from': { type: 'string', default: '96' },
} });
const rows = fs.readFileSync(positionals[0], 'utf8').trim().split('\n').map(JSON.parse)
  .filter((r) => r.choices);
const row = rows[Number(v.row)];
if (!row) throw new Error('no rollout row with its choices there');
const choices = row.choices.split('').map(Number);
const base = R.BASES[/rollout\((\w+)/.exec(row.policy)[1]];
const o = { workers: row.w, prefixes: row.p, concurrency: row.c, requests: choices.length, seed: row.seed,
  measureFrom: Number(v['measure-from']), gpus: parseGpus(v.gpus), maxTokens: DEFAULT_MAX_TOKENS };

const seen = [];
let records = null;
simulate(Object.assign({}, o, { trace: (rs) => { records = rs; } }), R.forcing(base(), choices,
  (i, own, view, q) => {
    if (i < o.measureFrom || own === choices[i]) return;
    seen.push({ i, base: own, chose: choices[i],
      engines: view.engines.map((x) => ({ overlap: view.overlap(x, q), inflight: x.inflight,
        pending: x.dyn.pendingPrefill, queued: x.sched.waiting.length })) });
  }));

const moved = new Map();
const sum = (xs, f) => xs.reduce((a, x) => a + f(x), 0);
for (const s of seen) {
  const k = `${s.base}->${s.chose}`;
  moved.set(k, (moved.get(k) || 0) + 1);
}
const counted = choices.length - o.measureFrom;
process.stdout.write(`${row.policy} at ${row.w}w/${row.p}/c${row.c} seed ${row.seed}: ` +
  `${seen.length} of ${counted} counted choices unlike the base's\n`);
process.stdout.write(`moves (base's engine -> rollout's): ${[...moved].map(([k, n]) => `${k} ${n}`).join(', ')}\n`);
const mean = (f) => (seen.length ? (sum(seen, f) / seen.length).toFixed(2) : '-');
process.stdout.write('mean over those choices        base\'s engine   rollout\'s engine\n');
for (const [name, f] of [['cached blocks of the prompt', (x) => x.overlap], ['requests in flight', (x) => x.inflight],
  ['prompt tokens awaiting prefill', (x) => x.pending], ['requests queued', (x) => x.queued]]) {
  process.stdout.write(`  ${name.padEnd(30)} ${String(mean((s) => f(s.engines[s.base]))).padStart(12)} ` +
    `${String(mean((s) => f(s.engines[s.chose]))).padStart(17)}\n`);
}
const hitBase = seen.filter((s) => s.engines[s.base].overlap > 0).length;
const hitChose = seen.filter((s) => s.engines[s.chose].overlap > 0).length;
process.stdout.write(`prompt cached at the base's engine in ${hitBase}, at the rollout's in ${hitChose}\n`);
const ttfts = seen.map((s) => records[s.i].ttft).sort((a, b2) => a - b2);
if (ttfts.length) {
  process.stdout.write(`those requests' TTFT under the rollout: p50 ${ttfts[ttfts.length >> 1].toFixed(1)} ms, ` +
    `max ${ttfts[ttfts.length - 1].toFixed(1)} ms\n`);
}
