'use strict';
// An experiment, not yet in the module (BENCHMARKS §2.45): policy=ttft as
// metrics=on configures it, with ttft_decode, what one request in flight
// adds to a server's cost in prompt tokens, learned from the frontend's
// own finished requests instead of fixed at 300.
//
// A closed-loop client's rate is its concurrency over the mean end-to-end
// time, so what a request in flight costs is what it adds to the others'
// end-to-end time. Per engine, over its last WINDOW finished requests, a
// least-squares fit of each request's end-to-end time on (1, the prompt
// tokens it had to compute, the requests in flight there when it was
// sent) gives what a prompt token and a request in flight each add; their
// ratio is the weight in prompt tokens. The median over the engines,
// within [LOW, HIGH], is refitted every REFIT finished requests. The
// policy itself is the module's C code (cpolicy.js); only the weight is
// learned here.

const C = require('./cpolicy');

const WINDOW = 200;       // finished requests kept per engine
const MIN_ROWS = 40;      // an engine's fit needs this many
const REFIT = 50;         // finished requests between two fits
const LOW = 300;          // metrics=on's ttft_decode: where decoding is free
const HIGH = 6000;        // about two whole prompts
const CHANGE = 0.25;      // smaller moves are noise: the weight stays

// least squares of y on x (rows of 3), by the normal equations; null when
// singular
function fit3(rows) {
  const M = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]];
  for (const { x, y } of rows) {
    for (let i = 0; i < 3; i++) {
      for (let j = 0; j < 3; j++) M[i][j] += x[i] * x[j];
      M[i][3] += x[i] * y;
    }
  }
  for (let c = 0; c < 3; c++) {
    let piv = c;
    for (let r = c + 1; r < 3; r++) if (Math.abs(M[r][c]) > Math.abs(M[piv][c])) piv = r;
    [M[c], M[piv]] = [M[piv], M[c]];
    if (Math.abs(M[c][c]) < 1e-9) return null;
    for (let r = 0; r < 3; r++) {
      if (r === c) continue;
      const f = M[r][c] / M[c][c];
      for (let k = c; k < 4; k++) M[r][k] -= f * M[c][k];
    }
  }
  return M.map((r, i) => r[3] / r[i]);
}

// the weight the finished requests of each engine give, or null
function learnedWeight(perEngine) {
  const ws = [];
  for (const rows of perEngine.values()) {
    if (rows.length < MIN_ROWS) continue;
    const b = fit3(rows);
    if (b && b[1] > 0) ws.push(b[2] / b[1]);
  }
  if (!ws.length) return null;
  ws.sort((a, b) => a - b);
  return Math.max(LOW, Math.min(HIGH, ws[Math.floor(ws.length / 2)]));
}

function autoDecode() {
  const perEngine = new Map();
  let weight = LOW;
  let since = 0;
  let blockSize = 16;
  let policy = C.ttftMetrics(50, weight);
  const f = (view, q) => {
    blockSize = view.blockSize;
    return policy(view, q);
  };
  f.weights = [];   // every fit's weight, for the record
  // sim.js calls this as each request ends (rec: what it was sent with)
  f.finished = (rec, q) => {
    if (!perEngine.has(rec.engine)) perEngine.set(rec.engine, []);
    const rows = perEngine.get(rec.engine);
    rows.push({ x: [1, q.ids.length - rec.overlap * blockSize, rec.inflight], y: rec.end - rec.sent });
    if (rows.length > WINDOW) rows.shift();
    if (++since < REFIT) return;
    since = 0;
    const w = learnedWeight(perEngine);
    if (w === null) return;
    f.weights.push(Math.round(w));
    if (Math.abs(w - weight) > CHANGE * weight) {
      weight = w;
      // the engines' speeds live in the view: a new policy keeps them
      policy = C.ttftMetrics(50, Math.round(weight));
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
      kvroute: 'kvroute mode=kv metrics=on capacity=585, ttft_decode learned (not a module setting)' },
    fit.provenance(w.params, [out.seed]))) + '\n');
  }
}

if (require.main === module) main();

module.exports = { autoDecode, learnedWeight, fit3 };
