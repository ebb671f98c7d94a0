'use strict';
// Command-line options of the emulator (documented in bench/README.md).

const { parseArgs } = require('node:util');
const { DEFAULT_TIMING } = require('./scheduler');
const { parseRange } = require('./eos');

// The seed's nodes (GPU and its host) as speeds against the 24 GB-class
// card's: compute is what a prefill token costs (the GPU's tensor
// throughput); step is what a step's fixed work costs: the host CPU's
// scheduling and sampling and the memory-bound reads of a small model's
// decode (weights, KV). A laptop with an 8 GB GPU is slower at the second
// far more than at the first (fitted, bench/fidelity/fit.js; BENCHMARKS.md
// §3.1).
const GPU_CLASSES = { '24g': { compute: 1, step: 1 }, '8g': { compute: 1, step: 0.299 } };
// how much engines on one GPU slow each other (gpu.js; fitted)
const GPU_SHARE = 0.904;
// the serving frontend's time per request before the engine's scheduler
// sees it: vLLM's API server (HTTP, tokenizing), or Dynamo's frontend in
// its place (fitted)
const FRONTEND_US = 8530;
// the range of the model's own answer lengths, "lo-hi" (eos.js; '': none,
// every answer runs to the client's max_tokens)
const EOS_TOKENS = '';

// a GPU as Gpu's options: a number is one speed for all its work; an
// object gives compute (prefill) and step (a step's fixed work) apart
function gpuSpec(x) {
  if (typeof x === 'number') return { speed: x, stepSpeed: x };
  return { speed: x.compute, stepSpeed: x.step };
}

// --gpus: class names, speeds, or compute/step speed pairs, e.g.
// "24g,8g,8g", "1,0.5" or "1,0.9/0.6"
function parseGpus(v) {
  if (!v) return [];
  return v.split(',').map((x, i) => {
    if (Object.prototype.hasOwnProperty.call(GPU_CLASSES, x)) return GPU_CLASSES[x];
    const pair = x.split('/');
    if (pair.length === 2) {
      return { compute: num(pair[0], `gpus[${i}] compute`, 0.001, false),
        step: num(pair[1], `gpus[${i}] step`, 0.001, false) };
    }
    return num(x, `gpus[${i}]`, 0.001, false);
  });
}

const SPEC = {
  engines: { type: 'string', default: '1' },
  'base-port': { type: 'string', default: '8001' },
  host: { type: 'string', default: '127.0.0.1' },
  'capacity-blocks': { type: 'string', default: '585' },
  'block-size': { type: 'string', default: '16' },
  model: { type: 'string', default: 'Qwen/Qwen3-0.6B' },
  tokenizer: { type: 'string' },
  'chat-template': { type: 'string' },
  'time-scale': { type: 'string', default: '1' },
  'kv-events': { type: 'string', default: 'none' },
  'events-base-port': { type: 'string', default: '20081' },
  'events-host': { type: 'string', default: '127.0.0.1' },
  'events-format': { type: 'string', default: 'array' },
  'events-topic': { type: 'string', default: '' },
  'hash-type': { type: 'string', default: 'int' },
  'hash-seed': { type: 'string', default: '0' },
  'replay-base-port': { type: 'string', default: '20181' },
  flavour: { type: 'string', default: 'vllm' },
  'events-offload': { type: 'string', default: '0' },
  'offload-block-size': { type: 'string', default: '0' },
  'events-report-full': { type: 'boolean', default: false },
  'events-hybrid': { type: 'boolean', default: false },
  'events-bigram': { type: 'boolean', default: false },
  'events-partial': { type: 'boolean', default: false },
  'lora-modules': { type: 'string', default: '' },
  'mm-tokens': { type: 'string', default: '0' },
  'dp-ranks': { type: 'string', default: '1' },
  'name-prefix': { type: 'string', default: 'engine-' },
  'engine-scale': { type: 'string', default: '' },
  'base-us': { type: 'string', default: String(DEFAULT_TIMING.baseUs) },
  'prefill-us-per-token': { type: 'string', default: String(DEFAULT_TIMING.prefillUsPerToken) },
  'decode-us-per-seq': { type: 'string', default: String(DEFAULT_TIMING.decodeUsPerSeq) },
  'gpu-step-us': { type: 'string', default: String(DEFAULT_TIMING.gpuStepUs) },
  'load-us-per-token': { type: 'string', default: String(DEFAULT_TIMING.loadUsPerToken) },
  gpus: { type: 'string', default: '' },
  placement: { type: 'string', default: '0' },
  share: { type: 'string', default: String(GPU_SHARE) },
  'frontend-us': { type: 'string', default: String(FRONTEND_US) },
  'eos-tokens': { type: 'string', default: EOS_TOKENS },
  processes: { type: 'string', default: '1' },
  'engine-set': { type: 'string', default: '' },
  'max-batched-tokens': { type: 'string', default: String(DEFAULT_TIMING.maxBatchedTokens) },
  'max-num-seqs': { type: 'string', default: String(DEFAULT_TIMING.maxNumSeqs) },
  trace: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h' },
};

function num(v, name, min, integer) {
  const x = Number(v);
  if (!Number.isFinite(x) || x < min || (integer && !Number.isInteger(x))) {
    throw new Error(`--${name}: expected ${integer ? 'an integer' : 'a number'} >= ${min}, got ${JSON.stringify(v)}`);
  }
  return x;
}

function oneOf(v, name, allowed) {
  if (!allowed.includes(v)) throw new Error(`--${name}: expected one of ${allowed.join('|')}, got ${JSON.stringify(v)}`);
  return v;
}

function parseOptions(argv) {
  const { values: v } = parseArgs({ args: argv, options: SPEC, strict: true, allowPositionals: false });
  if (v.help) return { help: true };
  const o = {
    engines: num(v.engines, 'engines', 1, true),
    basePort: num(v['base-port'], 'base-port', 1, true),
    host: v.host,
    capacityBlocks: num(v['capacity-blocks'], 'capacity-blocks', 1, true),
    blockSize: num(v['block-size'], 'block-size', 1, true),
    model: v.model,
    tokenizer: v.tokenizer,
    chatTemplate: v['chat-template'],
    kvEvents: oneOf(v['kv-events'], 'kv-events', ['none', 'zmq']),
    eventsBasePort: num(v['events-base-port'], 'events-base-port', 1, true),
    eventsHost: v['events-host'],
    eventsFormat: oneOf(v['events-format'], 'events-format', ['array', 'map']),
    topic: v['events-topic'],
    hashType: oneOf(v['hash-type'], 'hash-type', ['int', 'bytes']),
    hashSeed: v['hash-seed'],
    replayBasePort: num(v['replay-base-port'], 'replay-base-port', 0, true),
    flavour: oneOf(v.flavour, 'flavour', ['vllm', 'sglang']),
    // forms beyond one GPU stream (events.js EventShaper)
    eventForms: {
      offload: num(v['events-offload'], 'events-offload', 0, true),
      // the connector's block_size in tokens (0: the GPU's)
      offloadBlockSize: num(v['offload-block-size'], 'offload-block-size', 0, true),
      reportFull: v['events-report-full'],
      hybrid: v['events-hybrid'],
      bigram: v['events-bigram'],
      partial: v['events-partial'],
    },
    // LoRA adapters served beside the base model: a request's `model`
    // naming one keys its blocks with it (vLLM's --lora-modules names)
    loraModules: v['lora-modules'] ? v['lora-modules'].split(',') : [],
    // tokens an image takes in a chat (0: images refused, a text model)
    mmTokens: num(v['mm-tokens'], 'mm-tokens', 0, true),
    // data-parallel ranks behind each engine's HTTP server (dp_front.js)
    dpRanks: num(v['dp-ranks'], 'dp-ranks', 1, true),
    namePrefix: v['name-prefix'],
    // per engine: its KV capacity and its speed times this factor (unequal
    // GPUs); engines past the list's end get 1
    engineScale: v['engine-scale'] ? v['engine-scale'].split(',').map((x, i) =>
      num(x, `engine-scale[${i}]`, 0.01, false)) : [],
    gpus: parseGpus(v.gpus),
    placement: num(v.placement, 'placement', 0, true),
    share: num(v.share, 'share', 0, false),
    frontendUs: num(v['frontend-us'], 'frontend-us', 0, false),
    // the range of the model's own answer lengths (eos.js)
    eosTokens: parseRange(v['eos-tokens']),
    processes: num(v.processes, 'processes', 1, true),
    // each answer's usage says how its request went in the engine
    trace: !!v.trace,
    // the engines this process runs (a child of --processes); all by default
    engineSet: v['engine-set'] ? v['engine-set'].split(',').map((x) => num(x, 'engine-set', 0, true)) : null,
    timing: {
      gpuStepUs: num(v['gpu-step-us'], 'gpu-step-us', 0, false),
      timeScale: num(v['time-scale'], 'time-scale', 1e-6, false),
      baseUs: num(v['base-us'], 'base-us', 0, false),
      prefillUsPerToken: num(v['prefill-us-per-token'], 'prefill-us-per-token', 0, false),
      decodeUsPerSeq: num(v['decode-us-per-seq'], 'decode-us-per-seq', 0, false),
      loadUsPerToken: num(v['load-us-per-token'], 'load-us-per-token', 0, false),
      maxBatchedTokens: num(v['max-batched-tokens'], 'max-batched-tokens', 1, true),
      maxNumSeqs: num(v['max-num-seqs'], 'max-num-seqs', 1, true),
    },
  };
  if (o.timing.timeScale <= 0) throw new Error('--time-scale must be > 0');
  if (o.dpRanks > 32) throw new Error('--dp-ranks: expected at most 32');
  if (o.dpRanks > 1 && o.processes > 1) throw new Error('--dp-ranks needs --processes 1');
  if (o.share > 1) throw new Error('--share: expected a number in [0, 1]');
  o.gpuOf = placeEngines(o.engines, o.gpus, o.placement);
  if (o.eventForms.bigram && o.flavour !== 'sglang') throw new Error('--events-bigram needs --flavour sglang');
  if (o.eventForms.hybrid && o.flavour !== 'vllm') throw new Error('--events-hybrid needs --flavour vllm');
  const obs = o.eventForms.offloadBlockSize;
  if (obs && (obs % o.blockSize !== 0 || obs / o.blockSize > 64)) {
    throw new Error('--offload-block-size: expected a multiple of --block-size, up to 64 of them');
  }
  if (obs > o.blockSize && o.flavour !== 'vllm') throw new Error('--offload-block-size needs --flavour vllm');
  return o;
}

// The GPU index of each engine: engines fill GPUs in order, `placement`
// (default: as few as spread them evenly) to a GPU. Without --gpus every
// engine has a GPU of its own of speed 1.
function placeEngines(engines, gpus, placement) {
  if (gpus.length === 0) return Array.from({ length: engines }, (_, i) => i);
  const per = placement || Math.ceil(engines / gpus.length);
  if (engines > per * gpus.length) {
    throw new Error(`--placement ${per}: ${engines} engines do not fit on ${gpus.length} GPUs`);
  }
  return Array.from({ length: engines }, (_, i) => Math.floor(i / per));
}

const USAGE = `usage: node bench/emulator/main.js --engines N --base-port 8001 [options]
  see bench/README.md for every option`;

module.exports = { parseOptions, placeEngines, parseGpus, gpuSpec, GPU_CLASSES, GPU_SHARE, FRONTEND_US, EOS_TOKENS, USAGE };
