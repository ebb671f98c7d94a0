'use strict';
// What every result row says of where it came from: the commit it ran at,
// the exact kvroute line (or which load-generator router), the emulator's
// parameters and how many runs its figures are the medians of. kvbench
// --json and fidelity.js write it; a row without it cannot be reproduced.

const { spawnSync } = require('node:child_process');
const { describeRouter } = require('./routers');

function commit(top) {
  const r = spawnSync('git', ['-C', top, 'describe', '--always', '--dirty'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : 'unknown';
}

// o: kvbench's options; the emulator's fitted defaults (fidelity/model.js)
// with what this run set on its command line over them
function emulatorParams(o) {
  const { emulatorDefaults, withEmulatorArgs } = require('../fidelity/model');
  const extra = o.emulatorArgs || [];
  const p = withEmulatorArgs(emulatorDefaults(), extra);
  // --emulator-arg comes after kvbench's own flags on the emulator's
  // command line, so its nodes and frontend time are the ones that ran
  const gpus = lastArg(extra, '--gpus');
  const frontend = lastArg(extra, '--frontend-us');
  return Object.assign(p, {
    gpus: gpus !== undefined ? gpus : o.gpus, placement: o.placement || 0,
    frontend_us: frontend !== undefined ? Number(frontend)
      : o.frontendUs === null || o.frontendUs === undefined ? p.frontend_us : o.frontendUs,
    max_tokens: o.maxTokens, time_scale: o.timeScale, capacity_blocks: o.capacityBlocks,
    block_size: o.blockSize, requests: o.requests, seed: o.seed,
    engine_scale: o.engineScale && o.engineScale.length ? o.engineScale : undefined,
    dp_ranks: o.dpRanks > 1 ? o.dpRanks : undefined,
    extra_args: o.emulatorArgs && o.emulatorArgs.length ? o.emulatorArgs : undefined,
  });
}

// the value of the last --name V or --name=V in args (undefined: none)
function lastArg(args, name) {
  let value;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === name && i + 1 < args.length) value = args[++i];
    else if (args[i].startsWith(`${name}=`)) value = args[i].slice(name.length + 1);
  }
  return value;
}

function provenance(top, routerEntry, o, runs) {
  return { commit: commit(top), upstream: describeRouter(routerEntry), runs,
    emulator_params: emulatorParams(o) };
}

module.exports = { commit, emulatorParams, provenance };
