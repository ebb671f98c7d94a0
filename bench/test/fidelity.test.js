'use strict';
// The fidelity table's cells (bench/fidelity/cells.js) and its report.

const test = require('node:test');
const assert = require('node:assert/strict');
const cells = require('../fidelity/cells');
const { report } = require('../fidelity/fidelity');

test('the seed has 132 main cells, each with a tolerance; 48 points make them', () => {
  assert.equal(cells.MAIN.length, 132);
  const byField = {};
  for (const x of cells.MAIN) byField[x.field] = (byField[x.field] || 0) + 1;
  assert.deepEqual(byField, { hit: 12, ctr: 36, p50: 24, p99: 36, rps: 24 });
  assert.equal(cells.pointsOf(cells.MAIN).length, 48);
  // the approximate-mode ratios and the worker spread are among the others
  assert.ok(cells.EXTRA.some((x) => x.variant === 'approximate' && x.p === 24 && x.seed === 0.245));
  assert.ok(cells.EXTRA.some((x) => x.field === 'epp' && x.variant === 'kv' && x.p === 7 && x.seed === 2.86));
});

test('tolerances: absolute for ratios, relative for times and throughput', () => {
  const hit = { field: 'hit', seed: 0.5 };
  assert.ok(cells.within(hit, 0.549));
  assert.ok(!cells.within(hit, 0.551));
  const p99 = { field: 'p99', seed: 100 };
  assert.ok(cells.within(p99, 139.9) && cells.within(p99, 60.1));
  assert.ok(!cells.within(p99, 141) && !cells.within(p99, 59));
  const rps = { field: 'rps', seed: 20 };
  assert.ok(cells.within(rps, 21.9) && !cells.within(rps, 22.1));
  assert.ok(!cells.within(rps, null) && !cells.within(rps, NaN));
  assert.equal(cells.normError(p99, 120), 0.5);
});

test('the report counts cells within tolerance and the gains over round robin', () => {
  // every 6-worker c16 point at the seed's own values: all its cells within
  const rows = [];
  for (const pt of cells.pointsOf(cells.MAIN.filter((x) => x.w === 6 && x.c === 16))) {
    const result = {};
    for (const x of cells.MAIN) {
      if (x.w === pt.w && x.c === pt.c && x.p === pt.p && x.variant === pt.variant) result[cells.FIELD[x.field]] = x.seed;
    }
    result.emulator = { clock_ok: true };
    rows.push({ key: `${pt.w}/${pt.c}/${pt.p}/${pt.variant}`, w: pt.w, c: pt.c, p: pt.p, variant: pt.variant,
      commit: 'test', result });
  }
  const md = report(rows, { runs: 3, timeScale: 2 });
  const n = cells.MAIN.filter((x) => x.w === 6 && x.c === 16).length;
  assert.match(md, new RegExp(`Main cells within tolerance: \\*\\*${n}/${n}\\*\\*`));
  assert.match(md, /gain over round robin within 10 points of the seed's: 4\/4/);
  assert.match(md, /in the seed's direction at c16: 4\/4/);
});

test('multistart: starts drawn within the bounds, the same for a seed; chosen by the fitted cells', () => {
  const { rng } = require('../loadgen/workload');
  const { BOUNDS } = require('../fidelity/fit');
  const { drawStart, chooseByInSample } = require('../fidelity/multistart');
  const a = rng(7);
  const b = rng(7);
  const starts = Array.from({ length: 50 }, () => drawStart(a));
  assert.deepEqual(Array.from({ length: 50 }, () => drawStart(b)), starts);
  for (const s of starts) {
    for (const [k, [lo, hi]] of Object.entries(BOUNDS)) {
      assert.ok(s[k] >= lo && s[k] <= hi, `${k} ${s[k]}`);
      // no term starts switched off
      assert.ok(s[k] > 0, k);
    }
    assert.ok(Number.isInteger(s.maxTokens));
  }
  // the starts spread over the ranges, not one corner
  const fr = starts.map((s) => s.step8g);
  assert.ok(Math.min(...fr) < 0.4 && Math.max(...fr) > 0.8);
  // the held-out cells (within_3w) never decide
  const rows = [
    { search: 1, in_sample_score: 5.2, within_3w: '30/36' },
    { search: 2, in_sample_score: 3.1, within_3w: '20/36' },
    { search: 3, in_sample_score: 3.1, within_3w: '33/36' },
  ];
  assert.equal(chooseByInSample(rows).search, 2);
});

test('the seed tables come from grid.js without its signal handlers: a fit stops on SIGTERM', () => {
  const { spawnSync } = require('node:child_process');
  const path = require('node:path');
  const dir = path.join(__dirname, '..');
  // what fit.js and multistart.js load, then a busy loop as a search is
  const r = spawnSync(process.execPath, ['-e', `require('./fidelity/cells'); require('./fidelity/fit');
    const n = process.listenerCount('SIGTERM') + process.listenerCount('SIGINT');
    process.stdout.write(String(n)); process.kill(process.pid, 'SIGTERM');
    const t = Date.now(); while (Date.now() - t < 3000) {} process.exit(3);`], { cwd: dir, encoding: 'utf8' });
  assert.equal(r.stdout, '0');
  assert.equal(r.signal, 'SIGTERM');
});

test("a fitted world (fit.js simWorld) is the same world in the simulator and on the emulator's command line", () => {
  const { simWorld, BOUNDS } = require('../fidelity/fit');
  const { parseOptions } = require('../emulator/options');
  const prm = { baseUs: 872, gpuStepUs: 5560, prefillUsPerToken: 18.6, compute8g: 0.92, step8g: 0.314,
    share: 0.88, maxTokens: 43, eosSpread: 0.751, frontendUs: 7460 };
  // every searched parameter reaches the world
  assert.deepEqual(Object.keys(BOUNDS).sort(), Object.keys(prm).sort());
  const w = simWorld(prm);
  const o = parseOptions(['--engines', '3', ...w.emulatorArgs]);
  for (const k of ['baseUs', 'gpuStepUs', 'prefillUsPerToken', 'decodeUsPerSeq']) assert.equal(o.timing[k], w.timing[k], k);
  assert.deepEqual(o.gpus, w.gpus);
  assert.equal(o.share, w.share);
  assert.equal(o.frontendUs, w.frontendUs);
  // answers of 12..43 tokens: the top 0.751 of 1..43
  assert.deepEqual(w.eosTokens, { lo: 12, hi: 43 });
  assert.deepEqual(o.eosTokens, w.eosTokens);
  // no spread: no end of its own, and no flag for it
  const fixed = simWorld(Object.assign({}, prm, { eosSpread: 0 }));
  assert.equal(fixed.eosTokens, null);
  assert.ok(!fixed.emulatorArgs.includes('--eos-tokens'));
  assert.equal(parseOptions(['--engines', '3', ...fixed.emulatorArgs]).eosTokens, null);
  // a world fitted while decode_us_per_seq was searched keeps its own
  const older = simWorld(Object.assign({}, prm, { decodeUsPerSeq: 4544 }));
  assert.equal(older.timing.decodeUsPerSeq, 4544);
  assert.equal(parseOptions(['--engines', '3', ...older.emulatorArgs]).timing.decodeUsPerSeq, 4544);
  assert.notEqual(w.timing.decodeUsPerSeq, 4544);
});

test('where.js: round robin gives each engine a third; Dynamo gives the 24 GB node more, and more so when the laptops prefill slowly', () => {
  const { whereRuns } = require('../fidelity/where');
  const { defaultParams } = require('../fidelity/fit');
  const prm = defaultParams();
  const rr = whereRuns([3, 8, 24], prm, 1, 120, 'round_robin');
  const shares = rr.engines.map((e) => e.share);
  assert.ok(Math.abs(shares.reduce((a, b) => a + b, 0) - 1) < 0.01, `shares ${shares}`);
  for (const s of shares) assert.ok(Math.abs(s - 1 / 3) < 0.02, `round robin shares ${shares}`);
  const kv = whereRuns([3, 8, 24], prm, 1, 120, 'kv');
  assert.ok(kv.engines[0].share > 0.4, `Dynamo's share on the 24 GB node ${kv.engines[0].share}`);
  // a laptop's miss costs more when its prefill is slower; round robin pays it
  const slow = Object.assign({}, prm, { compute8g: 0.4 });
  const rrSlow = whereRuns([3, 8, 24], slow, 1, 120, 'round_robin');
  assert.ok(rrSlow.engines[1].miss_ttft_ms > rr.engines[1].miss_ttft_ms * 1.1,
    `laptop miss TTFT ${rr.engines[1].miss_ttft_ms} -> ${rrSlow.engines[1].miss_ttft_ms}`);
  assert.ok(rrSlow.requests_per_s < rr.requests_per_s, `round robin ${rr.requests_per_s} -> ${rrSlow.requests_per_s}`);
});
