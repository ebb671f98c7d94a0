#!/usr/bin/env node
'use strict';
// Engine emulator: N vLLM-like engines, in one process or, with
// --processes P, in P child processes, each running the engines of whole
// GPUs (engines on one GPU must share its simulation). One Node event loop
// serving every engine falls behind at high load and time scales; the
// step lateness each engine reports (/metrics) says whether it did.
// Prints "ready" on stdout once every engine listens; exits on SIGTERM/SIGINT.

const { parseOptions, gpuSpec, USAGE } = require('./options');
const { TextTokenizer } = require('./tokenize');
const { Engine, makeFiller } = require('./engine');
const { DpFront } = require('./dp_front');
const { Gpu } = require('./gpu');
const { realClock } = require('./model_clock');
const { spawn } = require('node:child_process');

// Commands on stdin, one a line (for kvbench's fault runs):
//   down I MS   engine I goes away for MS ms and comes back empty
//   gap I N     engine I's KV event publisher loses its next N batches (0:
//               none, a marker for a control run)
//               (kept in its replay buffer, as batches a subscriber's
//               high-water mark dropped): the subscriber sees a gap
// Each change is reported on stdout as "engine I down|up|gap".
// f(line, verb, I, X) for each well-formed command; anything else is
// reported on stderr.
function onCommand(f) {
  let pending = '';
  process.stdin.on('data', (d) => {
    pending += d;
    // commands are short: a line that never ends is dropped, not buffered
    if (pending.length > 4096 && pending.indexOf('\n') < 0) pending = '';
    let nl;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl).trim();
      pending = pending.slice(nl + 1);
      const m = /^(down|gap) (\d+) (\d+)$/.exec(line);
      if (m) f(line, m[1], Number(m[2]), Number(m[3]));
      else if (line !== '') process.stderr.write(`emulator: unknown command ${JSON.stringify(line)}\n`);
    }
  });
  process.stdin.on('error', () => {});
}

// The parent of --processes P: GPU g's engines go to child g mod P; stdin
// commands go to the child that runs the engine, children's reports and
// errors pass through, "ready" once every child is.
async function runChildren(o, argv) {
  const sets = Array.from({ length: o.processes }, () => []);
  for (let i = 0; i < o.engines; i++) sets[o.gpuOf[i] % o.processes].push(i);
  const children = [];
  const owner = new Map();
  let ready = 0;
  const live = sets.filter((s) => s.length > 0);
  for (const set of live) {
    const child = spawn(process.execPath, [__filename, ...argv, '--processes', '1',
      '--engine-set', set.join(',')], { stdio: ['pipe', 'pipe', 'inherit'] });
    for (const i of set) owner.set(i, child);
    let buf = '';
    child.stdout.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line === 'ready') {
          if (++ready === live.length) process.stdout.write('ready\n');
        } else {
          process.stdout.write(line + '\n');
        }
      }
    });
    child.stdin.on('error', () => {});
    child.on('exit', (code) => {
      if (!stopping) {
        process.stderr.write(`emulator: a child exited (${code})\n`);
        stop(1);
      }
    });
    children.push(child);
  }
  let stopping = false;
  const stop = (code) => {
    if (stopping) return;
    stopping = true;
    let left = children.length;
    const done = () => { if (--left <= 0) process.exit(code); };
    for (const c of children) {
      if (c.exitCode !== null || c.signalCode !== null) done();
      else { c.once('exit', done); c.kill('SIGTERM'); }
    }
  };
  process.on('SIGTERM', () => stop(0));
  process.on('SIGINT', () => stop(0));
  onCommand((line, verb, engine, x) => {
    const child = owner.get(engine);
    if (child) child.stdin.write(`${verb} ${engine} ${x}\n`);
    else process.stderr.write(`emulator: unknown command ${JSON.stringify(line)}\n`);
  });
}

async function main() {
  let o;
  try {
    o = parseOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`emulator: ${err.message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (o.help) {
    process.stdout.write(USAGE + '\n');
    return;
  }
  if (o.processes > 1) return runChildren(o, process.argv.slice(2));
  const tokenizer = new TextTokenizer({ tokenizerPath: o.tokenizer, chatTemplatePath: o.chatTemplate });
  const filler = await makeFiller(tokenizer);
  const clock = realClock(o.timing.timeScale);
  const gpus = new Map();
  const gpuOf = (i) => {
    const g = o.gpuOf[i];
    if (!gpus.has(g)) {
      gpus.set(g, new Gpu(clock, Object.assign(gpuSpec(o.gpus.length ? o.gpus[g] : 1), { share: o.share })));
    }
    return gpus.get(g);
  };
  const engines = [];
  const byIndex = new Map();
  for (let i = 0; i < o.engines; i++) {
    if (o.engineSet && !o.engineSet.includes(i)) continue;
    const scale = o.engineScale[i] || 1;
    const timing = Object.assign({}, o.timing, {
      baseUs: o.timing.baseUs / scale,
      gpuStepUs: o.timing.gpuStepUs / scale,
      prefillUsPerToken: o.timing.prefillUsPerToken / scale,
      decodeUsPerSeq: o.timing.decodeUsPerSeq / scale,
    });
    // with --dp-ranks R, rank r of engine i publishes on events-base-port
    // + i x R + r (and replay-base-port + i x R + r)
    const R = o.dpRanks;
    const ranks = [];
    for (let r = 0; r < R; r++) {
      ranks.push(new Engine({
        index: i,
        name: o.namePrefix + i + (R > 1 ? `-dp${r}` : ''),
        host: o.host,
        port: o.basePort + i,
        listen: R === 1,
        dpRank: R > 1 ? r : 0,
        model: o.model,
        blockSize: o.blockSize,
        capacityBlocks: Math.max(1, Math.round(o.capacityBlocks * scale)),
        timing,
        // each rank a GPU of its own, of engine i's GPU's class
        gpu: R === 1 ? gpuOf(i) : new Gpu(clock, { speed: o.gpus.length ? o.gpus[o.gpuOf[i]] : 1,
          share: o.share }),
        frontendUs: o.frontendUs,
        eosTokens: o.eosTokens,
        kvEvents: o.kvEvents,
        eventsHost: o.eventsHost,
        eventsPort: o.eventsBasePort + i * R + r,
        replayPort: o.replayBasePort > 0 ? o.replayBasePort + i * R + r : null,
        topic: o.topic,
        eventsFormat: o.eventsFormat,
        hashType: o.hashType,
        flavour: o.flavour,
        hashSeed: o.hashSeed,
        eventForms: o.eventForms,
        loraModules: o.loraModules,
        mmTokens: o.mmTokens,
        trace: o.trace,
      }, tokenizer, filler));
    }
    engines.push(R === 1 ? ranks[0]
      : new DpFront({ index: i, name: o.namePrefix + i, host: o.host, port: o.basePort + i }, ranks));
    byIndex.set(i, engines[engines.length - 1]);
  }
  let stopping = false;
  const stop = async (sig) => {
    if (stopping) return;
    stopping = true;
    await Promise.allSettled(engines.map((e) => e.stop()));
    process.exit(sig === 'error' ? 1 : 0);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  try {
    await Promise.all(engines.map((e) => e.start()));
  } catch (err) {
    process.stderr.write(`emulator: cannot start: ${err.message}\n`);
    await stop('error');
    return;
  }
  onCommand((line, verb, engine, x) => {
    if (!byIndex.has(engine)) {
      process.stderr.write(`emulator: unknown command ${JSON.stringify(line)}\n`);
      return;
    }
    const e = byIndex.get(engine);
    if (verb === 'gap') {
      if (e.loseBatches(x)) process.stdout.write(`engine ${engine} gap\n`);
      else process.stderr.write(`emulator: engine ${engine} publishes no events: ${JSON.stringify(line)}\n`);
      return;
    }
    e.goDown(x, (state) => process.stdout.write(`engine ${engine} ${state}\n`));
  });
  process.stdout.write('ready\n');
}

main().catch((err) => {
  process.stderr.write(`emulator: ${err.stack || err.message}\n`);
  process.exit(1);
});
