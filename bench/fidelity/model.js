'use strict';
// The fitted parameter that is the workload's, not the engine's
// (fit.js, BENCHMARKS.md §3): the seed's output length, which it does not
// state. kvbench sends it as max_tokens by default.
const DEFAULT_MAX_TOKENS = 24;

// The calibrated model as result rows record it.
function emulatorDefaults() {
  const { DEFAULT_TIMING } = require('../emulator/scheduler');
  const { GPU_CLASSES, GPU_SHARE, FRONTEND_US } = require('../emulator/options');
  return { gpus: '24g,8g,8g', gpu_classes: GPU_CLASSES, share: GPU_SHARE, frontend_us: FRONTEND_US,
    timing: DEFAULT_TIMING, max_tokens: DEFAULT_MAX_TOKENS };
}

module.exports = { DEFAULT_MAX_TOKENS, emulatorDefaults };
