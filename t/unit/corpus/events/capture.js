'use strict';
// Captures KV event messages from the bench emulator for t/unit/test_events.c.
//
//   node t/unit/corpus/events/capture.js [NAME ...]   (from the repository
//                                                     root; default: all)
//
// For each configuration it starts the emulator (ports 18701 HTTP, 18801
// events), subscribes with a ZMQ SUB socket, sends a few token-id prompts
// (capacity 16 blocks, so later ones evict) and a prefix-cache reset, then
// stops the emulator.  Kept per configuration: the first 8 messages (they
// include a store under a parent, evictions and AllBlocksCleared), each as
//   NAME.bin     the payload frame
//   NAME.expect  what @msgpack/msgpack decodes from it, in the test's
//                text form (hashes as u64: ints mod 2^64, bin as the last
//                8 bytes big-endian, kv-events.md 2.4)

const path = require('node:path');
const fs = require('node:fs');
const http = require('node:http');
const { spawn } = require('node:child_process');

const ROOT = path.join(__dirname, '..', '..', '..', '..');
const zmq = require(path.join(ROOT, 'bench/node_modules/zeromq'));
const msgpack = require(path.join(ROOT, 'bench/node_modules/@msgpack/msgpack'));

const HTTP_PORT = 18701;
const EV_PORT = 18801;

const CONFIGS = [
  { name: 'vllm-array-int', args: ['--events-format', 'array', '--hash-type', 'int'] },
  { name: 'vllm-array-bytes', args: ['--events-format', 'array', '--hash-type', 'bytes'] },
  { name: 'vllm-map-int', args: ['--events-format', 'map', '--hash-type', 'int',
    '--events-topic', 'kv-events'] },
  { name: 'vllm-map-bytes', args: ['--events-format', 'map', '--hash-type', 'bytes'] },
  { name: 'sglang-array-int', args: ['--flavour', 'sglang', '--events-format', 'array'] },
  { name: 'sglang-map-int', args: ['--flavour', 'sglang', '--events-format', 'map'] },
  // the forms beyond one GPU stream (bench/emulator/events.js EventShaper)
  { name: 'vllm-map-forms', args: ['--events-format', 'map', '--events-offload', '8',
    '--events-report-full', '--events-hybrid'] },
  { name: 'vllm-array-forms', args: ['--events-format', 'array', '--events-offload', '8',
    '--events-report-full', '--events-hybrid'] },
  { name: 'sglang-map-bigram', args: ['--flavour', 'sglang', '--events-format', 'map',
    '--events-bigram', '--events-offload', '8'] },
  // vLLM's extra keys: a salted request, then one of a LoRA adapter (each
  // block's extra_keys, lora_name, lora_id), and partial-block stores
  { name: 'vllm-map-keys', args: ['--events-format', 'map', '--lora-modules', 'ad-a',
    '--events-partial'], bodies: [{ cache_salt: 'tenant-1' }, { model: 'ad-a' }, {}] },
  // vLLM's offloading connector with blocks of 2 GPU blocks (block_size
  // 32): a group named by its last GPU block's hash, as bytes
  { name: 'vllm-map-offload-groups', args: ['--events-format', 'map', '--hash-type', 'bytes',
    '--events-offload', '16', '--offload-block-size', '32'] },
];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function post(urlPath, body) {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body || {}));
    const req = http.request({ host: '127.0.0.1', port: HTTP_PORT, method: 'POST', path: urlPath,
      headers: { 'content-type': 'application/json', 'content-length': data.length } },
    (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(data);
  });
}

function startEmulator(args) {
  const all = [path.join(ROOT, 'bench/emulator/main.js'), '--engines', '1',
    '--base-port', String(HTTP_PORT), '--kv-events', 'zmq',
    '--events-base-port', String(EV_PORT), '--replay-base-port', '0',
    '--time-scale', '20', '--capacity-blocks', '16', '--block-size', '16'].concat(args);
  const proc = spawn(process.execPath, all, { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      if (out.includes('ready\n')) resolve(proc);
    });
    proc.on('exit', (code) => reject(new Error('emulator exited ' + code)));
  });
}

function u64(h) {
  if (h === null || h === undefined) return '-';
  if (h instanceof Uint8Array) {
    let v = 0n;
    for (const b of h.subarray(Math.max(0, h.length - 8))) v = (v << 8n) | BigInt(b);
    return v.toString();
  }
  return BigInt.asUintN(64, BigInt(h)).toString();
}

// one event -> {type, fields by name}
function fields(ev) {
  if (Array.isArray(ev)) {
    const [type, ...rest] = ev;
    if (type === 'BlockStored') {
      const [block_hashes, parent_block_hash, token_ids, block_size] = rest;
      return { type, block_hashes, parent_block_hash, token_ids, block_size };
    }
    if (type === 'BlockRemoved') return { type, block_hashes: rest[0] };
    return { type };
  }
  return ev;
}

function expectText(batch) {
  const events = batch[1];
  const rank = batch.length > 2 && batch[2] !== null ? String(batch[2]) : '-';
  const lines = [`batch ${events.length} ${rank}`];
  for (const raw of events) {
    const e = fields(raw);
    if (e.type === 'BlockStored') {
      lines.push(`stored ${e.block_size} ${u64(e.parent_block_hash)} ${e.block_hashes.length} `
        + e.block_hashes.map(u64).join(' '));
      // EAGLE bigram pairs: the decoder delivers the first of each
      const ids = e.token_ids.map((t) => (Array.isArray(t) ? t[0] : t));
      lines.push(`  ${ids.length} ${ids.join(' ')}`);
    } else if (e.type === 'BlockRemoved') {
      lines.push(`removed ${e.block_hashes.length} ${e.block_hashes.map(u64).join(' ')}`);
    } else if (e.type === 'AllBlocksCleared') {
      lines.push('cleared');
    } else {
      throw new Error('unexpected event ' + e.type);
    }
  }
  return lines.join('\n') + '\n';
}

async function capture(cfg) {
  const proc = await startEmulator(cfg.args);
  const sub = new zmq.Subscriber({ linger: 0 });
  const ready = new Promise((r) => sub.events.on('handshake', () => r()));
  sub.connect(`tcp://127.0.0.1:${EV_PORT}`);
  sub.subscribe();
  const msgs = [];
  const loop = (async () => {
    try {
      for await (const frames of sub) msgs.push(frames);
    } catch (e) { /* closed */ }
  })();
  await Promise.race([ready, sleep(3000)]);
  await sleep(200);

  try {
    // 3 blocks, 4 more under a parent, 10 more (> 16: evictions)
    const sizes = [[1, 50], [1, 120], [3, 165]];
    for (let k = 0; k < sizes.length; k++) {
      const [seed, n] = sizes[k];
      const prompt = Array.from({ length: n }, (_, i) => (seed * 7919 + i * 104729) % 151643);
      await post('/v1/completions', Object.assign({ prompt, max_tokens: 2 }, (cfg.bodies || [])[k] || {}));
    }
    await sleep(300);
    await post('/reset_prefix_cache');
    await sleep(300);
  } finally {
    sub.close();
    await loop;
    proc.kill('SIGTERM');
    await new Promise((r) => proc.on('exit', r));
  }

  const decoded = msgs.map((f) => ({ f, batch: msgpack.decode(f[2], { useBigInt64: true }) }));
  const types = (d) => d.batch[1].map((e) => fields(e).type);
  const kept = decoded.slice(0, 8);
  const rem = decoded.find((d) => types(d).includes('BlockRemoved'));
  const clr = decoded.find((d) => types(d).includes('AllBlocksCleared'));
  const par = decoded.find((d) => d.batch[1].some((e) => {
    const x = fields(e);
    return x.type === 'BlockStored' && x.parent_block_hash !== null;
  }));

  for (const d of kept) {
    const seq = d.f[1].readBigUInt64BE(0);
    const base = path.join(__dirname, `${cfg.name}-seq${seq}`);
    fs.writeFileSync(base + '.bin', d.f[2]);
    fs.writeFileSync(base + '.expect', `# topic "${d.f[0].toString()}" seq ${seq}\n`
      + expectText(d.batch));
  }
  console.log(`${cfg.name}: ${msgs.length} messages, kept ${kept.length}`
    + (rem ? '' : ' (no BlockRemoved)') + (clr ? '' : ' (no AllBlocksCleared)')
    + (par ? '' : ' (no parent)'));
}

(async () => {
  const only = process.argv.slice(2);
  for (const cfg of CONFIGS) if (only.length === 0 || only.includes(cfg.name)) await capture(cfg);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
