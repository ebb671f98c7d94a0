#!/usr/bin/env node
'use strict';
// bench/sim: the policy simulator's command line (bench/README.md).
//   node bench/sim/main.js --workers 6 --prefixes 24 --concurrency 8
//       [--requests 720] [--seeds 1,2,3] [--measure-from 96]
//       [--gpu-pairs] [--share 1] [--base-us N] [--prefill-us-per-token N]
//       [--decode-us-per-seq N] POLICY...
// POLICY: round_robin, partition, dynamo[:W], kvroute[:ABS:REL],
// cost[:CORUN:EVICT]; kvroute+admit and cost+admit add src/kvr_policy.c's
// admission check
// One JSON line a policy: the mean of each figure over the seeds.

require('./clock');   // before the emulator's modules use any timer
const { parseArgs } = require('node:util');
const { simulate } = require('./sim');
const P = require('./policies');

function policyOf(spec, timing) {
  const [name, ...a] = spec.split(':');
  const n = a.map(Number);
  switch (name) {
    case 'round_robin': return P.roundRobin();
    case 'partition': return P.partition();
    case 'dynamo': return P.dynamo(...n);
    case 'kvroute': return P.kvroute(...n);
    case 'cost': return P.costTokens(...n);
    case 'cost_ms': return P.cost(n[0], timing);
    case 'cost+admit': return P.admitted(P.costTokens(...n));
    case 'kvroute+admit': return P.admitted(P.kvroute(...n));
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
    'gpu-pairs': { type: 'boolean', default: false },
    share: { type: 'string', default: '1' },
    'base-us': { type: 'string' },
    'prefill-us-per-token': { type: 'string' },
    'decode-us-per-seq': { type: 'string' },
  } });
  const timing = {};
  if (v['base-us']) timing.baseUs = Number(v['base-us']);
  if (v['prefill-us-per-token']) timing.prefillUsPerToken = Number(v['prefill-us-per-token']);
  if (v['decode-us-per-seq']) timing.decodeUsPerSeq = Number(v['decode-us-per-seq']);
  const seeds = v.seeds.split(',').map(Number);
  if (positionals.length === 0) throw new Error('name at least one policy');
  for (const spec of positionals) {
    const policy = policyOf(spec, timing);
    const sum = {};
    for (const seed of seeds) {
      const r = simulate({ workers: Number(v.workers), prefixes: Number(v.prefixes),
        concurrency: Number(v.concurrency), requests: Number(v.requests), seed,
        measureFrom: Number(v['measure-from']), timing, gpuPairs: v['gpu-pairs'],
        share: Number(v.share) }, policy);
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
