#!/usr/bin/env node
'use strict';
// bench/sim: the policy simulator's command line (bench/README.md).
//   node bench/sim/main.js --workers 6 --prefixes 24 --concurrency 8
//       [--requests 720] [--seeds 1,2,3] [--measure-from 96] [--rate R]
//       [--gpus 24g,8g,8g] [--placement N] [--share S] [--frontend-us N]
//       [--max-tokens N] [--base-us N] [--gpu-step-us N]
//       [--prefill-us-per-token N] [--decode-us-per-seq N]
//       [--max-batched-tokens N] [--cpu-blocks N] [--load-us-per-token N]
//       POLICY...
// POLICY: random, random_conn, round_robin, partition, dynamo[:W], kvroute[:ABS:REL],
// cost[:CORUN:EVICT], room[:DECODE:EVICT:WAIT:PEND:SLACK:DEDUP] (experimental:
// the KV room a request needs, bench/sim/policies.js), ttft[:DECODE:EVICT];
// ttft_c[:DECODE:EVICT:WAIT:HOST:SPEED_MS:OWN] (the module's policy=ttft itself, in
// WebAssembly: bench/sim/cpolicy.js, make policy-wasm);
// kvroute+admit and cost+admit add src/route/kvr_policy.c's
// admission check; auto_decode (policy=ttft as metrics=on configures it,
// ttft_decode learned: bench/sim/auto_decode.js, a learner afresh each
// seed) and auto_decode:all (learning from requests sent without KV room
// too, as the module did until 2026-12-06)
// One JSON line a policy: the mean of each figure over the seeds.

require('./clock');   // before the emulator's modules use any timer
const { parseArgs } = require('node:util');
const { simulate } = require('./sim');
const P = require('./policies');
const { parseGpus, GPU_SHARE } = require('../emulator/options');

function policyOf(spec, timing) {
  const [name, ...a] = spec.split(':');
  const n = a.map(Number);
  switch (name) {
    case 'round_robin': return P.roundRobin();
    case 'random': return P.random();
    case 'random_conn': return P.randomPerConnection();
    case 'partition': return P.partition();
    case 'llmd': return require('./peers').llmd();
    case 'sglang': return require('./peers').sglang();
    case 'dynamo': return P.dynamo(...n);
    case 'dynamo_exact': return P.dynamoExact(...n);
    case 'kvroute': return P.kvroute(...n);
    case 'cost': return P.costTokens(...n);
    case 'cost_ms': return P.cost(n[0], timing);
    case 'cost+admit': return P.admitted(P.costTokens(...n));
    case 'ttft': return P.ttftCost(...n);
    case 'room': return P.roomCost(...n);
    case 'ttft_c': return require('./cpolicy').ttftC(...n);
    case 'kvroute+admit': return P.admitted(P.kvroute(...n));
    case 'auto_decode': return require('./auto_decode').autoDecode({ everyQueued: a[0] === 'all' });
    default: throw new Error(`unknown policy ${name}`);
  }
}

function main() {
  const { values: v, positionals } = parseArgs({ allowPositionals: true, options: {
    workers: { type: 'string', default: '6' },
    prefixes: { type: 'string', default: '24' },
    concurrency: { type: 'string', default: '8' },
    requests: { type: 'string', default: '720' },
    seeds: { type: 'string', default: '1,2,3' },
    'measure-from': { type: 'string', default: '0' },
    rate: { type: 'string', default: '0' },
    gpus: { type: 'string', default: '' },
    placement: { type: 'string', default: '0' },
    share: { type: 'string', default: String(GPU_SHARE) },
    'frontend-us': { type: 'string', default: String(require('../emulator/options').FRONTEND_US) },
    'max-tokens': { type: 'string', default: String(require('../fidelity/model').DEFAULT_MAX_TOKENS) },
    'base-us': { type: 'string' },
    'gpu-step-us': { type: 'string' },
    'prefill-us-per-token': { type: 'string' },
    'decode-us-per-seq': { type: 'string' },
    'max-batched-tokens': { type: 'string' },
    'cpu-blocks': { type: 'string', default: '0' },
    'load-us-per-token': { type: 'string' },
  } });
  const timing = {};
  for (const [opt, key] of [['base-us', 'baseUs'], ['gpu-step-us', 'gpuStepUs'],
    ['prefill-us-per-token', 'prefillUsPerToken'], ['decode-us-per-seq', 'decodeUsPerSeq'],
    ['max-batched-tokens', 'maxBatchedTokens'], ['load-us-per-token', 'loadUsPerToken']]) {
    if (v[opt] !== undefined) timing[key] = Number(v[opt]);
  }
  const seeds = v.seeds.split(',').map(Number);
  if (positionals.length === 0) throw new Error('name at least one policy');
  for (const spec of positionals) {
    // a learning policy starts afresh each seed; the others as they were
    const fresh = spec.startsWith('auto_decode');
    const shared = fresh ? null : policyOf(spec, timing);
    const sum = {};
    for (const seed of seeds) {
      const policy = shared || policyOf(spec, timing);
      const r = simulate({ workers: Number(v.workers), prefixes: Number(v.prefixes),
        concurrency: Number(v.concurrency), requests: Number(v.requests), seed,
        measureFrom: Number(v['measure-from']), rate: Number(v.rate), timing, gpus: parseGpus(v.gpus),
        placement: Number(v.placement), share: Number(v.share),
        frontendUs: Number(v['frontend-us']), maxTokens: Number(v['max-tokens']),
        cpuBlocks: Number(v['cpu-blocks']) }, policy);
      for (const [k, x] of Object.entries(r)) sum[k] = (sum[k] || 0) + x / seeds.length;
    }
    const out = { policy: spec, seeds: seeds.length };
    for (const [k, x] of Object.entries(sum)) out[k] = Math.round(x * 1000) / 1000;
    process.stdout.write(JSON.stringify(out) + '\n');
  }
}

try {
  main();
} catch (err) {
  process.stderr.write(`sim: ${err.message}\n`);
  process.exit(2);
}
