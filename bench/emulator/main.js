#!/usr/bin/env node
'use strict';
// Engine emulator: N independent vLLM-like engines in one process.
// Prints "ready" on stdout once every engine listens; exits on SIGTERM/SIGINT.

const { parseOptions, USAGE } = require('./options');
const { TextTokenizer } = require('./tokenize');
const { Engine, makeFiller } = require('./engine');

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
  const tokenizer = new TextTokenizer({ tokenizerPath: o.tokenizer, chatTemplatePath: o.chatTemplate });
  const filler = await makeFiller(tokenizer);
  const engines = [];
  for (let i = 0; i < o.engines; i++) {
    const scale = o.engineScale[i] || 1;
    const timing = Object.assign({}, o.timing, {
      baseUs: o.timing.baseUs / scale,
      prefillUsPerToken: o.timing.prefillUsPerToken / scale,
      decodeUsPerSeq: o.timing.decodeUsPerSeq / scale,
    });
    engines.push(new Engine({
      index: i,
      name: o.namePrefix + i,
      host: o.host,
      port: o.basePort + i,
      model: o.model,
      blockSize: o.blockSize,
      capacityBlocks: Math.max(1, Math.round(o.capacityBlocks * scale)),
      timing,
      kvEvents: o.kvEvents,
      eventsHost: o.eventsHost,
      eventsPort: o.eventsBasePort + i,
      replayPort: o.replayBasePort > 0 ? o.replayBasePort + i : null,
      topic: o.topic,
      eventsFormat: o.eventsFormat,
      hashType: o.hashType,
      flavour: o.flavour,
      hashSeed: o.hashSeed,
    }, tokenizer, filler));
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
  // Commands on stdin, one a line (for kvbench's fault runs):
  //   down I MS   engine I goes away for MS ms and comes back empty
  // Each change is reported on stdout as "engine I down|up".
  let pending = '';
  process.stdin.on('data', (d) => {
    pending += d;
    // commands are short: a line that never ends is dropped, not buffered
    if (pending.length > 4096 && pending.indexOf('\n') < 0) pending = '';
    let nl;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl).trim();
      pending = pending.slice(nl + 1);
      const m = /^down (\d+) (\d+)$/.exec(line);
      if (!m || Number(m[1]) >= engines.length) {
        if (line !== '') process.stderr.write(`emulator: unknown command ${JSON.stringify(line)}\n`);
        continue;
      }
      const i = Number(m[1]);
      engines[i].goDown(Number(m[2]), (state) => process.stdout.write(`engine ${i} ${state}\n`));
    }
  });
  process.stdin.on('error', () => {});
  process.stdout.write('ready\n');
}

main().catch((err) => {
  process.stderr.write(`emulator: ${err.stack || err.message}\n`);
  process.exit(1);
});
