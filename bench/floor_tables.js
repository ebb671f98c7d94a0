#!/usr/bin/env node
'use strict';
// Issue #18's floors 1-4 as one table and one plot each, every policy in
// the same columns: requests/s, TTFT p50 / p99, cached-token ratio, at
// each point of the seed's grid (workers / prefix types / concurrency);
// floor 4, approximate mode's cached-token ratio against kv mode's, when
// the rows hold approximate mode's.
//
//   node bench/floor_tables.js --out DIR [--title TEXT] [--kvroute NAME]
//       [--approx NAME] [--only NAME,NAME...] [--note TEXT] FILE.jsonl...
//
// A file holds rows of bench/sim/floors.js (--jsonl: medians over its
// seeds) or of bench/kvbench run --json (its steady figures: the first
// --skip requests not counted), bare or as {w, p, c, router, row}. Rows of
// one policy at one point are taken as runs: each figure is their median.
// --only keeps the rows of the policies or routers named (as in the rows).
// --kvroute names the row judged against the floors (default: kvroute
// with metrics=on, the simulator's or kvbench's); --approx the approximate
// mode's row compared with it (default: approximate mode with metrics=on).
// Writes DIR/floor1_requests, DIR/floor2_ttft, DIR/floor3_cached and, with
// approximate rows, DIR/floor4_approx, each .md, .dat and .png (gnuplot).

const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { parseArgs } = require('node:util');

// the columns' order and names; others follow in the order first seen
const NAMES = [
  ['round_robin', 'round robin'],
  ['random_conn', 'random'],
  ['llmd', 'llm-d'],
  ['sglang', 'SGLang cache_aware'],
  ['dynamo', 'Dynamo'],
  ['partition', 'partition (oracle)'],
  ['kvroute ttft', 'kvroute kv'],
  ['kvroute-kv', 'kvroute kv'],
  ['kvroute ttft+speed own=0', 'kvroute kv metrics=on ttft_own=0'],
  ['kvroute-kv-speed600', 'kvroute kv metrics=on ttft_own=0'],
  ['kvroute ttft+speed decode=600', 'kvroute kv metrics=on ttft_decode=600'],
  ['kvroute-kv-own50', 'kvroute kv metrics=on ttft_decode=600'],
  ['kvroute ttft+speed', 'kvroute kv metrics=on'],
  ['kvroute-kv-own50-dec300', 'kvroute kv metrics=on'],
  ['kvroute-approx', 'kvroute approx'],
  ['kvroute-approx-metrics', 'kvroute approx metrics=on ttft_decode=600'],
  ['kvroute-approx-metrics-dec300', 'kvroute approx metrics=on'],
];
const LABEL = new Map(NAMES);
const DEFAULT_KVROUTE = 'kvroute kv metrics=on';
const DEFAULT_APPROX = 'kvroute approx metrics=on';
const APPROX_LIMIT = 0.05;

const median = (xs) => {
  const a = xs.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((x, y) => x - y);
  if (!a.length) return null;
  return a.length % 2 ? a[(a.length - 1) / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
};

// one row of either source as {w, p, c, name, rps, p50, p99, ctr, runs}
function normalise(x) {
  if (x.policy !== undefined) {
    return { w: x.w, p: x.p, c: x.c, name: x.policy, rps: x.requests_per_s, p50: x.ttft_p50_ms,
      p99: x.ttft_p99_ms, ctr: x.cached_token_ratio, runs: x.runs || 1, source: 'simulator' };
  }
  const r = x.row || x;
  if (!r || !r.router || !r.steady) return null;
  const s = r.steady;
  return { w: r.workers, p: r.prefixes, c: r.concurrency, name: r.router, rps: s.requests_per_s,
    p50: s.ttft_p50_ms, p99: s.ttft_p99_ms, ctr: s.cached_token_ratio, runs: r.runs || 1,
    source: 'kvbench' };
}

function load(files, only) {
  const cells = new Map();     // "w/p/c" -> label -> [rows]
  const order = [];
  for (const f of files) {
    for (const line of fs.readFileSync(f, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const r = normalise(JSON.parse(line));
      if (!r || (only && !only.includes(r.name))) continue;
      const label = LABEL.get(r.name) || r.name;
      if (!order.includes(label)) order.push(label);
      const k = `${r.w}/${r.p}/${r.c}`;
      if (!cells.has(k)) cells.set(k, new Map());
      const m = cells.get(k);
      if (!m.has(label)) m.set(label, []);
      m.get(label).push(r);
    }
  }
  const known = NAMES.map(([, l]) => l).filter((l, i, a) => a.indexOf(l) === i && order.includes(l));
  const labels = known.concat(order.filter((l) => !known.includes(l)));
  const points = [...cells.keys()].map((k) => k.split('/').map(Number))
    .sort((a, b) => b[0] - a[0] || a[1] - b[1] || a[2] - b[2]);
  const at = (w, p, c, label) => {
    const rs = cells.get(`${w}/${p}/${c}`)?.get(label);
    if (!rs) return null;
    const out = { runs: rs.reduce((a, r) => a + r.runs, 0) };
    for (const f of ['rps', 'p50', 'p99', 'ctr']) out[f] = median(rs.map((r) => r[f]));
    return out;
  };
  return { labels, points, at };
}

const f2 = (x) => (x === null || x === undefined ? '–' : x.toFixed(2));
const f0 = (x) => (x === null || x === undefined ? '–' : String(Math.round(x)));
const f3 = (x) => (x === null || x === undefined ? '–' : x.toFixed(3));
const ratio = (a, b) => (a === null || b === null || !b ? null : a / b);
const pt = ([w, p, c]) => `${w}w/${p}/c${c}`;

function writeDat(file, labels, points, value) {
  const lines = ['"i" "point" ' + labels.map((l) => JSON.stringify(l)).join(' ')];
  points.forEach((q, i) => {
    lines.push(`${i + 1} ${pt(q)} ` + labels.map((l) => {
      const v = value(q, l);
      return v === null || v === undefined ? 'NaN' : v.toFixed(4);
    }).join(' '));
  });
  fs.writeFileSync(file, lines.join('\n') + '\n');
}

function plot(dat, png, title, ylab, yr, floor, logy, ncols) {
  try {
    const q = (x) => x.replace(/['\\]/g, '');
    execFileSync('gnuplot', ['-e', `datafile='${q(dat)}'; outfile='${q(png)}'; plottitle='${q(title)}'; ` +
      `ylab='${q(ylab)}'; yr='${yr}'; floor=${floor}; logy=${logy ? 1 : 0}; ncols=${ncols}`,
    path.join(__dirname, 'floor_plot.gp')], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    process.stderr.write(`gnuplot: ${png} not drawn (${e.message.split('\n')[0]})\n`);
  }
}

function main() {
  const { values: v, positionals: files } = parseArgs({ allowPositionals: true, options: {
    out: { type: 'string' },
    title: { type: 'string', default: 'issue #18' },
    kvroute: { type: 'string', default: DEFAULT_KVROUTE },
    approx: { type: 'string', default: DEFAULT_APPROX },
    note: { type: 'string', default: '' },
    only: { type: 'string' },
  } });
  if (!v.out || !files.length) {
    process.stderr.write('usage: node bench/floor_tables.js --out DIR [--title T] [--kvroute NAME] [--approx NAME] [--only N,N] [--note T] FILE.jsonl...\n');
    process.exit(2);
  }
  fs.mkdirSync(v.out, { recursive: true });
  const { labels, points, at } = load(files, v.only ? v.only.split(',') : null);
  const me = LABEL.get(v.kvroute) || v.kvroute;
  if (!labels.includes(me)) throw new Error(`no rows of ${v.kvroute}; have ${labels.join(', ')}`);
  if (!labels.includes('Dynamo')) throw new Error('no Dynamo rows to judge against');
  const runs = [...new Set(points.flatMap((q) => labels.map((l) => at(...q, l)?.runs).filter(Boolean)))]
    .sort((a, b) => a - b);
  const head = (what) => [`# Issue #18, ${what}: ${v.title}`, '',
    `Generated by \`node bench/floor_tables.js\` from ${files.map((f) => '`' + path.basename(f) + '`').join(', ')}; ` +
    'do not edit by hand. A cell is the median of its rows (runs in a cell: ' +
    `${runs.join(', ')}; a row of several runs is their median); kvbench rows give their steady figures (the first requests not counted). ` +
    `Judged: **${me}**.` + (v.note ? ' ' + v.note : ''), ''];
  const cols = labels.filter((l) => points.some((q) => at(...q, l)));
  const ncols = cols.length + 2;

  // floor 1: requests/s
  {
    let met = 0; let n = 0;
    const md = head('floor 1, requests/s').concat([
      `| point | ${cols.join(' | ')} | ${me} / Dynamo |`,
      `|---|${cols.map(() => '---').join('|')}|---|`]);
    for (const q of points) {
      const r = ratio(at(...q, me)?.rps ?? null, at(...q, 'Dynamo')?.rps ?? null);
      if (r !== null) { n++; if (r >= 0.98) met++; }
      md.push(`| ${pt(q)} | ${cols.map((l) => f2(at(...q, l)?.rps)).join(' | ')} | ` +
        `${r === null ? '–' : (r >= 0.98 ? '' : '**') + f3(r) + (r >= 0.98 ? '' : '**')} |`);
    }
    const hl = [[6, 24, 16], [3, 24, 8]].filter((q) => at(...q, me) && at(...q, 'Dynamo')).map((q) =>
      `${pt(q)} ${f3(ratio(at(...q, me)?.rps ?? null, at(...q, 'Dynamo')?.rps ?? null))}x`);
    md.push('', `At least 0.98x Dynamo's requests/s at **${met} of ${n}** points (bold: under). ` +
      `The 1.10x points: ${hl.length ? hl.join(', ') : 'not measured'}.`);
    fs.writeFileSync(path.join(v.out, 'floor1_requests.md'), md.join('\n') + '\n');
    const dat = path.join(v.out, 'floor1_requests.dat');
    writeDat(dat, cols, points, (q, l) => ratio(at(...q, l)?.rps ?? null, at(...q, 'Dynamo')?.rps ?? null));
    plot(dat, path.join(v.out, 'floor1_requests.png'), `${v.title}: requests/s against Dynamo`,
      'requests/s / Dynamo', '[0.4:2.4]', 0.98, false, ncols);
  }

  // floor 2: TTFT p99 (7+ types) and p50
  {
    let p99 = 0; let p99n = 0; let p50 = 0; let p50n = 0;
    const md = head('floor 2, TTFT p50 / p99 (ms)').concat([
      `| point | ${cols.join(' | ')} | ${me}: p99 / Dynamo's | p50 / Dynamo's |`,
      `|---|${cols.map(() => '---').join('|')}|---|---|`]);
    for (const q of points) {
      const mine = at(...q, me);
      const d = at(...q, 'Dynamo');
      const r99 = ratio(mine?.p99 ?? null, d?.p99 ?? null);
      const r50 = ratio(mine?.p50 ?? null, d?.p50 ?? null);
      const judged99 = q[1] >= 7 && r99 !== null;
      if (judged99) { p99n++; if (r99 <= 1) p99++; }
      if (r50 !== null) { p50n++; if (r50 <= 1.1) p50++; }
      const m99 = r99 === null ? '–' : (!judged99 ? `(${f3(r99)})` : (r99 <= 1 ? f3(r99) : `**${f3(r99)}**`));
      const m50 = r50 === null ? '–' : (r50 <= 1.1 ? f3(r50) : `**${f3(r50)}**`);
      md.push(`| ${pt(q)} | ${cols.map((l) => { const x = at(...q, l); return x ? `${f0(x.p50)} / ${f0(x.p99)}` : '–'; }).join(' | ')} | ${m99} | ${m50} |`);
    }
    md.push('', `TTFT p99 at most Dynamo's at **${p99} of ${p99n}** points with 7 or more types ` +
      `(in brackets: 2 types, not judged); p50 at most 1.1x Dynamo's at **${p50} of ${p50n}** (bold: over).`);
    fs.writeFileSync(path.join(v.out, 'floor2_ttft.md'), md.join('\n') + '\n');
    const dat = path.join(v.out, 'floor2_ttft.dat');
    writeDat(dat, cols, points, (q, l) => ratio(at(...q, l)?.p99 ?? null, at(...q, 'Dynamo')?.p99 ?? null));
    plot(dat, path.join(v.out, 'floor2_ttft.png'), `${v.title}: TTFT p99 against Dynamo`,
      'TTFT p99 / Dynamo (log scale)', '[0.2:8]', 1, true, ncols);
  }

  // floor 3: cached-token ratio against the partition oracle's
  {
    const judged = [[6, 24, 4], [6, 24, 8], [6, 24, 16], [3, 24, 8]];
    const md = head('floor 3, steady cached-token ratio').concat([
      `| point | ${cols.join(' | ')} | ${me} / partition's |`,
      `|---|${cols.map(() => '---').join('|')}|---|`]);
    const out = [];
    for (const q of points) {
      const r = ratio(at(...q, me)?.ctr ?? null, at(...q, 'partition (oracle)')?.ctr ?? null);
      const isJudged = judged.some((j) => j.join() === q.join());
      if (isJudged && r !== null) out.push(`${pt(q)} ${f3(r)}`);
      md.push(`| ${isJudged ? '**' + pt(q) + '**' : pt(q)} | ${cols.map((l) => f3(at(...q, l)?.ctr)).join(' | ')} | ${r === null ? '–' : f3(r)} |`);
    }
    md.push('', `The floor (0.95x the partition's) is judged at the points in bold: ${out.length ? out.join(', ') : 'no partition rows'}.`);
    fs.writeFileSync(path.join(v.out, 'floor3_cached.md'), md.join('\n') + '\n');
    const dat = path.join(v.out, 'floor3_cached.dat');
    writeDat(dat, cols, points, (q, l) => ratio(at(...q, l)?.ctr ?? null, at(...q, 'partition (oracle)')?.ctr ?? null));
    if (out.length) plot(dat, path.join(v.out, 'floor3_cached.png'), `${v.title}: cached-token ratio against the partition`,
      'cached-token ratio / partition', '[0:1.6]', 0.95, false, ncols);
  }
  // floor 4: approximate mode's cached-token ratio within 0.05 of kv mode's
  const ap = LABEL.get(v.approx) || v.approx;
  const both = points.filter((q) => at(...q, ap) && at(...q, me));
  if (both.length) {
    let met = 0;
    const diff = (q) => at(...q, ap).ctr - at(...q, me).ctr;
    const md = head('floor 4, approximate mode against kv mode (steady cached-token ratio)').concat([
      `| point | ${ap} | ${me} | difference | within ${APPROX_LIMIT} |`, '|---|---|---|---|---|']);
    for (const q of both) {
      const d = diff(q);
      const ok = Math.abs(d) <= APPROX_LIMIT;
      if (ok) met++;
      md.push(`| ${pt(q)} | ${f3(at(...q, ap).ctr)} | ${f3(at(...q, me).ctr)} | ${d >= 0 ? '+' : ''}${f3(d)} | ${ok ? 'yes' : '**no**'} |`);
    }
    const worst = Math.max(...both.map((q) => Math.abs(diff(q))));
    md.push('', `Within ${APPROX_LIMIT} at **${met} of ${both.length}** points measured in both modes ` +
      `(of ${points.length} in the rows); the largest difference is ${f3(worst)}.`);
    fs.writeFileSync(path.join(v.out, 'floor4_approx.md'), md.join('\n') + '\n');
    const dat = path.join(v.out, 'floor4_approx.dat');
    const col = `|${ap} - ${me}|`;
    writeDat(dat, [col], both, (q) => Math.abs(diff(q)));
    plot(dat, path.join(v.out, 'floor4_approx.png'), `${v.title}: approximate against kv mode`,
      'cached-token ratio, |approximate - kv|', '[0:0.1]', APPROX_LIMIT, false, 3);
  }
  process.stdout.write(`wrote ${v.out}/floor{1_requests,2_ttft,3_cached${both.length ? ',4_approx' : ''}}.{md,dat,png}\n`);
}

if (require.main === module) main();

module.exports = { load, normalise, median };
