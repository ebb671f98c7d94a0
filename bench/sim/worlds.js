#!/usr/bin/env node
'use strict';
// Issue #18's floors in several fitted worlds, side by side with how well
// each world fits the seed's cells (BENCHMARKS §2.45). The seed's tables
// leave some of the model undetermined (§3.2: fitted on the 6-worker
// cells, worlds of opposite physics fit them alike), so a routing claim is
// only as good as the range of worlds it holds in.
//
//   node bench/sim/worlds.js --worlds FILE --out DIR [--seeds 1,2,3]
//       [--fit-seeds 1,2,3] [--jobs 2] [--policies LIST]
//       [--workers 6,3] [--prefixes 2,7,12,24] [--concurrency 4,8,16]
//
// FILE: one JSON line a world, {name, source, params}: params are fit.js's
// (over its defaults; a world fitted while decode_us_per_seq was searched
// carries its own). For each world floors.js writes DIR/NAME.jsonl (kept
// when it is already there and whole: delete it to run the world again);
// then the world's own fit is judged on the seed's 132 cells (fit.js, 240
// requests a point) and DIR/summary.md and DIR/summary.jsonl get one row
// a world.

require('./clock');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { parseArgs } = require('node:util');
const fit = require('../fidelity/fit');
const cells = require('../fidelity/cells');
const { SEED_BASELINE } = require('../fidelity/model');
const { judge } = require('./judge');

const DEFAULT_POLICIES = 'round_robin,llmd,sglang,dynamo,partition,kvroute ttft+speed';
const KVROUTE = 'kvroute ttft+speed';
const PEERS = ['llmd', 'sglang'];

function readWorlds(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => {
    const w = JSON.parse(l);
    if (!/^[A-Za-z0-9_.-]+$/.test(w.name || '')) throw new Error(`a world's name must be a file name: ${l}`);
    return Object.assign({}, w, { params: Object.assign(fit.defaultParams(), w.params || {}) });
  });
}

function readRows(file) {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
}

// floors.js for each world whose rows are missing, `jobs` at a time
async function runFloors(worlds, o) {
  // floors.js runs Dynamo, the yardstick, whether named or not
  const expected = o.points * new Set(o.policies.split(',').concat(['dynamo'])).size;
  const todo = worlds.filter((w) => readRows(path.join(o.out, `${w.name}.jsonl`)).length < expected);
  const one = (w) => new Promise((resolve, reject) => {
    const file = path.join(o.out, `${w.name}.jsonl`);
    if (fs.existsSync(file)) fs.unlinkSync(file);
    const args = [path.join(__dirname, 'floors.js'), '--world', JSON.stringify(w.params),
      '--policies', o.policies, '--seeds', o.seeds, '--workers', o.workers, '--prefixes', o.prefixes,
      '--concurrency', o.concurrency, '--jsonl', file];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`floors.js for ${w.name}: exit ${code}`))));
  });
  const queue = todo.slice();
  const worker = async () => { while (queue.length) await one(queue.shift()); };
  await Promise.all(Array.from({ length: Math.max(1, o.jobs) }, worker));
}

// a decoding request's time a step against the step's fixed work: how
// much one more request in flight slows every step of an engine
function decodeShare(prm) {
  return fit.simWorld(prm).timing.decodeUsPerSeq / (prm.baseUs + prm.gpuStepUs);
}

function summarise(w, rows, fitSeeds) {
  const j = judge(rows, KVROUTE, PEERS);
  const fitted = fit.summarize(fit.evaluate(w.params, cells.MAIN, fitSeeds, 240));
  const p = fit.provenance(w.params, fitSeeds);
  return {
    world: w.name, source: w.source || '', params: w.params, decode_share: decodeShare(w.params),
    fit: fitted, fit_seeds: fitSeeds, fit_requests: 240,
    floors: j, floor_seeds: rows.length ? rows[0].seeds : [], floor_commit: rows.length ? rows[0].commit : null,
    commit: p.commit, emulator_params: p.emulator_params,
  };
}

function table(sums) {
  const r3 = (x) => (Number.isFinite(x) ? x.toFixed(3) : '-');
  const lines = [
    '| world | laptop compute / step | decode a step / fixed work | cells (6w, 3w) | gains | kvroute req/s ≥ 0.98x Dynamo | range, geomean | 6w/24/c16, 3w/24/c8 | p99 ≤ Dynamo | p50 ≤ 1.1x | vs llm-d, SGLang (geomean) |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const s of sums) {
    const f = s.floors;
    const h = Object.values(f.headline).map((x) => `${r3(x)}x`).join(', ');
    const vs = PEERS.map((k) => (f.vs[k] ? `${r3(f.vs[k].geomean)}x` : '-')).join(', ');
    lines.push(`| ${s.world} | ${s.params.compute8g.toFixed(2)} / ${s.params.step8g.toFixed(2)} | ` +
      `${s.decode_share.toFixed(3)} | ${s.fit.within_all} (${s.fit.within_6w}, ${s.fit.within_3w}) | ` +
      `${s.fit.rps_gain_within_10pp} | ${f.rps_met}/${f.points} | ${r3(f.rps_ratio[0])}-${r3(f.rps_ratio[1])}, ` +
      `${r3(f.rps_geomean)} | ${h} | ${f.p99_met}/${f.p99_points} | ${f.p50_met}/${f.points} | ${vs} |`);
  }
  return lines.join('\n');
}

async function main() {
  const { values: v } = parseArgs({ options: {
    worlds: { type: 'string' },
    out: { type: 'string' },
    seeds: { type: 'string', default: '1,2,3' },
    'fit-seeds': { type: 'string', default: '1,2,3' },
    jobs: { type: 'string', default: '2' },
    policies: { type: 'string', default: DEFAULT_POLICIES },
    workers: { type: 'string', default: '6,3' },
    prefixes: { type: 'string', default: '2,7,12,24' },
    concurrency: { type: 'string', default: '4,8,16' },
  } });
  if (!v.worlds || !v.out) throw new Error('usage: worlds.js --worlds FILE --out DIR');
  fit.useBaseline(SEED_BASELINE);
  fs.mkdirSync(v.out, { recursive: true });
  const worlds = readWorlds(v.worlds);
  const points = v.workers.split(',').length * v.prefixes.split(',').length * v.concurrency.split(',').length;
  await runFloors(worlds, { out: v.out, seeds: v.seeds, jobs: Number(v.jobs), policies: v.policies,
    workers: v.workers, prefixes: v.prefixes, concurrency: v.concurrency, points });
  const fitSeeds = v['fit-seeds'].split(',').map(Number);
  const sums = worlds.map((w) => summarise(w, readRows(path.join(v.out, `${w.name}.jsonl`)), fitSeeds));
  fs.writeFileSync(path.join(v.out, 'summary.jsonl'), sums.map((s) => JSON.stringify(s)).join('\n') + '\n');
  const md = table(sums);
  fs.writeFileSync(path.join(v.out, 'summary.md'), md + '\n');
  process.stdout.write(md + '\n');
  for (const s of sums) process.stdout.write(`${s.world}: ${s.floors.misses.join('; ') || 'no misses'}\n`);
}

if (require.main === module) main().catch((e) => { console.error(e.message); process.exit(1); });

module.exports = { readWorlds, decodeShare, summarise, table };
