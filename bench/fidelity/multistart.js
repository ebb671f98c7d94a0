#!/usr/bin/env node
'use strict';
// Several searches from starts drawn at random within the parameters'
// bounds, and the winner chosen by its in-sample score alone. One search
// from one hand-picked start can settle anywhere along the directions the
// fitted cells do not pin down (the six-worker cells cannot tell a laptop's
// prefill speed from its step speed, §3.2); which of those points predicts
// the three-worker cells is luck. Drawing the starts and choosing by the
// cells fitted on keeps the out-of-sample figure honest: nothing about the
// held-out cells steers the choice.
//
//   node bench/fidelity/multistart.js [--on 6|all] [--starts 6] [--jobs 2]
//       [--evals 200] [--refine K] [--refine-evals N] [--resume FILE,...]
//       [--search-base B]
//       [--search-seeds 1] [--judge-seeds 1,2,3] [--rng-seed 1] [--out DIR]
//
// Each search is fit.js's evolution strategy in a process of its own
// (--jobs at once). Every search's best is judged again on --judge-seeds;
// the one with the lowest score on the fitted cells wins. Prints one line
// per search and the winner's table of every cell. --refine K searches on
// from the K best by the fitted cells (--refine-evals more evaluations
// each); --resume FILE takes the first stage from an earlier
// multistart.jsonl instead of searching it again (with --starts 0, only
// that). With --out, writes
// multistart.jsonl (every search) and multistart.md (the winner) there.

const { parseArgs } = require('node:util');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { rng } = require('../loadgen/workload');
const cells = require('./cells');
const fitjs = require('./fit');

const { FRACTIONS } = fitjs;

// a start drawn log-uniformly within each bound (uniformly for the
// fractions); a bound at zero is read as 1% of the upper one, so that no
// start begins with a term switched off
function drawStart(r) {
  const out = {};
  for (const [k, [lo, hi]] of Object.entries(fitjs.BOUNDS)) {
    if (FRACTIONS.has(k)) {
      out[k] = lo + (hi - lo) * r();
    } else {
      const l = Math.log(Math.max(lo, hi / 100));
      out[k] = Math.exp(l + (Math.log(hi) - l) * r());
    }
    if (k === 'maxTokens') out[k] = Math.round(out[k]);
  }
  return out;
}

// the searches running, stopped with this process: each is busy for
// minutes, and nothing else would stop it
const running = new Set();
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    for (const child of running) child.kill('SIGKILL');
    process.exit(130);
  });
}

function runSearch(i, start, v) {
  return new Promise((resolve, reject) => {
    const args = [path.join(__dirname, 'fit.js'), '--on', v.on, '--seeds', v['search-seeds'],
      '--evals', v.evals, '--start', JSON.stringify(start), '--rng-seed', String(i + 1)];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    running.add(child);
    let stdout = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.on('error', reject);
    child.on('close', (code) => {
      running.delete(child);
      if (code !== 0) return reject(new Error(`search ${i} exited ${code}`));
      resolve(JSON.parse(stdout.split('\n')[0]));
    });
  });
}

async function pool(tasks, jobs) {
  const results = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]();
    }
  };
  await Promise.all(Array.from({ length: jobs }, worker));
  return results;
}

// the winner: the lowest score on the fitted cells, whatever the held-out
// cells say (the first on a tie)
function chooseByInSample(rows) {
  return rows.reduce((a, b) => (b.in_sample_score < a.in_sample_score ? b : a));
}

async function main() {
  const { values: v } = parseArgs({ options: {
    on: { type: 'string', default: '6' },
    starts: { type: 'string', default: '6' },
    jobs: { type: 'string', default: '2' },
    evals: { type: 'string', default: '200' },
    refine: { type: 'string', default: '0' },
    'refine-evals': { type: 'string' },
    resume: { type: 'string' },
    'search-base': { type: 'string', default: '0' },
    'search-seeds': { type: 'string', default: '1' },
    'judge-seeds': { type: 'string', default: '1,2,3' },
    'rng-seed': { type: 'string', default: '1' },
    out: { type: 'string' },
  } });
  const judgeSeeds = v['judge-seeds'].split(',').map(Number);
  // what every row was computed with (the simulator's clock is virtual)
  const commit = require('../loadgen/provenance').commit(path.join(__dirname, '..', '..'));
  const fitted = (x) => v.on === '6' ? x.w === 6 : true;
  const judge = (search, start, params, stage) => {
    const all = fitjs.evaluate(params, cells.MAIN, judgeSeeds, 240);
    const row = { search, stage, start, params,
      in_sample_score: Math.round(fitjs.score(all.filter(fitted)) * 1000) / 1000,
      judge_seeds: v['judge-seeds'], commit, ...fitjs.summarize(all), all };
    const { all: _, ...shown } = row;
    process.stdout.write(JSON.stringify(shown) + '\n');
    return row;
  };
  const searches = (list, evals, seedBase) => pool(list.map((s, i) => async () => {
    const res = await runSearch(seedBase + i, s, Object.assign({}, v, { evals }));
    process.stderr.write(`search ${seedBase + i + 1}: ${JSON.stringify({ start: s, params: res.params })}\n`);
    return res;
  }), Number(v.jobs));

  // stage 1: the drawn starts, and with --resume earlier runs' first
  // stages (comma-separated files), judged again here so that every row is
  // judged alike; --search-base numbers this run's searches (and seeds
  // their strategies) after an earlier run's
  let rows = [];
  for (const file of v.resume ? v.resume.split(',') : []) {
    const prev = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
      .filter((x) => (x.stage || 1) === 1);
    for (const x of prev) rows.push(judge(x.search, x.start, x.params, 1));
  }
  const base = Number(v['search-base']);
  if (Number(v.starts) > 0) {
    const r = rng(Number(v['rng-seed']));
    const starts = Array.from({ length: Number(v.starts) }, () => drawStart(r));
    const found = await searches(starts, v.evals, base);
    for (let i = 0; i < found.length; i++) rows.push(judge(base + i + 1, starts[i], found[i].params, 1));
  }

  // stage 2: the best --refine of them by the fitted cells, searched on
  // from where they stopped (the held-out cells still decide nothing)
  const k = Number(v.refine);
  if (k > 0) {
    const top = rows.slice().sort((a, b) => a.in_sample_score - b.in_sample_score).slice(0, k);
    const found = await searches(top.map((x) => x.params), v['refine-evals'] || v.evals, base + 100);
    for (let i = 0; i < found.length; i++) {
      rows.push(judge(base + 100 + i + 1, top[i].params, found[i].params, 2));
    }
  }

  const win = chooseByInSample(rows);
  process.stdout.write(`\nchosen by in-sample score: search ${win.search}\n`);
  const { all: winAll, ...winShown } = win;
  const md = [JSON.stringify({ fitted_on: v.on === '6' ? '6-worker cells' : 'all cells', chosen: winShown }),
    fitjs.table(winAll), fitjs.gainTable(fitjs.gainRows(winAll))].join('\n\n');
  process.stdout.write(md + '\n');
  if (v.out) {
    fs.mkdirSync(v.out, { recursive: true });
    fs.writeFileSync(path.join(v.out, 'multistart.jsonl'),
      rows.map(({ all, ...x }) => JSON.stringify(x)).join('\n') + '\n');
    fs.writeFileSync(path.join(v.out, 'multistart.md'), md + '\n');
  }
}

module.exports = { drawStart, chooseByInSample };

if (require.main === module) main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
