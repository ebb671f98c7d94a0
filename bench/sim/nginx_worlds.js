#!/usr/bin/env node
'use strict';
// Points of a fitted world through real nginx: kvbench with the world's
// emulator parameters (fit.js simWorld) and its output length, each
// router at each point and seed, one row a run appended to --out as
// {world, w, p, c, router, seed, row}. A row already in --out (same
// world, point, router and seed) is kept: delete the file to run again.
//
//   node bench/sim/nginx_worlds.js --worlds FILE --world NAME --out FILE
//       --points 3/4/7,3/4/12 (workers/concurrency/prefixes)
//       --routers dynamo,kvroute-kv-own50-dec300 [--seeds 1,2]
//       [--requests 720] [--skip 96] [--build DIR] [--frontends N]
//
// Run nothing else meanwhile: the emulator's clock is the measurement.

const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { parseArgs } = require('node:util');
const fit = require('../fidelity/fit');
const { readWorlds } = require('./worlds');

const KVBENCH = path.join(__dirname, '..', 'kvbench');

function main() {
  const { values: v } = parseArgs({ options: {
    worlds: { type: 'string' },
    world: { type: 'string' },
    out: { type: 'string' },
    points: { type: 'string' },
    routers: { type: 'string' },
    seeds: { type: 'string', default: '1,2' },
    requests: { type: 'string', default: '720' },
    skip: { type: 'string', default: '96' },
    build: { type: 'string' },
    frontends: { type: 'string', default: '1' },
  } });
  for (const k of ['worlds', 'world', 'out', 'points', 'routers']) {
    if (!v[k]) throw new Error(`--${k} is required`);
  }
  const w = readWorlds(v.worlds).find((x) => x.name === v.world);
  if (!w) throw new Error(`no world ${v.world} in ${v.worlds}`);
  const sw = fit.simWorld(w.params);
  const done = new Set();
  if (fs.existsSync(v.out)) {
    for (const l of fs.readFileSync(v.out, 'utf8').split('\n').filter((x) => x.trim())) {
      const r = JSON.parse(l);
      done.add([r.world, r.w, r.c, r.p, r.router, r.seed].join(' '));
    }
  }
  for (const seed of v.seeds.split(',').map(Number)) {
    for (const pt of v.points.split(',')) {
      const [workers, concurrency, prefixes] = pt.split('/').map(Number);
      for (const router of v.routers.split(',')) {
        const key = [w.name, workers, concurrency, prefixes, router, seed].join(' ');
        if (done.has(key)) continue;
        const args = ['run', '--router', router, '--workers', String(workers), '--prefixes', String(prefixes),
          '--concurrency', String(concurrency), '--requests', v.requests, '--skip', v.skip,
          '--seed', String(seed), '--time-scale', '1', '--max-tokens', String(sw.maxTokens), '--json',
          '--frontends', v.frontends,
          // the frontends on 18000, 18001, ...; the engines after them
          '--port', '18000', '--base-port', String(18000 + Number(v.frontends)),
          ...(v.build ? ['--build', v.build] : []),
          ...sw.emulatorArgs.map((a) => `--emulator-arg=${a}`)];
        const t0 = Date.now();
        const r = spawnSync(KVBENCH, args, { encoding: 'utf8', maxBuffer: 1 << 28 });
        if (r.status !== 0) {
          process.stderr.write(r.stderr);
          throw new Error(`kvbench failed at ${key}`);
        }
        const row = JSON.parse(r.stdout.trim().split('\n').pop());
        fs.appendFileSync(v.out, JSON.stringify({ world: w.name, w: workers, p: prefixes, c: concurrency,
          router, seed, row }) + '\n');
        const s = row.steady || row;
        process.stderr.write(`${key}: ${s.requests_per_s} req/s, p99 ${s.ttft_p99_ms} ms` +
          `${row.ttft_decode ? `, ttft_decode ${row.ttft_decode.map((d) => d && `${d.tokens} ${d.source}`).join('/')}` : ''}` +
          ` (${Math.round((Date.now() - t0) / 1000)} s)\n`);
      }
    }
  }
}

if (require.main === module) main();
