'use strict';
// The seed's numeric cells (seed-experiment.md, via grid.js's SEED) and
// the tolerances of the calibration issue: hit rate and cached-token ratio
// +-0.05 absolute, TTFT p50 +-25 %, p99 +-40 %, requests/s +-10 %, distinct
// workers per prefix +-0.75.
//
// The 132 "main" cells are those of the seed's result tables: request hit
// rate (6 workers, c8), cached-token ratio (6 workers, c4 and c16), TTFT
// p50/p99 (6 workers, c4 and c16), requests/s (6 workers, c16) and the
// 3-worker table (c8: cached-token ratio, TTFT p99, requests/s), for the
// baseline, round robin and KV routing. The others (worker spread, the
// hash-seed / approximate table, the upper-bound table's hit rates, the
// overload point) are reported beside them.

const { SEED } = require('../grid');

const TOLERANCE = {
  hit: { abs: 0.05 },
  ctr: { abs: 0.05 },
  p50: { rel: 0.25 },
  p99: { rel: 0.40 },
  rps: { rel: 0.10 },
  epp: { abs: 0.75 },
};

const P = [2, 7, 12, 24];
const MAIN = [];
const add = (list, w, c, fields, variants, table) => {
  for (const p of P) {
    for (const variant of variants) {
      for (const field of fields) {
        const v = (((SEED[w] || {})[c] || {})[p] || {})[variant];
        if (v && typeof v[field] === 'number') list.push({ w, c, p, variant, field, seed: v[field], table });
      }
    }
  }
};
const V3 = ['baseline', 'round_robin', 'kv'];
add(MAIN, 6, 8, ['hit'], V3, 'hit rate 6w c8');
add(MAIN, 6, 4, ['ctr'], V3, 'cached-token ratio 6w');
add(MAIN, 6, 16, ['ctr'], V3, 'cached-token ratio 6w');
add(MAIN, 6, 4, ['p50', 'p99'], V3, 'TTFT 6w');
add(MAIN, 6, 16, ['p50', 'p99'], V3, 'TTFT 6w');
add(MAIN, 6, 16, ['rps'], V3, 'requests/s 6w c16');
add(MAIN, 3, 8, ['ctr', 'p99', 'rps'], V3, '3w c8');

const EXTRA = [];
add(EXTRA, 6, 4, ['epp'], ['round_robin', 'kv'], 'workers per prefix 6w c4');
add(EXTRA, 6, 8, ['ctr'], ['round_robin', 'kv', 'approximate'], 'hash seed / approximate 6w c8');
for (const [w, c] of [[6, 4], [6, 16], [3, 4], [3, 8], [3, 16]]) {
  add(EXTRA, w, c, ['hit'], ['kv'], 'upper-bound table, KV hit rate');
}
add(EXTRA, 3, 16, ['p50', 'p99'], ['baseline', 'kv'], 'overload 3w c16');
add(EXTRA, 6, 8, ['p50'], ['baseline', 'round_robin'], 'frontend hop 6w c8');

function within(cell, value) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return false;
  const t = TOLERANCE[cell.field];
  if (t.abs !== undefined) return Math.abs(value - cell.seed) <= t.abs + 1e-9;
  return Math.abs(value - cell.seed) <= t.rel * cell.seed + 1e-9;
}

// error in units of the tolerance (1 = at the edge)
function normError(cell, value) {
  const t = TOLERANCE[cell.field];
  if (typeof value !== 'number' || !Number.isFinite(value)) return 10;
  if (t.abs !== undefined) return (value - cell.seed) / t.abs;
  return (value - cell.seed) / (t.rel * cell.seed);
}

// the points (workers, concurrency, prefix types, variant) the cells need
function pointsOf(cells) {
  const seen = new Map();
  for (const x of cells) {
    const k = `${x.w}/${x.c}/${x.p}/${x.variant}`;
    if (!seen.has(k)) seen.set(k, { w: x.w, c: x.c, p: x.p, variant: x.variant });
  }
  return [...seen.values()];
}

// the summary figure of a cell's field
const FIELD = { hit: 'request_hit_rate', ctr: 'cached_token_ratio', p50: 'ttft_p50_ms',
  p99: 'ttft_p99_ms', rps: 'requests_per_s', epp: 'engines_per_prefix' };

module.exports = { MAIN, EXTRA, TOLERANCE, within, normError, pointsOf, FIELD };
