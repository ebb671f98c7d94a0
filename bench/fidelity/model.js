'use strict';
// The fitted parameter that is the workload's, not the engine's
// (fit.js, BENCHMARKS.md §3): the seed's output length, which it does not
// state. kvbench sends it as max_tokens by default.
const DEFAULT_MAX_TOKENS = 29;

// How the seed's baseline reached its engines. kube-proxy picks an engine
// per connection; whether that is a pick per request depends on the
// client, which the seed does not name. 'request': a connection a request
// (kvbench's router random); 'connection': each closed-loop client keeps
// one (random_conn). The seed's own figures choose: its baseline is slower
// than round robin at all 8 throughput points, which a client kept on one
// engine of a fleet of unequal nodes cannot be (the faster node's clients
// cycle faster); BENCHMARKS.md §3.1.
const SEED_BASELINE = 'request';

// The calibrated model as result rows record it.
function emulatorDefaults() {
  const { DEFAULT_TIMING } = require('../emulator/scheduler');
  const { GPU_CLASSES, GPU_SHARE, FRONTEND_US, EOS_TOKENS } = require('../emulator/options');
  return { gpus: '24g,8g,8g', gpu_classes: GPU_CLASSES, share: GPU_SHARE, frontend_us: FRONTEND_US,
    timing: DEFAULT_TIMING, max_tokens: DEFAULT_MAX_TOKENS, eos_tokens: EOS_TOKENS || null,
    seed_baseline: SEED_BASELINE };
}

// The model as the emulator runs it with `args` on its command line
// (kvbench --emulator-arg, floors.js --world): the timing, sharing and
// answer lengths they set, so that a row never states a default its run
// overrode. The nodes and the frontend's time are the caller's to record.
function withEmulatorArgs(params, args) {
  if (!args.length) return params;
  const { parseOptions } = require('../emulator/options');
  const o = parseOptions(['--engines', '1', ...args]);
  const timing = Object.assign({}, o.timing);
  delete timing.timeScale;
  return Object.assign(params, { timing: Object.assign({}, params.timing, timing), share: o.share,
    eos_tokens: o.eosTokens ? `${o.eosTokens.lo}-${o.eosTokens.hi}` : null });
}

module.exports = { DEFAULT_MAX_TOKENS, SEED_BASELINE, emulatorDefaults, withEmulatorArgs };
