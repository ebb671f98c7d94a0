#!/usr/bin/env node
'use strict';
// The fidelity table: every cell of the seed's tables beside what the
// emulator gives through nginx, each point run as the seed ran it (median
// of 3 runs), and whether it is within tolerance (cells.js).
//
//   node bench/fidelity/fidelity.js [--runs 3] [--time-scale 2]
//       [--out bench/results] [--only W/C/P/VARIANT,...] [--resume]
//       [--table-only] [--name fidelity]
//
// The seed's variants as kvbench routers:
//   baseline     random: a Kubernetes Service picks an engine per
//                connection, and the seed's client opened one a request
//                (model.js SEED_BASELINE; random_conn when 'connection')
//   round_robin  round_robin
//   kv           dynamo: NVIDIA Dynamo's KV router on the engines' KV
//                events (loadgen/dynamo.js)
//   approximate  kvroute-dynamo: Dynamo's cost as kvroute states it,
//                predicted from kvroute's own decisions
// Every variant has the serving frontend's time (--frontend-us: vLLM's API
// server in the baseline, Dynamo's frontend in the others).
// Writes OUT/NAME.jsonl (one row a point: every run's figures, their
// medians, the commit, the upstream's kvroute line, the emulator's
// parameters, the clock's lateness) and OUT/NAME.md.

const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { parseArgs } = require('node:util');
const cells = require('./cells');
const { DEFAULT_MAX_TOKENS, SEED_BASELINE } = require('./model');
const { FRONTEND_US } = require('../emulator/options');

const BENCH = path.join(__dirname, '..');
const TOP = path.join(BENCH, '..');
const KVBENCH = path.join(BENCH, 'kvbench');
const GPUS = '24g,8g,8g';

const ROUTER = { baseline: SEED_BASELINE === 'request' ? 'random' : 'random_conn',
  round_robin: 'round_robin', kv: 'dynamo', approximate: 'kvroute-dynamo' };

function runPoint(pt, o) {
  const router = ROUTER[pt.variant];
  const frontendUs = FRONTEND_US;
  const args = ['run', '--router', router, '--workers', String(pt.w), '--prefixes', String(pt.p),
    '--concurrency', String(pt.c), '--requests', '240', '--seed', '1', '--runs', String(o.runs),
    '--time-scale', String(o.timeScale), '--gpus', GPUS, '--frontend-us', String(frontendUs),
    '--max-tokens', String(DEFAULT_MAX_TOKENS), '--port', '28000', '--base-port', '28001',
    '--events-base-port', '29081', '--json'];
  const r = spawnSync(KVBENCH, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  const last = (r.stdout || '').trim().split('\n').pop();
  let res = null;
  try { res = JSON.parse(last); } catch (e) { /* below */ }
  if (r.status !== 0 || !res) {
    throw new Error(`kvbench ${args.join(' ')} failed (${r.status}): ${(r.stderr || '').slice(-500)}`);
  }
  // where the figures came from, as kvbench recorded it (loadgen/provenance.js)
  const { commit, upstream, runs, emulator_params: emulatorParams, ...result } = res;
  return {
    key: `${pt.w}/${pt.c}/${pt.p}/${pt.variant}`, w: pt.w, c: pt.c, p: pt.p, variant: pt.variant,
    router, upstream, commit, runs, median_of: 'each field its median over the runs',
    emulator_params: emulatorParams, at: new Date().toISOString(), result,
  };
}

function fmt(x) {
  if (typeof x !== 'number') return 'n/a';
  return Math.abs(x) >= 10 ? (Math.round(x * 10) / 10).toString() : (Math.round(x * 1000) / 1000).toString();
}

function tableOf(rows, list) {
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const out = [];
  let ok = 0;
  let n = 0;
  out.push('| table | workers | conc. | types | variant | figure | seed | emulator | within |');
  out.push('|---|---|---|---|---|---|---|---|---|');
  for (const x of list) {
    const r = byKey.get(`${x.w}/${x.c}/${x.p}/${x.variant}`);
    const v = r ? r.result[cells.FIELD[x.field]] : null;
    const within = r ? cells.within(x, v) : null;
    if (r) { n++; if (within) ok++; }
    out.push(`| ${x.table} | ${x.w} | ${x.c} | ${x.p} | ${x.variant} | ${x.field} | ${x.seed} | ${fmt(v)} | ${within === null ? 'not run' : within ? 'yes' : '**no**'} |`);
  }
  return { text: out.join('\n'), ok, n };
}

// requests/s gain of KV routing over round robin, seed vs emulator
function gains(rows) {
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const out = ['| workers | conc. | types | seed req/s gain | emulator | within 10 pp | seed p99 change | emulator | same direction |',
    '|---|---|---|---|---|---|---|---|---|'];
  let ok = 0;
  let n = 0;
  let dirOk = 0;
  let dirN = 0;
  for (const [w, c] of [[6, 16], [3, 8]]) {
    for (const p of [2, 7, 12, 24]) {
      const seed = (f, v) => cells.MAIN.find((x) => x.w === w && x.c === c && x.p === p && x.variant === v && x.field === f);
      const rr = byKey.get(`${w}/${c}/${p}/round_robin`);
      const kv = byKey.get(`${w}/${c}/${p}/kv`);
      const sg = seed('rps', 'kv').seed / seed('rps', 'round_robin').seed - 1;
      const sp = seed('p99', 'kv') && seed('p99', 'round_robin') ? seed('p99', 'kv').seed / seed('p99', 'round_robin').seed - 1 : null;
      let eg = null;
      let ep = null;
      if (rr && kv) {
        eg = kv.result.requests_per_s / rr.result.requests_per_s - 1;
        ep = kv.result.ttft_p99_ms / rr.result.ttft_p99_ms - 1;
        n++;
        if (Math.abs(eg - sg) <= 0.10) ok++;
        if (sp !== null && c === 16) { dirN++; if (Math.sign(ep) === Math.sign(sp)) dirOk++; }
      }
      const pc = (x) => (x === null ? 'n/a' : `${x >= 0 ? '+' : ''}${Math.round(x * 100)}%`);
      out.push(`| ${w} | ${c} | ${p} | ${pc(sg)} | ${pc(eg)} | ${eg === null ? 'not run' : Math.abs(eg - sg) <= 0.10 ? 'yes' : '**no**'} | ${pc(sp)} | ${pc(ep)} | ${sp === null || ep === null ? '' : Math.sign(ep) === Math.sign(sp) ? 'yes' : '**no**'} |`);
    }
  }
  return { text: out.join('\n'), ok, n, dirOk, dirN };
}

function report(rows, o) {
  const main = tableOf(rows, cells.MAIN);
  const extra = tableOf(rows, cells.EXTRA);
  const g = gains(rows);
  const rps = tableOf(rows, cells.MAIN.filter((x) => x.field === 'rps'));
  const rrp99 = tableOf(rows, cells.MAIN.filter((x) => x.field === 'p99' && x.c === 16 && x.variant === 'round_robin'));
  const w3 = tableOf(rows, cells.MAIN.filter((x) => x.w === 3));
  const clockBad = rows.filter((r) => r.result.emulator && !r.result.emulator.clock_ok);
  const lines = [
    `# Fidelity: the emulator against the seed (${new Date().toISOString().slice(0, 16)}Z)`,
    '',
    `Commit ${rows.length ? rows[rows.length - 1].commit : 'n/a'}; ${o.runs} runs a point, each field the median over the runs; time scale ${o.timeScale}; ` +
      `GPUs ${GPUS}; regenerate with \`make fidelity\`. Tolerances: hit rate and cached-token ratio ±0.05, TTFT p50 ±25%, p99 ±40%, requests/s ±10%, workers per prefix ±0.75.`,
    '',
    `- Main cells within tolerance: **${main.ok}/${main.n}** (of ${cells.MAIN.length}).`,
    `- Requests/s: ${rps.ok}/${rps.n}. Round robin's TTFT p99 at c16: ${rrp99.ok}/${rrp99.n}. 3-worker cells: ${w3.ok}/${w3.n}.`,
    `- KV routing's requests/s gain over round robin within 10 points of the seed's: ${g.ok}/${g.n}; TTFT p99 change in the seed's direction at c16: ${g.dirOk}/${g.dirN}.`,
    `- Other cells (worker spread, approximate mode, upper-bound table, overload): ${extra.ok}/${extra.n}.`,
    `- Points whose emulator clock ran late (step-end lateness p99 over ${require('../loadgen/run').LATENESS_LIMIT_MS} model ms in a run): ${clockBad.length}${clockBad.length ? ' (' + clockBad.map((r) => r.key).join(', ') + ')' : ''}.`,
    '',
    '## Main cells', '', main.text, '',
    '## KV routing against round robin', '', g.text, '',
    '## Other cells', '', extra.text, '',
  ];
  return lines.join('\n');
}

function main() {
  const { values: v } = parseArgs({ options: {
    runs: { type: 'string', default: '3' },
    'time-scale': { type: 'string', default: '2' },
    out: { type: 'string', default: path.join(BENCH, 'results') },
    only: { type: 'string' },
    resume: { type: 'boolean', default: false },
    'table-only': { type: 'boolean', default: false },
    name: { type: 'string', default: 'fidelity' },
  } });
  const o = { runs: Number(v.runs), timeScale: Number(v['time-scale']) };
  const jsonl = path.join(v.out, `${v.name}.jsonl`);
  const md = path.join(v.out, `${v.name}.md`);
  fs.mkdirSync(v.out, { recursive: true });
  let rows = [];
  if (fs.existsSync(jsonl) && (v.resume || v['table-only'])) {
    rows = fs.readFileSync(jsonl, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  } else if (!v['table-only']) {
    fs.writeFileSync(jsonl, '');
  }
  if (!v['table-only']) {
    let pts = cells.pointsOf(cells.MAIN.concat(cells.EXTRA));
    if (v.only) {
      const want = new Set(v.only.split(','));
      pts = pts.filter((pt) => want.has(`${pt.w}/${pt.c}/${pt.p}/${pt.variant}`));
    }
    const done = new Set(rows.map((r) => r.key));
    for (const pt of pts) {
      const key = `${pt.w}/${pt.c}/${pt.p}/${pt.variant}`;
      if (done.has(key)) continue;
      process.stderr.write(`fidelity: ${key} ...\n`);
      const row = runPoint(pt, o);
      rows.push(row);
      fs.appendFileSync(jsonl, JSON.stringify(row) + '\n');
    }
  }
  fs.writeFileSync(md, report(rows, o));
  process.stdout.write(fs.readFileSync(md, 'utf8').split('\n').slice(0, 10).join('\n') + '\n');
}

if (require.main === module) main();

module.exports = { report, ROUTER };
