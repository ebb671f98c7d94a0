#!/usr/bin/env node
'use strict';
// Issue #18's floors in the policy simulator: the seed's grid (6 and 3
// workers; 2, 7, 12, 24 prefix types; concurrency 4, 8, 16) for round
// robin, random per connection (the seed's baseline), llm-d's precise
// scorer and SGLang's cache_aware (sim/peers.js), Dynamo's router, the
// partition of prefix types (the oracle of hits) and kvroute's
// policy=ttft (the module's C code in WebAssembly)
// without and with the engines' speeds learned from their inter-token
// latency (metrics_speed=on, scraped every 500 ms as metrics_interval's
// default); with them, this request's own output weighed (ttft_own 50,
// the default with speeds) and not (0, the default until 2026-12-04), and
// a request in flight weighed as 300 prompt tokens (ttft_decode, the
// default with speeds) or 600 (the default until 2026-12-05).
// Each figure is the median over the seeds' runs; 720 requests, the
// first 96 not counted; one configuration for every point.
//   node bench/sim/floors.js [--seeds 1,2,3] [--requests 720] [--jsonl FILE]
//       [--gpus 24g,8g,8g]   (the nodes; e.g. 8g,8g,8g for equal ones)
//       [--workers 6,3] [--prefixes 2,7,12,24] [--concurrency 4,8,16]
//       [--policies 'kvroute ttft+speed']   (Dynamo always runs, as the yardstick;
//                            'kvroute ttft+speed auto-decode' only when named)
//       [--own 50,50:900]   (also 'kvroute ttft+speed own=N[:D]': ttft_own=N, ttft_decode=D,
//                            300 when not given)
//       [--world JSON]   (another fitted world, fit.js's parameters, e.g. a
//                         row's params from its --jsonl: the seed's nodes
//                         with those speeds; --gpus is then not read)
// Prints a markdown table and the floors met.

require('./clock');
const fs = require('node:fs');
const { parseArgs } = require('node:util');
const { simulate } = require('./sim');
const P = require('./policies');
const C = require('./cpolicy');
const peers = require('./peers');
const { parseGpus } = require('../emulator/options');
const { DEFAULT_MAX_TOKENS } = require('../fidelity/model');

const { values: v } = parseArgs({ options: {
  seeds: { type: 'string', default: '1,2,3' },
  requests: { type: 'string', default: '720' },
  'measure-from': { type: 'string', default: '96' },
  jsonl: { type: 'string' },
  workers: { type: 'string', default: '6,3' },
  prefixes: { type: 'string', default: '2,7,12,24' },
  concurrency: { type: 'string', default: '4,8,16' },
  policies: { type: 'string' },           // a comma-separated subset
  gpus: { type: 'string', default: '24g,8g,8g' },
  own: { type: 'string' },
  world: { type: 'string' },
} });

// the world the policies run in: the emulator's defaults, or --world's
const WORLD = v.world ? require('../fidelity/fit').simWorld(JSON.parse(v.world)) : null;

const POLICIES = {
  round_robin: () => P.roundRobin(),
  random_conn: () => P.randomPerConnection(),
  llmd: () => peers.llmd(),
  sglang: () => peers.sglang(),
  dynamo: () => P.dynamoExact(),
  partition: () => P.partition(),
  'kvroute ttft': () => C.ttftC(1200, 2, 40000, 0.75, 0),
};

// the module's configuration each of kvroute's stands for (the simulator
// has one engine fleet, capacity 585 blocks; no events port, no timers)
const KVROUTE = { 'kvroute ttft': 'kvroute mode=kv capacity=585' };

// with speeds the module's ttft_decode defaults to 300 (BENCHMARKS §2.40;
// 600 from §2.26 until 2026-12-05) and ttft_own to 50 (§2.31); own=0
// decode=600: the default until 2026-12-04; decode=600: until 2026-12-05
for (const [name, m] of [['kvroute ttft+speed', C.metricsPolicy()],
  ['kvroute ttft+speed decode=600', C.metricsPolicy(undefined, 600)],
  ['kvroute ttft+speed own=0', C.metricsPolicy(0, 600)]]) {
  POLICIES[name] = m.make;
  KVROUTE[name] = m.kvroute;
}

// run only when --policies names it: ttft_decode learned from the
// finished requests (sim/auto_decode.js: ttft_decode=auto, §2.45-§2.46)
const AUTO = 'kvroute ttft+speed auto-decode';
if (v.policies && v.policies.split(',').includes(AUTO)) {
  POLICIES[AUTO] = () => require('./auto_decode').autoDecode();
  KVROUTE[AUTO] = 'kvroute mode=kv metrics=on ttft_decode=auto capacity=585';
}

const EXTRA = new Set();
for (const spec of (v.own ? v.own.split(',') : [])) {
  const t = C.ttftSpec(spec);
  EXTRA.add(t.name);
  POLICIES[t.name] = t.make;
  KVROUTE[t.name] = t.kvroute;
}

const median = (xs) => {
  const a = xs.slice().sort((x, y) => x - y);
  return a.length % 2 ? a[(a.length - 1) / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
};

const seeds = v.seeds.split(',').map(Number);
// what every row was computed with (the simulator's clock is virtual: no lag)
const COMMIT = require('../loadgen/provenance').commit(require('node:path').join(__dirname, '..', '..'));
const { emulatorDefaults, withEmulatorArgs } = require('../fidelity/model');
const EMULATOR = WORLD
  ? Object.assign(withEmulatorArgs(emulatorDefaults(), WORLD.emulatorArgs), { world: JSON.parse(v.world),
    gpus: WORLD.emulatorArgs[WORLD.emulatorArgs.indexOf('--gpus') + 1], frontend_us: WORLD.frontendUs,
    extra_args: WORLD.emulatorArgs, max_tokens: WORLD.maxTokens })
  : Object.assign(emulatorDefaults(), { gpus: v.gpus });
const rows = [];
for (const w of v.workers.split(',').map(Number)) {
  for (const p of v.prefixes.split(',').map(Number)) {
    for (const c of v.concurrency.split(',').map(Number)) {
      for (const [name, mk] of Object.entries(POLICIES)) {
        if (v.policies && name !== 'dynamo' && !EXTRA.has(name) && !v.policies.split(',').includes(name)) continue;
        const rs = seeds.map((seed) => simulate(Object.assign({ workers: w, prefixes: p, concurrency: c,
          requests: Number(v.requests), seed, measureFrom: Number(v['measure-from']),
          gpus: parseGpus(v.gpus), maxTokens: DEFAULT_MAX_TOKENS }, WORLD || {}), mk()));
        const row = { w, p, c, policy: name, kvroute: KVROUTE[name] || null, seeds, runs: seeds.length,
          commit: COMMIT, emulator_params: EMULATOR, clock: 'virtual' };
        for (const k of ['request_hit_rate', 'cached_token_ratio', 'ttft_p50_ms', 'ttft_p99_ms', 'requests_per_s']) {
          row[k] = median(rs.map((r) => r[k]));
        }
        rows.push(row);
        if (v.jsonl) fs.appendFileSync(v.jsonl, JSON.stringify(row) + '\n');
      }
    }
  }
}

const at = (w, p, c, policy) => rows.find((r) => r.w === w && r.p === p && r.c === c && r.policy === policy);
const f1 = (x) => (Math.round(x * 10) / 10).toFixed(1);
const out = ['| point | policy | cached-token ratio | TTFT p50 / p99 ms | req/s | req/s vs Dynamo |',
  '|---|---|---|---|---|---|'];
for (const r of rows) {
  const d = at(r.w, r.p, r.c, 'dynamo');
  out.push(`| ${r.w}w/${r.p}/c${r.c} | ${r.policy} | ${r.cached_token_ratio.toFixed(3)} | ` +
    `${f1(r.ttft_p50_ms)} / ${f1(r.ttft_p99_ms)} | ${r.requests_per_s.toFixed(2)} | ` +
    `${(r.requests_per_s / d.requests_per_s).toFixed(3)} |`);
}
process.stdout.write(out.join('\n') + '\n\n');

// the floors, for each kvroute variant
const { judge, summaryLine } = require('./judge');
for (const name of Object.keys(POLICIES).filter((k) => k.startsWith('kvroute') && at(rows[0].w, rows[0].p, rows[0].c, k))) {
  process.stdout.write(summaryLine(judge(rows, name)));
}
