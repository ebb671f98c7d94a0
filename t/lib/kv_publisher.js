'use strict';
// A scripted KV event publisher for kvroute's tests: binds a ZMQ PUB
// socket, waits for subscribers to connect, sends the messages of a
// scenario (JSON file: [{frames: [...]}, ...]), then stays until killed.
// A frame is {hex: "..."}, {text: "..."}, {seq: N} (8 bytes big-endian) or
// {msgpack: value} (hash fields as {"u64": "123"} become uint64).
//   node t/lib/kv_publisher.js tcp://127.0.0.1:PORT scenario.json [wait_ms]

const fs = require('node:fs');
const path = require('node:path');
const nm = path.join(__dirname, '..', '..', 'bench', 'node_modules');
const zmq = require(path.join(nm, 'zeromq'));
const { encode } = require(path.join(nm, '@msgpack', 'msgpack'));

function value(v) {
  if (Array.isArray(v)) return v.map(value);
  if (v && typeof v === 'object') {
    if ('u64' in v) return BigInt(v.u64);
    const o = {};
    for (const k of Object.keys(v)) o[k] = value(v[k]);
    return o;
  }
  return v;
}

function frame(f) {
  if ('hex' in f) return Buffer.from(f.hex, 'hex');
  if ('text' in f) return Buffer.from(f.text);
  if ('seq' in f) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(BigInt(f.seq));
    return b;
  }
  return Buffer.from(encode(value(f.msgpack), { useBigInt64: true }));
}

async function main() {
  const [endpoint, file, waitMs] = process.argv.slice(2);
  const messages = JSON.parse(fs.readFileSync(file, 'utf8'));
  const pub = new zmq.Publisher();
  await pub.bind(endpoint);
  await new Promise((r) => setTimeout(r, Number(waitMs || 1000)));
  for (const m of messages) {
    await pub.send(m.frames.map(frame));
    await new Promise((r) => setTimeout(r, 20));
  }
  process.stdout.write('sent\n');
  process.on('SIGTERM', () => { pub.close(); process.exit(0); });
  setInterval(() => {}, 1000);
}

main().catch((e) => { process.stderr.write(String(e.stack || e) + '\n'); process.exit(1); });
