'use strict';
// policy=ttft as `metrics=on ttft_decode=auto` configures it (BENCHMARKS
// §2.45-§2.46): ttft_decode, what one request in flight adds to a
// server's cost in prompt tokens, learned from the frontend's own
// finished requests instead of fixed at 300. The learner is the module's
// C code (src/route/kvr_inflight_cost.c, through cpolicy.js's
// WebAssembly), fed what the module feeds it as each request ends: the
// engine, the prompt tokens it had to compute, the requests in flight
// there when it was sent, the seconds from send to end, and whether the
// engine had KV room for it when it was sent (a request without waited
// in the engine's queue and is not learned from).

const C = require('./cpolicy');

const START = 300;        // metrics=on's ttft_decode until a fit

// everyQueued: learn from the requests sent without KV room too (the
// module until 2026-12-06, BENCHMARKS §2.47), for comparison
function autoDecode({ everyQueued = false } = {}) {
  const learn = C.learner();
  let weight = 0;
  let fits = 0;
  let blockSize = 16;
  let policy = C.ttftMetrics(50, START);
  const queued = new Map();   // request -> no KV room where it was sent
  const f = (view, q) => {
    blockSize = view.blockSize;
    const pick = policy(view, q);
    queued.set(q, policy.queued);
    return pick;
  };
  f.weights = [];   // every fit's weight, for the record
  f.lastQueued = () => policy.queued;   // the last pick's: no KV room there
  // sim.js calls this as each request ends (rec: what it was sent with;
  // its times in ms)
  f.finished = (rec, q) => {
    const w = learn.ended(rec.engine, q.ids.length - rec.overlap * blockSize, rec.inflight,
      (rec.end - rec.sent) / 1000, !everyQueued && queued.get(q));
    queued.delete(q);
    if (learn.fits() > fits) {
      fits = learn.fits();
      f.weights.push(Math.round(learn.learned()));
    }
    if (w !== weight) {
      weight = w;
      // the engines' speeds live in the view: a new policy keeps them
      policy = C.ttftMetrics(50, weight);
    }
  };
  return f;
}

// node bench/sim/auto_decode.js --worlds FILE [--points 3/4/7,...] [--seed 1]:
// the weights it learns in each world at each point (W/C/P), the last
// three fits of a run of 720 requests
function main() {
  require('./clock');
  const { parseArgs } = require('node:util');
  const { simulate } = require('./sim');
  const fit = require('../fidelity/fit');
  const { readWorlds } = require('./worlds');
  const { values: v } = parseArgs({ options: {
    worlds: { type: 'string' },
    points: { type: 'string', default: '3/4/7,3/8/24,6/16/24,6/4/24' },
    seed: { type: 'string', default: '1' },
  } });
  for (const w of readWorlds(v.worlds)) {
    const out = { world: w.name, seed: Number(v.seed), weights: {} };
    for (const pt of v.points.split(',')) {
      const [workers, concurrency, prefixes] = pt.split('/').map(Number);
      const pol = autoDecode();
      simulate(Object.assign({ workers, concurrency, prefixes, requests: 720, seed: Number(v.seed) },
        fit.simWorld(w.params)), pol);
      out.weights[pt] = pol.weights.slice(-3);
    }
    // what it ran at: commit, seeds and runs, and the world's command line
    process.stdout.write(JSON.stringify(Object.assign(out, { requests: 720,
      kvroute: 'kvroute mode=kv metrics=on ttft_decode=auto capacity=585' },
    fit.provenance(w.params, [out.seed]))) + '\n');
  }
}

if (require.main === module) main();

module.exports = { autoDecode };
