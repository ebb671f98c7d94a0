#!/usr/bin/env node
'use strict';
// What a router could reach at one point if it knew the future: a rollout
// (one-step lookahead) policy on the policy simulator. At each request it
// tries every engine, runs the same simulation on from there with a base
// policy (kvroute's C policy by default) for the next H requests, and keeps
// the engine whose future was best; then moves on with that choice fixed.
// It knows the arrivals, the prompts and the engines' exact dynamics, which
// no router does, and a rollout does at least as well as its base policy on
// the objective it looks ahead with (up to the horizon's end effects). So it
// says how far the floors are from what any router fed the same signals
// could do: if it does not reach a figure, a policy will not either.
// With --futures N it does not know them: each engine is tried in N
// futures whose prefix types are drawn afresh from the workload's mix, the
// same N for every engine, and the mean decides. That is a router that
// knows the engines exactly and the mix of prompts, not their order.
// The simulator's state cannot be copied (its events are closures), so each
// trial replays the run from the start with the choices so far: O(N^2)
// requests simulated, minutes a point.
//   node bench/sim/rollout.js [--workers 3] [--prefixes 24] [--concurrency 8]
//       [--seeds 1] [--requests 720] [--measure-from 96] [--horizon 24]
//       [--objective latency|sent|ttft|tail] [--base kvroute|dynamo] [--futures N]
//       [--jsonl FILE]
// Each objective sums over the requests in flight at the choice and the H
// sent after it: latency their end-to-end times (closed loop: the
// requests/s, by Little's law), sent the times the later ones were sent
// (from k + 1: how soon answers came back), ttft their times to first token, tail the
// squares of those.
// Prints, a seed at a time, the rollout beside its base and Dynamo.

require('./clock');
const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { simulate, workloadOf, BLOCK_SIZE } = require('./sim');
const { rng, PREFIX_TOKENS } = require('../loadgen/workload');
const P = require('./policies');
const C = require('./cpolicy');
const { parseGpus } = require('../emulator/options');
const { DEFAULT_MAX_TOKENS } = require('../fidelity/model');

const BASES = {
  kvroute: C.metricsPolicy().make,   // metrics=on ttft_decode=300: the default until 2026-12-06
  dynamo: () => P.dynamoExact(),
  round_robin: () => P.roundRobin(),
};

// The score of a trial: lower is better. records are the truncated run's,
// k the choice tried, C the concurrency (the requests in flight at k were
// sent among the C before it).
const OBJECTIVES = {
  latency: inFlightOn((r) => r.end - r.sent),
  ttft: inFlightOn((r) => r.ttft),
  // when each later request could be sent: in a closed loop, how soon the
  // clients' answers came back (throughput without the end-to-end times
  // of the last requests, which the cut-off run finishes alone)
  sent: (records, k) => {
    let s = 0;
    for (let i = k + 1; i < records.length; i++) s += records[i].sent;
    return s;
  },
  // the squares weigh the long waits most: a tail's objective
  tail: inFlightOn((r) => r.ttft * r.ttft),
};

// the sum of f over the requests in flight at k and those sent after it
function inFlightOn(f) {
  return (records, k, c) => {
    let s = 0;
    for (let i = Math.max(0, k - c); i < records.length; i++) s += f(records[i]);
    return s;
  };
}

// o: simulate()'s options (requests is the whole run's); base: a maker of
// the base policy; horizon: requests looked ahead; objective(records, k, c).
// Returns { choices, differ } where choices[k] is the rollout's engine for
// request k and differ counts the choices unlike the base's.
function rollout(o, base, horizon, objective, progress, futures = 0) {
  const choices = [];
  let differ = 0;
  const real = workloadOf(o);
  const heads = headsOf(real);
  for (let k = 0; k < o.requests; k++) {
    let best = -1;
    let bestScore = Infinity;
    let basePick = -1;
    const scores = [];
    const limit = Math.min(o.requests, k + horizon + 1);
    // the futures tried: the run's own (the rollout knows what comes), or
    // futures drawn: the same draws for every engine tried
    const worlds = futures > 0
      ? Array.from({ length: futures }, (_, s) => drawFuture(real, heads, k, limit, o, s))
      : [real];
    for (let e = 0; e < o.workers; e++) {
      const forced = choices.concat([e]);
      let score = 0;
      for (const requests of worlds) {
        let records = null;
        simulate(Object.assign({}, o, { limit, workload: requests,
          trace: (rs) => { records = rs; } }), forcing(base(), forced, (i, own) => {
          if (i === k) basePick = own;
        }));
        score += objective(records, k, o.concurrency);
      }
      scores.push(score / worlds.length);
    }
    for (let e = 0; e < o.workers; e++) {
      // the base's choice wins a tie: differ counts only real preferences
      const s = scores[e] - (e === basePick ? 1e-9 : 0);
      if (s < bestScore) { bestScore = s; best = e; }
    }
    if (best !== basePick) differ++;
    choices.push(best);
    if (progress && k % 48 === 47) progress(k + 1, differ);
  }
  return { choices, differ };
}

// a prefix type's leading tokens, block hashes and keys, from the first of
// the run's requests of that type
function headsOf(real) {
  const heads = new Map();
  const blocks = PREFIX_TOKENS / BLOCK_SIZE;
  for (const q of real) {
    if (heads.has(q.prefixId)) continue;
    heads.set(q.prefixId, { ids: q.ids.slice(0, PREFIX_TOKENS), hashes: q.hashes.slice(0, blocks),
      keys: q.blockKeys.slice(0, blocks) });
  }
  return heads;
}

// The run up to request k as it is, and after it requests whose prefix
// types are drawn afresh (uniformly, as the workload draws them: what a
// router could know of the future is the mix, not the order). Each keeps
// its own unique tail: no other request shares it, so its hashes chained
// from another head change no hit.
function drawFuture(real, heads, k, limit, o, s) {
  const r = rng(((o.seed * 1000003 + k) * 31 + s) >>> 0);
  const types = [...heads.keys()];
  const blocks = PREFIX_TOKENS / BLOCK_SIZE;
  const out = real.slice(0, k + 1);
  for (let j = k + 1; j < limit; j++) {
    const t = types[Math.floor(r() * types.length)];
    const h = heads.get(t);
    const q = real[j];
    out.push({ prefixId: t, ids: h.ids.concat(q.ids.slice(PREFIX_TOKENS)),
      hashes: h.hashes.concat(q.hashes.slice(blocks)), firstKey: h.keys[0],
      blockKeys: h.keys.concat(q.blockKeys.slice(blocks)) });
  }
  return out;
}

// the whole run with the given choices (the base still called, as above)
function replay(o, base, choices, trace) {
  return simulate(Object.assign({}, o, { trace }), forcing(base(), choices));
}

// A policy that sends request i to forced[i] while there is one, else
// where the base would. The base runs at every request, so its own state
// (the speeds it scrapes) follows the same history whatever is forced;
// seen(i, its pick, view, q) is told each of its choices.
function forcing(b, forced, seen) {
  return (view, q) => {
    const i = view.picks;
    const own = b(view, q);
    if (seen) seen(i, own, view, q);
    return i < forced.length ? forced[i] : own;
  };
}

module.exports = { rollout, replay, forcing, drawFuture, headsOf, OBJECTIVES, BASES };

if (require.main === module) {
  const { values: v } = parseArgs({ options: {
    workers: { type: 'string', default: '3' },
    prefixes: { type: 'string', default: '24' },
    concurrency: { type: 'string', default: '8' },
    seeds: { type: 'string', default: '1' },
    requests: { type: 'string', default: '720' },
    'measure-from': { type: 'string', default: '96' },
    horizon: { type: 'string', default: '24' },
    objective: { type: 'string', default: 'latency' },
    base: { type: 'string', default: 'kvroute' },
    futures: { type: 'string', default: '0' },
    gpus: { type: 'string', default: '24g,8g,8g' },
    jsonl: { type: 'string' },
  } });
  if (!OBJECTIVES[v.objective]) throw new Error(`--objective: one of ${Object.keys(OBJECTIVES).join(', ')}`);
  if (!BASES[v.base]) throw new Error(`--base: one of ${Object.keys(BASES).join(', ')}`);
  // what every row was computed with (the simulator's clock is virtual: no lag)
  const COMMIT = require('../loadgen/provenance').commit(path.join(__dirname, '..', '..'));
  const EMULATOR = Object.assign(require('../fidelity/model').emulatorDefaults(), { gpus: v.gpus });
  for (const seed of v.seeds.split(',').map(Number)) {
    const o = { workers: Number(v.workers), prefixes: Number(v.prefixes), concurrency: Number(v.concurrency),
      requests: Number(v.requests), seed, measureFrom: Number(v['measure-from']), gpus: parseGpus(v.gpus),
      maxTokens: DEFAULT_MAX_TOKENS };
    const t0 = Date.now();
    const { choices, differ } = rollout(o, BASES[v.base], Number(v.horizon), OBJECTIVES[v.objective],
      (k, d) => process.stderr.write(`rollout seed ${seed}: ${k}/${o.requests} chosen, ${d} unlike the base, ` +
        `${Math.round((Date.now() - t0) / 1000)} s\n`), Number(v.futures));
    // where each policy sent the requests whose prompt no engine held
    // (overlap 0 at the pick), by engine: the misses' placement
    const missesBy = (recs) => {
      const n = new Array(o.workers).fill(0);
      for (const r of recs.slice(o.measureFrom)) if (r.overlap === 0) n[r.engine]++;
      return n;
    };
    const picksBy = (recs) => {
      const n = new Array(o.workers).fill(0);
      for (const r of recs.slice(o.measureFrom)) n[r.engine]++;
      return n;
    };
    const rows = [];
    for (const [policy, run] of [
      [`rollout(${v.base}, ${v.objective}, H ${v.horizon}${Number(v.futures) ? `, ${v.futures} futures drawn` : ''})`, (tr) => replay(o, BASES[v.base], choices, tr)],
      [v.base, (tr) => simulate(Object.assign({}, o, { trace: tr }), BASES[v.base]())],
      ['dynamo', (tr) => simulate(Object.assign({}, o, { trace: tr }), P.dynamoExact())]]) {
      let recs = null;
      const s = run((rs) => { recs = rs; });
      rows.push(Object.assign({ w: o.workers, p: o.prefixes, c: o.concurrency, seed, policy,
        horizon: Number(v.horizon), objective: v.objective, futures: Number(v.futures), base: v.base,
        // the module's configuration kvroute's row, or a rollout over it, stands for
        kvroute: policy === 'kvroute' || (policy.startsWith('rollout') && v.base === 'kvroute')
          ? C.metricsPolicy().kvroute : null,
        commit: COMMIT, emulator_params: EMULATOR, runs: 1, clock: 'virtual',
        picks_by_engine: picksBy(recs), misses_by_engine: missesBy(recs) }, s,
      // the rollout's choices, an engine's digit a request (up to 10 engines)
      policy.startsWith('rollout') ? { unlike_base: differ,
        choices: o.workers <= 10 ? choices.join('') : undefined } : {}));
    }
    const dyn = rows[2];
    for (const r of rows) {
      process.stdout.write(`${r.w}w/${r.p}/c${r.c} seed ${seed} ${r.policy.padEnd(34)} ` +
        `req/s ${r.requests_per_s.toFixed(2)} (${(r.requests_per_s / dyn.requests_per_s).toFixed(3)}x Dynamo) ` +
        `TTFT p50 ${r.ttft_p50_ms.toFixed(1)} p99 ${r.ttft_p99_ms.toFixed(1)} ms ` +
        `cached ${r.cached_token_ratio.toFixed(3)} picks ${r.picks_by_engine.join('/')} ` +
        `misses ${r.misses_by_engine.join('/')}\n`);
      if (v.jsonl) fs.appendFileSync(v.jsonl, JSON.stringify(r) + '\n');
    }
  }
}
