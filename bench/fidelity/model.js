'use strict';
// The two fitted parameters that are not the engine's own (bench/fit.js,
// BENCHMARKS.md §3.1): the seed's output length, which it does not state,
// and the per-request time of the seed's serving frontend (Dynamo's, in its
// round-robin and KV-routing variants; its baseline had none).
const DEFAULT_MAX_TOKENS = 16;
const DEFAULT_FRONTEND_US = 4000;

module.exports = { DEFAULT_MAX_TOKENS, DEFAULT_FRONTEND_US };
