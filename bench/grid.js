#!/usr/bin/env node
'use strict';
// The seed experiment's grid: every (router, workers, prefix types,
// concurrency) point run one at a time through `bench/kvbench run --json`,
// one JSON line per point in OUT/grid.jsonl, then markdown tables next to
// the seed's figures (OUT/grid.md) and gnuplot PNGs. See bench/GRID.md.
//
//   node bench/grid.js [--routers a,b] [--workers 6,3] [--prefixes 2,7,12,24]
//       [--concurrency 4,8,16] [--runs 3] [--requests 240] [--seed 1]
//       [--out bench/results] [--time-scale 1] [--resume] [--table-only]

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { parseArgs } = require('node:util');

const { routerTable, describeRouter } = require('./loadgen/routers');
const { emulatorDefaults } = require('./fidelity/model');

const BENCH = __dirname;
const KVBENCH = path.join(BENCH, 'kvbench');
const PLOT_GP = path.join(BENCH, 'plot.gp');

// Best cached-token ratio: the 2,032 prefix tokens of a 2,371-token prompt.
const PREFIX_TOKENS = 2032;
const PROMPT_TOKENS = 2371;
const MAX_CACHED_RATIO = PREFIX_TOKENS / PROMPT_TOKENS;
// Prompts one worker holds: 585 blocks x 16 tokens / 2,371 (3.95).
const PROMPTS_PER_WORKER = (585 * 16) / PROMPT_TOKENS;

// ---------------------------------------------------------------------------
// SEED: the reference measurement, copied by hand from
// /work/shared/docs/seed-experiment.md ("Results", "The upper bound",
// "Hash seed and approximate mode"): Dynamo v1.6.2 + vLLM 0.31.0, Qwen3-0.6B,
// medians of 3 runs. Indexed [workers][concurrency][prefix types][variant];
// variants: baseline (Kubernetes Service), round_robin (Dynamo
// round-robin), kv (Dynamo KV routing), approximate (Dynamo approximate
// mode). Fields: hit (request hit rate), ctr (cached-token ratio), p50/p99
// (TTFT ms), rps (requests/s), epp (distinct workers per prefix).
// ---------------------------------------------------------------------------
const SEED_SOURCE = '/work/shared/docs/seed-experiment.md (Dynamo v1.6.2 / vLLM 0.31.0, measured 2026-11-13)';
const SEED_VARIANTS = {
  baseline: 'seed baseline',
  round_robin: 'seed round robin',
  kv: 'seed KV routing (Dynamo)',
  approximate: 'seed approximate (Dynamo)',
};
const SEED = (() => {
  const s = {};
  const put = (w, c, p, variant, fields) => {
    s[w] = s[w] || {};
    s[w][c] = s[w][c] || {};
    s[w][c][p] = s[w][c][p] || {};
    s[w][c][p][variant] = Object.assign(s[w][c][p][variant] || {}, fields);
  };
  const P = [2, 7, 12, 24];
  // per variant, one value per prefix type in P order (null = not reported)
  const rows = (w, c, field, byVariant) => {
    for (const [variant, vals] of Object.entries(byVariant)) {
      vals.forEach((v, i) => {
        if (v !== null) put(w, c, P[i], variant, { [field]: v });
      });
    }
  };
  // Request hit rate, 6 workers, concurrency 8
  rows(6, 8, 'hit', {
    baseline: [0.950, 0.555, 0.321, 0.175],
    round_robin: [0.950, 0.535, 0.292, 0.175],
    kv: [0.975, 0.830, 0.679, 0.433],
  });
  // KV routing request hit rate from the upper-bound table (conc 4 / 8 / 16)
  rows(6, 4, 'hit', { kv: [null, 0.93, 0.80, 0.52] });
  rows(6, 16, 'hit', { kv: [null, 0.91, 0.82, 0.52] });
  rows(3, 4, 'hit', { kv: [null, 0.77, 0.53, 0.29] });
  rows(3, 8, 'hit', { kv: [null, 0.82, 0.58, 0.30] });
  rows(3, 16, 'hit', { kv: [null, 0.90, 0.64, 0.28] });
  // Cached-token ratio, 6 workers
  rows(6, 4, 'ctr', {
    baseline: [0.814, 0.431, 0.241, 0.135],
    round_robin: [0.814, 0.385, 0.262, 0.126],
    kv: [0.857, 0.788, 0.664, 0.429],
  });
  rows(6, 16, 'ctr', {
    baseline: [0.814, 0.425, 0.268, 0.141],
    round_robin: [0.814, 0.442, 0.237, 0.148],
    kv: [0.835, 0.779, 0.695, 0.431],
  });
  // hash seed / approximate mode table (6 workers, concurrency 8)
  rows(6, 8, 'ctr', {
    round_robin: [0.814, 0.439, 0.247, 0.149],
    kv: [0.835, 0.702, 0.573, 0.361],
    approximate: [0.848, 0.638, 0.480, 0.245],
  });
  // Distinct workers per prefix, 6 workers, concurrency 4
  rows(6, 4, 'epp', {
    round_robin: [6.00, 6.00, 6.00, 5.92],
    kv: [1.00, 2.86, 4.00, 5.17],
  });
  // TTFT p50 / p99 ms, 6 workers
  rows(6, 4, 'p50', { baseline: [37, 63, 94, 101], round_robin: [41, 89, 106, 113], kv: [34, 40, 43, 64] });
  rows(6, 4, 'p99', { baseline: [122, 184, 193, 254], round_robin: [125, 142, 140, 143], kv: [73, 129, 138, 149] });
  rows(6, 16, 'p50', { baseline: [64, 142, 193, 205], round_robin: [74, 111, 190, 199], kv: [67, 72, 77, 109] });
  rows(6, 16, 'p99', {
    baseline: [325, 1353, 1441, 1508], round_robin: [332, 576, 646, 774], kv: [206, 240, 193, 242] });
  // frontend-hop note: p50 at concurrency 8, 2 types
  rows(6, 8, 'p50', { baseline: [47, null, null, null], round_robin: [64, null, null, null] });
  // Throughput, 6 workers, concurrency 16
  rows(6, 16, 'rps', {
    baseline: [18.9, 14.1, 13.9, 13.3], round_robin: [19.1, 16.0, 14.7, 14.3], kv: [21.1, 20.1, 19.2, 17.6] });
  // 3 workers, concurrency 8
  rows(3, 8, 'ctr', {
    baseline: [0.840, 0.487, 0.283, 0.143], round_robin: [0.840, 0.475, 0.291, 0.141],
    kv: [0.848, 0.690, 0.474, 0.252] });
  rows(3, 8, 'p99', {
    baseline: [165, 853, 1125, 1216], round_robin: [171, 413, 679, 830], kv: [83, 145, 152, 202] });
  rows(3, 8, 'rps', {
    baseline: [17.0, 12.4, 11.2, 10.7], round_robin: [17.3, 13.6, 12.5, 11.8], kv: [20.6, 18.5, 17.2, 16.6] });
  // overload point: 3 workers, concurrency 16, 24 types
  put(3, 16, 24, 'kv', { p50: 279, p99: 962 });
  put(3, 16, 24, 'baseline', { p50: 563, p99: 3060 });
  return s;
})();

function seedValue(w, c, p, variant, field) {
  const v = (((SEED[w] || {})[c] || {})[p] || {})[variant];
  return v && typeof v[field] === 'number' ? v[field] : null;
}

// What a row was measured with: the commit, the router's upstream lines
// (the exact kvroute line) and the emulator's defaults (the calibrated model)
function gitCommit() {
  const r = spawnSync('git', ['-C', path.join(BENCH, '..'), 'describe', '--always', '--dirty'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : 'unknown';
}

function upstreamLine(router, o) {
  return describeRouter(routerTable(path.join(BENCH, '..'), o.build || path.join(BENCH, '..', 'build'),
    { capacityBlocks: 585, blockSize: 16, basePort: o.port + 1, eventsBasePort: o.port + 1081,
      replayBasePort: o.port + 1181 })[router]);
}

// Upper bound on the request hit rate (seed-experiment.md): prefixes
// partitioned across workers, each holding 3.95 prompts.
function upperBound(w, p) {
  return Math.min(1, (w * PROMPTS_PER_WORKER) / p);
}

// ---------------------------------------------------------------------------
// options
// ---------------------------------------------------------------------------
const SPEC = {
  routers: { type: 'string' },
  workers: { type: 'string', default: '6,3' },
  prefixes: { type: 'string', default: '2,7,12,24' },
  concurrency: { type: 'string', default: '4,8,16' },
  runs: { type: 'string', default: '3' },
  requests: { type: 'string', default: '240' },
  seed: { type: 'string', default: '1' },
  out: { type: 'string', default: path.join(BENCH, 'results') },
  'time-scale': { type: 'string', default: '1' },
  port: { type: 'string', default: '28000' },
  build: { type: 'string' },
  resume: { type: 'boolean', default: false },
  until: { type: 'string' },
  'table-only': { type: 'boolean', default: false },
  'no-plots': { type: 'boolean', default: false },
  check: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h' },
};

// the default routers: the seed's baselines, the peers' policies (Dynamo,
// llm-d, SGLang), the partition oracle and kvroute's two modes, side by side
const DEFAULT_ROUTERS = ['random_conn', 'round_robin', 'dynamo', 'llmd', 'sglang', 'partition',
  'kvroute-approx', 'kvroute-kv'];

const USAGE = `usage: node bench/grid.js [--routers random_conn,round_robin,dynamo,llmd,sglang,partition,kvroute-approx,kvroute-kv]
           [--workers 6,3] [--prefixes 2,7,12,24] [--concurrency 4,8,16]
           [--runs 3] [--requests 240] [--seed 1] [--out bench/results]
           [--time-scale 1] [--port 28000] [--build DIR] [--resume]
           [--until HH:MM] [--table-only] [--no-plots]
       node bench/grid.js --check [seed-experiment.md]
--resume      skip points already in OUT/grid.jsonl (same requests, seed,
              runs and time scale)
--until HH:MM start no point after this UTC time (today); the rest is left
              for --resume
--table-only  only regenerate OUT/grid.md and the PNGs from OUT/grid.jsonl
--check       compare the hard-coded seed figures with the document's tables
--port P      nginx on P, engines on P+1.., KV events on P+1081..
--build DIR   the kvroute module's build directory (default build/), e.g. a
              copy, so rebuilding during a grid does not change its module
              (away from kvbench's defaults, so other runs do not collide)`;

function intList(s, name) {
  const xs = String(s).split(',').filter((x) => x !== '').map(Number);
  if (xs.length === 0 || xs.some((x) => !Number.isInteger(x) || x < 1)) {
    throw new Error(`--${name}: expected a comma-separated list of positive integers`);
  }
  return xs;
}

function posInt(s, name) {
  const x = Number(s);
  if (!Number.isInteger(x) || x < 0) throw new Error(`--${name}: expected a non-negative integer`);
  return x;
}

// ---------------------------------------------------------------------------
// raw results
// ---------------------------------------------------------------------------
function readResults(file) {
  if (!fs.existsSync(file)) return [];
  const out = [];
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      out.push(JSON.parse(line));
    } catch (e) {
      process.stderr.write(`grid: ${file}:${i + 1}: not JSON, ignored\n`);
    }
  });
  return out;
}

// what makes two lines the same measurement (for --resume)
function pointKey(r) {
  return [r.router, r.workers, r.prefixes, r.concurrency, r.requests, r.seed, r.runs_requested,
    r.time_scale].join('|');
}

// The line a table shows for one point: most runs first, then the latest.
function pickBest(results) {
  const best = new Map();
  for (const r of results) {
    const k = [r.router, r.workers, r.prefixes, r.concurrency].join('|');
    const cur = best.get(k);
    if (!cur || (r.runs_requested || 1) >= (cur.runs_requested || 1)) best.set(k, r);
  }
  return best;
}

// ---------------------------------------------------------------------------
// running points
// ---------------------------------------------------------------------------
let child = null;

function runKvbench(args) {
  return new Promise((resolve) => {
    child = spawn(KVBENCH, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('error', (e) => { err += String(e); });
    child.on('close', (code, signal) => {
      child = null;
      resolve({ code, signal, out, err });
    });
  });
}

function lastJsonLine(text) {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (lines.length === 0) return null;
  try {
    const v = JSON.parse(lines[lines.length - 1]);
    return v && typeof v === 'object' ? v : null;
  } catch (e) {
    return null;
  }
}

function fmtDuration(s) {
  s = Math.round(s);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return (h ? `${h}h` : '') + (h || m ? `${String(m).padStart(h ? 2 : 1, '0')}m` : '') +
    `${String(sec).padStart(h || m ? 2 : 1, '0')}s`;
}

async function runGrid(o) {
  const file = path.join(o.out, 'grid.jsonl');
  const done = new Set(o.resume ? readResults(file).map(pointKey) : []);
  const points = [];
  for (const w of o.workers) {
    for (const c of o.concurrency) {
      for (const router of o.routers) {
        for (const p of o.prefixes) points.push({ router, workers: w, prefixes: p, concurrency: c });
      }
    }
  }
  const todo = points.filter((pt) => !done.has(pointKey(Object.assign({}, pt, {
    requests: o.requests, seed: o.seed, runs_requested: o.runs, time_scale: o.timeScale }))));
  const t0 = Date.now();
  const log = (m) => process.stderr.write(`grid [${fmtDuration((Date.now() - t0) / 1000)}] ${m}\n`);
  log(`${points.length} points, ${points.length - todo.length} already in ${file}, ${todo.length} to run`);
  let failed = 0;
  let recorded = 0;
  for (let i = 0; i < todo.length; i++) {
    const pt = todo[i];
    if (o.until && Date.now() >= o.until.getTime()) {
      log(`it is past --until ${o.until.toISOString()}: ${todo.length - i} points left for --resume`);
      break;
    }
    const name = `${pt.router} w${pt.workers} p${pt.prefixes} c${pt.concurrency}`;
    log(`(${i + 1}/${todo.length}) ${name} ...`);
    const started = new Date();
    const loadBefore = os.loadavg()[0];
    const args = ['run', '--router', pt.router, '--workers', String(pt.workers),
      '--prefixes', String(pt.prefixes), '--concurrency', String(pt.concurrency),
      '--requests', String(o.requests), '--seed', String(o.seed), '--runs', String(o.runs),
      '--time-scale', String(o.timeScale), '--port', String(o.port),
      '--base-port', String(o.port + 1), '--events-base-port', String(o.port + 1081), '--json'];
    if (o.build) args.push('--build', o.build);
    const res = await runKvbench(args);
    if (stopping) break;
    const secs = (Date.now() - started.getTime()) / 1000;
    const r = lastJsonLine(res.out);
    if (!r) {
      failed++;
      const tail = res.err.split('\n').filter((l) => l !== '').slice(-15).join('\n    ');
      log(`(${i + 1}/${todo.length}) ${name} FAILED (exit ${res.code}${res.signal ? ', ' + res.signal : ''}) ` +
        `after ${secs.toFixed(1)} s, not recorded:\n    ${tail}`);
      continue;
    }
    Object.assign(r, {
      commit: gitCommit(), upstream: upstreamLine(pt.router, o),
      emulator_defaults: emulatorDefaults(),
      requests_requested: o.requests, seed: o.seed, runs_requested: o.runs, time_scale: o.timeScale,
      started_at: started.toISOString(), duration_s: Math.round(secs * 10) / 10,
      loadavg_1m_before: Math.round(loadBefore * 100) / 100, kvbench_exit: res.code,
    });
    // kvbench's `requests` is the number sent; keep the key on the requested one
    r.requests = o.requests;
    fs.appendFileSync(file, JSON.stringify(r) + '\n');
    recorded++;
    log(`(${i + 1}/${todo.length}) ${name} done in ${secs.toFixed(1)} s: hit ${pct(r.request_hit_rate)}, ` +
      `ctr ${fix(r.cached_token_ratio, 3)}, TTFT ${fix(r.ttft_p50_ms, 0)}/${fix(r.ttft_p99_ms, 0)} ms, ` +
      `${fix(r.requests_per_s, 1)} req/s, errors ${r.errors}`);
  }
  log(`finished: ${recorded} points recorded, ${failed} failed, ${todo.length - recorded - failed} not run`);
  return failed;
}

// ---------------------------------------------------------------------------
// markdown
// ---------------------------------------------------------------------------
const DASH = '–';

function pct(x) {
  return typeof x === 'number' ? (100 * x).toFixed(1) + '%' : DASH;
}

function fix(x, d) {
  return typeof x === 'number' ? x.toFixed(d) : DASH;
}

function ms(x) {
  return typeof x === 'number' ? Math.round(x).toLocaleString('en-US') : DASH;
}

// one metric: how to read it from a measured line and from the seed
const METRICS = {
  hit: { label: 'request hit rate', field: 'request_hit_rate', fmt: pct },
  ctr: { label: 'cached-token ratio', field: 'cached_token_ratio', fmt: (x) => fix(x, 3) },
  epp: { label: 'distinct engines per prefix', field: 'engines_per_prefix', fmt: (x) => fix(x, 2) },
  p50: { label: 'TTFT p50 (ms)', field: 'ttft_p50_ms', fmt: ms },
  p99: { label: 'TTFT p99 (ms)', field: 'ttft_p99_ms', fmt: ms },
  ttft: { label: 'TTFT p50 / p99 (ms)', fields: ['p50', 'p99'] },
  rps: { label: 'requests/s', field: 'requests_per_s', fmt: (x) => fix(x, 1) },
};

function cell(metric, measured, seedFn) {
  const m = METRICS[metric];
  if (m.fields) {
    const parts = m.fields.map((f) => (measured ? measured[METRICS[f].field] : seedFn(f)));
    if (parts.every((x) => typeof x !== 'number')) return DASH;
    return parts.map(ms).join(' / ');
  }
  return m.fmt(measured ? measured[m.field] : seedFn(metric));
}

function hasSeed(w, concs, prefixes, variant, metric) {
  const fields = METRICS[metric].fields || [metric];
  return concs.some((c) => prefixes.some((p) => fields.some((f) => seedValue(w, c, p, variant, f) !== null)));
}

// One table: rows (prefix types [x concurrency]), a column per measured
// router, then the seed's variants that have figures for it.
function table(best, o, w, metric, concs, extra) {
  const lines = [];
  const seedCols = Object.keys(SEED_VARIANTS).filter((v) => hasSeed(w, concs, o.prefixes, v, metric));
  const head = ['types'].concat(concs.length > 1 ? ['conc.'] : [],
    extra.bound ? ['upper bound'] : [], o.routers, seedCols.map((v) => SEED_VARIANTS[v]));
  lines.push('| ' + head.join(' | ') + ' |');
  lines.push('|' + head.map(() => '---').join('|') + '|');
  for (const c of concs) {
    for (const p of o.prefixes) {
      const row = [String(p)].concat(concs.length > 1 ? [String(c)] : []);
      if (extra.bound) row.push(extra.bound(w, p));
      for (const router of o.routers) row.push(cell(metric, best.get([router, w, p, c].join('|')) || {}, null));
      for (const v of seedCols) row.push(cell(metric, null, (f) => seedValue(w, c, p, v, f)));
      lines.push('| ' + row.join(' | ') + ' |');
    }
  }
  return lines.join('\n');
}

// which tables each worker count gets: [metric, concurrencies, title note, extra]
function tablePlan(w) {
  const hitBound = { bound: (ww, p) => pct(upperBound(ww, p)) };
  const ctrBound = { bound: (ww, p) => fix(upperBound(ww, p) * MAX_CACHED_RATIO, 3) };
  if (w === 3) {
    return [
      ['hit', [8], '', hitBound],
      ['ctr', [8], '', ctrBound],
      ['ttft', [8], ' (seed: p99 only)', {}],
      ['rps', [8], '', {}],
      ['hit', [4, 16], ' (seed: KV routing only, from its upper-bound table)', hitBound],
      ['ttft', [16], ' (seed: the overload point only)', {}],
    ];
  }
  return [
    ['hit', [8], '', hitBound],
    ['ctr', [4, 16], '', ctrBound],
    ['ctr', [8], ' (seed: its hash-seed / approximate-mode table)', ctrBound],
    ['epp', [4], '', {}],
    ['ttft', [4, 16], '', {}],
    ['rps', [16], '', {}],
    ['ttft', [8], ' (seed: 2 types only, its frontend-hop note)', {}],
    ['rps', [8], ' (not in the seed)', {}],
    ['hit', [4, 16], ' (seed: KV routing only, from its upper-bound table)', hitBound],
  ];
}

function writeMarkdown(results, o, plots) {
  const best = pickBest(results);
  const workers = Array.from(new Set(o.workers.concat(results.map((r) => r.workers)))).sort((a, b) => b - a);
  const routers = Array.from(new Set(o.routers.concat(results.map((r) => r.router))));
  const prefixes = Array.from(new Set(o.prefixes.concat(results.map((r) => r.prefixes)))).sort((a, b) => a - b);
  const view = Object.assign({}, o, { routers, prefixes });
  const out = [];
  out.push('# kvroute bench: the seed-experiment grid');
  out.push('');
  out.push('Generated by `node bench/grid.js` from `grid.jsonl` (one JSON line per point, as printed by');
  out.push('`bench/kvbench run --json`); see `bench/GRID.md`. Do not edit by hand.');
  out.push('');
  out.push(`Seed columns: ${SEED_SOURCE}, medians of 3 runs;`);
  out.push('"baseline" = vLLM pods behind a Kubernetes Service, "round robin" / "KV routing" /');
  out.push('"approximate" = Dynamo\'s router modes. "–" = not measured (yet) / not reported by the seed.');
  out.push('Upper bound on the request hit rate = min(1, workers × 3.95 prompts / prefix types); the');
  out.push('cached-token ratio\'s bound is that × 2,032/2,371 (0.857). It is the seed\'s figure, not a strict');
  out.push('bound: only a prompt\'s 127 prefix blocks need to stay cached (585/127 = 4.6 prefixes per');
  out.push('engine while idle), so a router can exceed it where the cache is tight (3 workers, 24 types).');
  out.push('');
  const shown = results.filter((r) => best.get([r.router, r.workers, r.prefixes, r.concurrency].join('|')) === r);
  const runsSet = Array.from(new Set(shown.map((r) => r.runs_requested || r.runs || 1))).sort();
  const reqSet = Array.from(new Set(shown.map((r) => r.requests)));
  const tsSet = Array.from(new Set(shown.map((r) => r.time_scale)));
  const errs = shown.reduce((a, r) => a + (r.errors || 0), 0);
  const mism = shown.reduce((a, r) => a + (r.prompt_length_mismatches || 0), 0);
  out.push(`Measured: ${shown.length} points, ${reqSet.join('/') || DASH} requests each, ` +
    `runs per point ${runsSet.join('/') || DASH} (median), time scale ${tsSet.join('/') || DASH}; ` +
    `${errs} failed requests, ${mism} prompt-length mismatches in total.`);
  if (runsSet.length > 1) {
    // which points are medians of several runs
    const groups = new Map();
    for (const r of shown) {
      const k = `${r.workers} workers, concurrency ${r.concurrency}`;
      if (!groups.has(k)) groups.set(k, new Map());
      const g = groups.get(k);
      const runs = r.runs_requested || 1;
      g.set(runs, (g.get(runs) || 0) + 1);
    }
    const parts = [];
    for (const [k, g] of groups) {
      parts.push(`${k}: ` + Array.from(g).sort((a, b) => b[0] - a[0])
        .map(([runs, n]) => `${n} point${n > 1 ? 's' : ''} × ${runs} run${runs > 1 ? 's' : ''}`).join(', '));
    }
    out.push(`Runs per point: ${parts.join('; ')}.`);
  }
  if (shown.length) {
    const first = shown.map((r) => r.started_at).filter(Boolean).sort()[0];
    const last = shown.map((r) => r.started_at).filter(Boolean).sort().slice(-1)[0];
    const loads = shown.map((r) => r.loadavg_1m_before).filter((x) => typeof x === 'number');
    out.push(`Run between ${first} and ${last}` +
      (loads.length ? `; 1-minute load average before a point ${Math.min(...loads).toFixed(1)}–` +
        `${Math.max(...loads).toFixed(1)} (2 cores, shared).` : '.'));
  }
  out.push('');
  for (const w of workers) {
    out.push(`## ${w} workers`);
    out.push('');
    for (const [metric, concs, note, extra] of tablePlan(w)) {
      const m = METRICS[metric];
      out.push(`### ${m.label[0].toUpperCase() + m.label.slice(1)}, concurrency ${concs.join(' and ')}${note}`);
      out.push('');
      out.push(table(best, view, w, metric, concs, extra));
      out.push('');
    }
    const ps = plots.filter((pl) => pl.workers === w);
    if (ps.length) {
      out.push('### Plots');
      out.push('');
      for (const pl of ps) out.push(`![${pl.title}](${pl.file})`);
      out.push('');
    }
  }
  const errored = shown.filter((r) => r.errors > 0 || r.prompt_length_mismatches > 0);
  if (errored.length) {
    out.push('## Points with failed requests or prompt-length mismatches');
    out.push('');
    for (const r of errored) {
      out.push(`- ${r.router}, ${r.workers} workers, ${r.prefixes} types, concurrency ${r.concurrency}: ` +
        `${r.errors} errors, ${r.prompt_length_mismatches} mismatches` +
        (r.first_error ? ` (first: \`${String(r.first_error).slice(0, 120)}\`)` : ''));
    }
    out.push('');
  }
  fs.writeFileSync(path.join(o.out, 'grid.md'), out.join('\n'));
}

// ---------------------------------------------------------------------------
// plots (gnuplot, bench/plot.gp)
// ---------------------------------------------------------------------------
function quote(s) {
  return '"' + String(s).replace(/"/g, "'") + '"';
}

// A data file: x = prefix types, then one column per measured router, the
// seed columns (drawn dashed) and the upper bound (dotted) if any.
// measured routers keep one colour in every plot
const ROUTER_COLOURS = { round_robin: '#9400d3', random_conn: '#009e73', hash: '#56b4e9', 'kvroute-approx': '#0072b2',
  dynamo: '#e69f00', 'kvroute-kv': '#cc79a7' };
const SPARE_COLOURS = ['#8b4513', '#2f4f4f', '#808000', '#ff1493', '#000080'];

function routerColour(router, allRouters) {
  if (ROUTER_COLOURS[router]) return ROUTER_COLOURS[router];
  const others = allRouters.filter((r) => !ROUTER_COLOURS[r]);
  return SPARE_COLOURS[others.indexOf(router) % SPARE_COLOURS.length];
}

// seed curves: grey for the non-KV baselines, red for Dynamo's KV routing
const SEED_COLOURS = { baseline: 'gray60', round_robin: 'gray30', kv: 'red', approximate: 'orange' };

function writePlotData(file, best, routers, prefixes, w, c, field, seedField, seedVariants, scale, bound) {
  const head = ['types'].concat(routers, seedVariants.map((v) => SEED_VARIANTS[v]), bound ? ['upper bound'] : []);
  const lines = [head.map(quote).join(' ')];
  for (const p of prefixes) {
    const row = [p];
    for (const router of routers) {
      const r = best.get([router, w, p, c].join('|'));
      row.push(r && typeof r[field] === 'number' ? r[field] * scale : '?');
    }
    for (const v of seedVariants) {
      const x = seedValue(w, c, p, v, seedField);
      row.push(x === null ? '?' : x * scale);
    }
    if (bound) row.push(bound(w, p) * scale);
    lines.push(row.join(' '));
  }
  fs.writeFileSync(file, lines.join('\n') + '\n');
}

function makePlots(results, o) {
  const best = pickBest(results);
  const have = spawnSync('gnuplot', ['--version'], { encoding: 'utf8' });
  if (have.status !== 0) {
    process.stderr.write('grid: gnuplot not found, no plots (apt-get install gnuplot-nox)\n');
    return [];
  }
  const workers = Array.from(new Set(results.map((r) => r.workers))).sort((a, b) => b - a);
  const routers = Array.from(new Set(o.routers.concat(results.map((r) => r.router))))
    .filter((rt) => results.some((r) => r.router === rt));
  const prefixes = Array.from(new Set(o.prefixes.concat(results.map((r) => r.prefixes)))).sort((a, b) => a - b);
  const dataDir = path.join(o.out, 'plotdata');
  fs.mkdirSync(dataDir, { recursive: true });
  const jobs = [];
  for (const w of workers) {
    const has = (c) => results.some((r) => r.workers === w && r.concurrency === c);
    if (has(8)) {
      jobs.push({ kind: 'hit', w, c: 8, field: 'request_hit_rate', seedField: 'hit', scale: 100,
        seedVariants: ['round_robin', 'kv'].filter((v) => hasSeed(w, [8], prefixes, v, 'hit')),
        bound: upperBound, ylabel: 'request hit rate (%)', yrange: '[0:105]',
        title: `Request hit rate, ${w} workers, concurrency 8` });
    }
    for (const c of (w === 3 ? [8, 16] : [16])) {
      if (!has(c)) continue;
      jobs.push({ kind: 'ttft_p99', w, c, field: 'ttft_p99_ms', seedField: 'p99', scale: 1,
        seedVariants: ['round_robin', 'kv'].filter((v) => hasSeed(w, [c], prefixes, v, 'p99')),
        bound: null, ylabel: 'TTFT p99 (ms)', yrange: '[0:*]',
        title: `TTFT p99, ${w} workers, concurrency ${c}` });
    }
  }
  const made = [];
  for (const j of jobs) {
    const base = `${j.kind}_w${j.w}_c${j.c}`;
    const plotted = routers.filter((rt) => results.some((r) => r.router === rt && r.workers === j.w &&
      r.concurrency === j.c));
    const dat = path.join(dataDir, base + '.dat');
    const png = path.join(o.out, base + '.png');
    writePlotData(dat, best, plotted, prefixes, j.w, j.c, j.field, j.seedField, j.seedVariants, j.scale, j.bound);
    const defs = [
      `datafile=${quote(dat)}`, `outfile=${quote(png)}`, `plottitle=${quote(j.title)}`,
      `ylab=${quote(j.ylabel)}`, `yr=${quote(j.yrange)}`, `nmeasured=${plotted.length}`,
      `nseed=${j.seedVariants.length}`, `hasbound=${j.bound ? 1 : 0}`,
      `xtics=${quote('(' + prefixes.join(', ') + ')')}`,
      `measuredcolors=${quote(plotted.map((rt) => routerColour(rt, routers)).join(' '))}`,
      `seedcolors=${quote(j.seedVariants.map((sv) => SEED_COLOURS[sv]).join(' '))}`,
    ].join('; ');
    const g = spawnSync('gnuplot', ['-e', defs, PLOT_GP], { encoding: 'utf8' });
    if (g.status !== 0) {
      process.stderr.write(`grid: gnuplot failed for ${base}: ${g.stderr}\n`);
      continue;
    }
    made.push({ workers: j.w, file: base + '.png', title: j.title });
  }
  return made;
}

// ---------------------------------------------------------------------------
// --check: the SEED constant against the tables of seed-experiment.md, read
// independently (catches transcription slips)
// ---------------------------------------------------------------------------
const SEED_DOC = '/work/shared/docs/seed-experiment.md';

// rows (arrays of cells) of the first markdown table after the line that
// starts with `caption`
function docTable(lines, caption) {
  let i = lines.findIndex((l) => l.startsWith(caption));
  if (i < 0) throw new Error(`table "${caption}" not found`);
  while (i < lines.length && !lines[i].startsWith('|')) i++;
  const rows = [];
  for (i += 2; i < lines.length && lines[i].startsWith('|'); i++) {
    rows.push(lines[i].split('|').slice(1, -1).map((c) => c.trim()));
  }
  return rows;
}

// numbers in a cell: "1,353 ms" -> [1353], "0.840 / 0.840 / 0.848" -> 3
function nums(cellText) {
  return (cellText.replace(/,/g, '').match(/\d+(\.\d+)?/g) || []).map(Number);
}

function checkSeed(docPath) {
  const lines = fs.readFileSync(docPath, 'utf8').split('\n');
  const problems = [];
  let compared = 0;
  // tol: the upper-bound table repeats conc-8 hit rates rounded to 1%
  const same = (w, c, p, variant, field, want, scale, tol = 1e-6) => {
    compared++;
    const got = seedValue(w, c, p, variant, field);
    if (got === null || Math.abs(got * scale - want) > tol) {
      problems.push(`w${w} c${c} p${p} ${variant}.${field}: constant ${got}, document ${want / scale}`);
    }
  };
  const V3 = ['baseline', 'round_robin', 'kv'];
  for (const r of docTable(lines, 'Request hit rate (6 workers, concurrency 8)')) {
    V3.forEach((v, k) => same(6, 8, Number(r[0]), v, 'hit', nums(r[k + 1])[0], 100));
  }
  for (const r of docTable(lines, 'Cached-token ratio (6 workers')) {
    V3.forEach((v, k) => same(6, Number(r[1]), Number(r[0]), v, 'ctr', nums(r[k + 2])[0], 1));
  }
  for (const r of docTable(lines, 'Distinct workers one prefix')) {
    ['round_robin', 'kv'].forEach((v, k) => same(6, 4, Number(r[0]), v, 'epp', nums(r[k + 1])[0], 1));
  }
  for (const r of docTable(lines, 'TTFT p50 / p99 (6 workers)')) {
    V3.forEach((v, k) => {
      const [p50, p99] = nums(r[k + 2]);
      same(6, Number(r[1]), Number(r[0]), v, 'p50', p50, 1);
      same(6, Number(r[1]), Number(r[0]), v, 'p99', p99, 1);
    });
  }
  for (const r of docTable(lines, 'Throughput, requests/s (6 workers, concurrency 16)')) {
    V3.forEach((v, k) => same(6, 16, Number(r[0]), v, 'rps', nums(r[k + 1])[0], 1));
  }
  for (const r of docTable(lines, '3 workers (one per GPU), concurrency 8')) {
    ['ctr', 'p99', 'rps'].forEach((f, k) => {
      nums(r[k + 1]).forEach((x, j) => same(3, 8, Number(r[0]), V3[j], f, x, 1));
    });
  }
  for (const r of docTable(lines, 'Upper bound on request hit rate')) {
    const w = nums(r[0])[0];
    const p = Number(r[1]);
    const bound = nums(r[2])[0];
    compared++;
    if (Math.abs(100 * upperBound(w, p) - bound) > 0.5) {
      problems.push(`upper bound w${w} p${p}: computed ${pct(upperBound(w, p))}, document ${bound}%`);
    }
    nums(r[3]).forEach((x, j) => same(w, [4, 8, 16][j], p, 'kv', 'hit', x, 100, 0.5));
  }
  for (const r of docTable(lines, '## Hash seed and approximate mode')) {
    same(6, 8, Number(r[0]), 'round_robin', 'ctr', nums(r[1])[0], 1);
    same(6, 8, Number(r[0]), 'kv', 'ctr', nums(r[2])[0], 1);
    same(6, 8, Number(r[0]), 'approximate', 'ctr', nums(r[4])[0], 1);
  }
  return { compared, problems };
}

// ---------------------------------------------------------------------------
let stopping = false;

async function main() {
  const { values: v, positionals } = parseArgs({ args: process.argv.slice(2), options: SPEC, strict: true,
    allowPositionals: true });
  if (v.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (v.check) {
    const { compared, problems } = checkSeed(positionals[0] || SEED_DOC);
    for (const p of problems) process.stdout.write(`mismatch: ${p}\n`);
    process.stdout.write(`${compared} seed figures compared, ${problems.length} mismatches\n`);
    return problems.length || compared === 0 ? 1 : 0;
  }
  if (positionals.length) throw new Error(`unexpected argument ${positionals[0]}`);
  const known = Object.keys(routerTable(path.dirname(BENCH), path.join(path.dirname(BENCH), 'build')));
  const o = {
    routers: v.routers === undefined ? DEFAULT_ROUTERS.filter((r) => known.includes(r))
      : v.routers.split(',').filter((x) => x !== ''),
    workers: intList(v.workers, 'workers'),
    prefixes: intList(v.prefixes, 'prefixes'),
    concurrency: intList(v.concurrency, 'concurrency'),
    runs: posInt(v.runs, 'runs'),
    requests: posInt(v.requests, 'requests'),
    seed: posInt(v.seed, 'seed'),
    out: path.resolve(v.out),
    timeScale: Number(v['time-scale']),
    port: posInt(v.port, 'port'),
    build: v.build,
    resume: v.resume,
  };
  if (v.until !== undefined) {
    const m = /^(\d{1,2}):(\d{2})$/.exec(v.until);
    if (!m || Number(m[1]) > 23 || Number(m[2]) > 59) throw new Error('--until: expected HH:MM (UTC)');
    o.until = new Date();
    o.until.setUTCHours(Number(m[1]), Number(m[2]), 0, 0);
  }
  if (!(o.timeScale > 0)) throw new Error('--time-scale must be > 0');
  if (o.runs < 1 || o.requests < 1) throw new Error('--runs and --requests must be >= 1');
  if (o.routers.length === 0) throw new Error('--routers: empty list');
  const unknown = o.routers.filter((r) => !known.includes(r));
  if (unknown.length && !v['table-only']) {
    throw new Error(`unknown router(s) ${unknown.join(', ')}; bench/kvbench routers lists: ${known.join(', ')}`);
  }
  fs.mkdirSync(o.out, { recursive: true });
  let failed = 0;
  if (!v['table-only']) failed = await runGrid(o);
  if (stopping) return 130;
  const results = readResults(path.join(o.out, 'grid.jsonl'));
  const plots = v['no-plots'] ? [] : makePlots(results, o);
  writeMarkdown(results, o, plots);
  process.stderr.write(`grid: wrote ${path.join(o.out, 'grid.md')} and ${plots.length} plots\n`);
  return failed ? 1 : 0;
}

// only when grid.js is the program: the fitting tools require it for the
// seed's tables (fidelity/cells.js), and a handler installed there would
// keep them from stopping on SIGINT or SIGTERM while they compute
function stopOnSignals() {
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`grid: ${sig}, stopping the running point (its result is not recorded)\n`);
      if (child) {
        // kvbench stops its emulator and nginx on SIGTERM
        child.kill('SIGTERM');
        child.once('close', () => process.exit(130));
      } else {
        process.exit(130);
      }
    });
  }
}

if (require.main === module) {
  stopOnSignals();
  main().then((code) => process.exit(code), (err) => {
    process.stderr.write(`grid: ${err.message}\n`);
    process.exit(2);
  });
}

module.exports = { SEED, seedValue, upperBound, pointKey, pickBest, readResults };
