'use strict';
// The fitted parameter that is the workload's, not the engine's
// (fit.js, BENCHMARKS.md §3): the seed's output length, which it does not
// state. kvbench sends it as max_tokens by default.
const DEFAULT_MAX_TOKENS = 24;

module.exports = { DEFAULT_MAX_TOKENS };
