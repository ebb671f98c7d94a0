#!/usr/bin/env node
'use strict';
// Open-loop goodput: for each router, a sweep of Poisson arrival rates at
// one grid point, and the highest rate whose steady-state TTFT p99 stays at
// or under a limit (1 s).  Closed-loop clients slow down when the engines
// do, and hide what a router's queues cost; arrivals that do not wait show
// it.  Every point is run by kvbench (--rate, --skip) and kept in
// OUT.jsonl; OUT.md holds the table, OUT.png the plot.
//
//   bench/sweep.js --routers dynamo,kvroute-kv --workers 6 --prefixes 24 \
//       --rates 4,6,8,10,12 [--runs 3] [--requests 720] [--skip 96]
//       [--time-scale 1] [--limit-ms 1000] [--out bench/results/goodput-6w24]
//       [--resume] [--pool a.jsonl,b.jsonl] [--table-only]
//       [-- extra kvbench arguments]
//
// --pool adds the points of other sweeps' rows (the same workers and
// types): a point run in several sweeps then shows the median over all
// their runs.  --table-only runs nothing and writes OUT.md/.png from the
// rows.  Besides the goodput read off the grid, the table gives where the
// p99 crosses the limit, interpolated between the last rate that held and
// the first that broke it: the grid's step bounds the goodput from below,
// the crossing estimates it.

const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { spawnSync } = require('node:child_process');

const BENCH = __dirname;

const SPEC = {
  routers: { type: 'string', default: 'round_robin,dynamo,kvroute-kv' },
  workers: { type: 'string', default: '6' },
  prefixes: { type: 'string', default: '24' },
  rates: { type: 'string', default: '4,6,8,10,12' },
  runs: { type: 'string', default: '3' },
  requests: { type: 'string', default: '720' },
  skip: { type: 'string', default: '96' },
  clients: { type: 'string', default: '16' },
  'time-scale': { type: 'string', default: '1' },
  'limit-ms': { type: 'string', default: '1000' },
  out: { type: 'string', default: path.join(BENCH, 'results', 'goodput') },
  resume: { type: 'boolean', default: false },
  pool: { type: 'string', default: '' },
  'table-only': { type: 'boolean', default: false },
};

// The highest offered rate whose p99 held, counting only rates below the
// first that failed: a router that recovers at a higher rate by luck does
// not get that rate.
function goodput(points, limitMs) {
  let best = null;
  for (const p of points.slice().sort((a, b) => a.rate - b.rate)) {
    if (p.ttft_p99_ms === null || p.ttft_p99_ms > limitMs) break;
    best = p.rate;
  }
  return best;
}

// Where the p99 crosses limitMs: linear between the last rate that held
// (below the first that broke) and that first broken rate; null when no
// rate held or none broke.
function crossing(points, limitMs) {
  const sorted = points.filter((p) => p.ttft_p99_ms !== null && p.ttft_p99_ms !== undefined)
    .sort((a, b) => a.rate - b.rate);
  let held = null;
  for (const p of sorted) {
    if (p.ttft_p99_ms > limitMs) {
      if (!held) return null;
      const f = (limitMs - held.ttft_p99_ms) / (p.ttft_p99_ms - held.ttft_p99_ms);
      return Math.round((held.rate + f * (p.rate - held.rate)) * 10) / 10;
    }
    held = p;
  }
  return null;
}

// One point a (router, rate) from rows of one or several sweeps: each
// figure the median over every run of every row (kvbench's each_run, or
// the row itself when it ran once).
function poolPoints(rows) {
  const median = (xs) => {
    const v = xs.filter((x) => typeof x === 'number').sort((a, b) => a - b);
    if (!v.length) return null;
    const m = v.length >> 1;
    return v.length % 2 ? v[m] : Math.round((v[m - 1] + v[m]) / 2 * 10) / 10;
  };
  const groups = new Map();
  for (const r of rows) {
    const key = `${r.router}\u0000${r.rate}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(r);
  }
  const out = [];
  for (const group of groups.values()) {
    if (group.length === 1) {
      out.push(group[0]);
      continue;
    }
    const runs = [];
    for (const r of group) {
      const each = r.result && r.result.each_run;
      if (each && each.length) runs.push(...each);
      else runs.push(r.result || { steady: r, emulator: { clock_ok: r.clock_ok } });
    }
    const st = (k) => median(runs.map((x) => (x.steady || {})[k]));
    out.push({ router: group[0].router, rate: group[0].rate, workers: group[0].workers,
      prefixes: group[0].prefixes, ttft_p50_ms: st('ttft_p50_ms'), ttft_p99_ms: st('ttft_p99_ms'),
      requests_per_s: st('requests_per_s'), cached_token_ratio: st('cached_token_ratio'),
      request_hit_rate: st('request_hit_rate'), runs: runs.length,
      clock_ok: runs.every((x) => !x.emulator || x.emulator.clock_ok !== false) });
  }
  return out;
}

function kvbench(args) {
  const r = spawnSync(process.execPath, [path.join(BENCH, 'kvbench'), 'run', ...args, '--json'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 });
  const line = (r.stdout || '').trim().split('\n').pop();
  try {
    return JSON.parse(line);
  } catch (e) {
    throw new Error(`kvbench ${args.join(' ')}: exit ${r.status}, no result`);
  }
}

function writeOutputs(o, rows) {
  const byRouter = new Map();
  for (const r of rows) {
    if (!byRouter.has(r.router)) byRouter.set(r.router, []);
    byRouter.get(r.router).push(r);
  }
  const rates = Array.from(new Set(rows.map((r) => r.rate))).sort((a, b) => a - b);
  const md = [`# Open-loop goodput, ${o.workers} workers, ${o.prefixes} prefix types`, '',
    `Poisson arrivals, ${o.requests} requests a run, the first ${o.skip} not counted, ` +
    `median of ${o.runs} runs (of every run, where a point ran in several sweeps: the cell says how many), ` +
    `time scale ${o.timeScale}. A cell: steady-state TTFT p99 ms / ` +
    `requests/s finished. Goodput: the highest rate whose p99 stays at or under ${o.limitMs} ms, ` +
    `below the first rate that broke it; "crossed at": where the p99 passes ${o.limitMs} ms, ` +
    `interpolated between those two rates.`,
    '', `Reproduce: \`bench/sweep.js --routers ${Array.from(byRouter.keys()).join(',')} ` +
    `--workers ${o.workers} --prefixes ${o.prefixes} --rates ${rates.join(',')} --runs ${o.runs} ` +
    `--time-scale ${o.timeScale}\``, '',
    `| router | ${rates.map((x) => `${x}/s`).join(' | ')} | goodput | ${o.limitMs} ms crossed at |`,
    `|---|${rates.map(() => '---').join('|')}|---|---|`];
  const gp = {};
  for (const [router, pts] of byRouter) {
    const cells = rates.map((rate) => {
      const p = pts.find((x) => x.rate === rate);
      return p ? `${p.ttft_p99_ms} / ${p.requests_per_s}${p.runs ? ` (${p.runs} runs)` : ''}` +
        `${p.clock_ok ? '' : ' (late clock)'}` : '';
    });
    gp[router] = goodput(pts, o.limitMs);
    const cross = crossing(pts, o.limitMs);
    md.push(`| ${router} | ${cells.join(' | ')} | ${gp[router] === null ? 'below ' + rates[0] : gp[router] + '/s'} | ` +
      `${cross === null ? '' : cross + '/s'} |`);
  }
  fs.writeFileSync(`${o.out}.md`, md.join('\n') + '\n');
  // plot: p99 against the offered rate, one line a router, the limit dashed
  const data = [['rate', ...byRouter.keys()].map((s) => `"${s}"`).join(' ')];
  for (const rate of rates) {
    data.push([rate, ...Array.from(byRouter.values()).map((pts) => {
      const p = pts.find((x) => x.rate === rate);
      return p && p.ttft_p99_ms !== null ? p.ttft_p99_ms : '?';
    })].join(' '));
  }
  fs.writeFileSync(`${o.out}.dat`, data.join('\n') + '\n');
  const n = byRouter.size;
  const script = [
    'set terminal pngcairo size 900,560 enhanced font "Sans,11"', `set output "${o.out}.png"`,
    'set datafile missing "?"', 'set key left top box noenhanced', 'set grid',
    `set title "TTFT p99 against the offered rate, ${o.workers} workers, ${o.prefixes} types (open loop)" noenhanced`,
    'set xlabel "offered requests/s"', 'set ylabel "steady-state TTFT p99, ms"', 'set logscale y',
    `plot for [i=2:${n + 1}] "${o.out}.dat" using 1:i with linespoints lw 2 title columnheader(i), ` +
    `${o.limitMs} with lines dt 2 lc "gray40" title "limit"`].join('\n');
  const g = spawnSync('gnuplot', [], { input: script, encoding: 'utf8' });
  if (g.status !== 0) process.stderr.write(`sweep: gnuplot: ${g.stderr || g.error}\n`);
  return gp;
}

function main() {
  const argv = process.argv.slice(2);
  const dash = argv.indexOf('--');
  const extra = dash >= 0 ? argv.slice(dash + 1) : [];
  const { values: v } = parseArgs({ args: dash >= 0 ? argv.slice(0, dash) : argv, options: SPEC, strict: true });
  const o = {
    routers: v.routers.split(','), workers: Number(v.workers), prefixes: Number(v.prefixes),
    rates: v.rates.split(',').map(Number), runs: Number(v.runs), requests: Number(v.requests),
    skip: Number(v.skip), clients: Number(v.clients), timeScale: Number(v['time-scale']),
    limitMs: Number(v['limit-ms']), out: v.out,
  };
  if (o.rates.some((x) => !(x > 0))) throw new Error('--rates: positive numbers');
  fs.mkdirSync(path.dirname(o.out), { recursive: true });
  const jsonl = `${o.out}.jsonl`;
  const rows = (v.resume || v['table-only']) && fs.existsSync(jsonl)
    ? fs.readFileSync(jsonl, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  if (!v.resume && !v['table-only']) fs.writeFileSync(jsonl, '');
  for (const rate of v['table-only'] ? [] : o.rates) {
    for (const router of o.routers) {
      if (rows.some((r) => r.router === router && r.rate === rate)) continue;
      const res = kvbench(['--router', router, '--workers', String(o.workers), '--prefixes', String(o.prefixes),
        '--concurrency', String(o.clients), '--requests', String(o.requests), '--skip', String(o.skip),
        '--rate', String(rate), '--runs', String(o.runs), '--time-scale', String(o.timeScale), ...extra]);
      const s = res.steady || {};
      const row = { router, rate, workers: o.workers, prefixes: o.prefixes, ttft_p50_ms: s.ttft_p50_ms,
        ttft_p99_ms: s.ttft_p99_ms, requests_per_s: s.requests_per_s, cached_token_ratio: s.cached_token_ratio,
        request_hit_rate: s.request_hit_rate, errors: res.errors,
        clock_ok: res.emulator ? res.emulator.clock_ok : null, result: res };
      rows.push(row);
      fs.appendFileSync(jsonl, JSON.stringify(row) + '\n');
      process.stderr.write(`sweep: ${router} at ${rate}/s: p99 ${row.ttft_p99_ms} ms, ` +
        `${row.requests_per_s} requests/s, ctr ${row.cached_token_ratio}\n`);
    }
  }
  const pooled = v.pool ? v.pool.split(',').flatMap((f) => fs.readFileSync(f, 'utf8').split('\n')
    .filter(Boolean).map((l) => JSON.parse(l))).filter((r) => r.workers === o.workers && r.prefixes === o.prefixes) : [];
  const gp = writeOutputs(o, poolPoints(rows.concat(pooled)));
  for (const [router, g] of Object.entries(gp)) process.stdout.write(`${router}: goodput ${g === null ? 'none' : g + '/s'}\n`);
  return 0;
}

if (require.main === module) {
  try {
    process.exit(main());
  } catch (e) {
    process.stderr.write(`sweep: ${e.message}\n`);
    process.exit(1);
  }
}

module.exports = { goodput, crossing, poolPoints };
