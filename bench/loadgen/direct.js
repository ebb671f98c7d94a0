#!/usr/bin/env node
'use strict';
// A client of one engine that no nginx sees: C closed-loop clients send
// completions straight to http://127.0.0.1:PORT, each with a prompt of its
// own (nothing cached), until --seconds pass or it is killed. With a
// kvbench run beside it, this is the load only the engine's /metrics can
// show kvroute (metrics=on; BENCHMARKS.md, "Load from the engines").
//   node bench/loadgen/direct.js --port P [--concurrency 8]
//       [--prompt-tokens 1024] [--max-tokens 64] [--seconds 600]

const http = require('node:http');
const { parseArgs } = require('node:util');

const { values: o } = parseArgs({
  options: {
    port: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
    'prompt-tokens': { type: 'string', default: '1024' },
    'max-tokens': { type: 'string', default: '64' },
    seconds: { type: 'string', default: '600' },
  },
});

if (!o.port) {
  process.stderr.write('usage: direct.js --port P [--concurrency C] [--prompt-tokens N] '
    + '[--max-tokens M] [--seconds S]\n');
  process.exit(2);
}

const agent = new http.Agent({ keepAlive: true });
const until = Date.now() + Number(o.seconds) * 1000;
const n = Number(o['prompt-tokens']);
let next = 0;
let done = 0;
let failed = 0;

function send() {
  if (Date.now() >= until) return Promise.resolve();
  const k = next++;
  // distinct token ids per request: no prefix is shared, every one a miss
  const prompt = Array.from({ length: n }, (_, i) => 1000 + ((k * 7919 + i) % 100000));
  const body = JSON.stringify({ model: 'direct', prompt, max_tokens: Number(o['max-tokens']) });
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port: Number(o.port), method: 'POST',
      path: '/v1/completions', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
    (res) => {
      res.resume();
      res.on('end', () => { if (res.statusCode === 200) done++; else failed++; resolve(); });
    });
    req.on('error', () => { failed++; setTimeout(resolve, 100); });
    req.end(body);
  }).then(send);
}

process.on('SIGTERM', () => {
  process.stdout.write(`direct: ${done} done, ${failed} failed\n`);
  process.exit(0);
});

Promise.all(Array.from({ length: Number(o.concurrency) }, send)).then(() => {
  process.stdout.write(`direct: ${done} done, ${failed} failed\n`);
  agent.destroy();
});
