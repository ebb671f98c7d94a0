'use strict';
// A flood of malformed KV event messages with valid ones mixed in, on one
// server's endpoint (vLLM's 3-frame layout: topic, 8-byte big-endian
// sequence, msgpack batch). Binds a PUB socket, waits DELAY seconds (the
// subscriber connects meanwhile), sends for SECONDS at RATE bad messages a
// second with one valid batch after every EVERY bad ones, then prints one
// JSON line of what it sent and stays until SIGTERM.
//   node bench/faults/flood.js tcp://127.0.0.1:PORT DELAY SECONDS RATE EVERY
//
// Bad kinds, in turn: frame-level (2 frames, 1 frame, a 7-byte sequence,
// MANY frames, default 6, env FLOOD_MANY_FRAMES: no sequence number used)
// and payload-level (a correct next sequence number with garbage bytes, a
// map instead of a batch, a truncated batch, random bytes). Payload-level
// ones take their place in the sequence, as a publisher's corrupt batch
// would, so the stream has no gap.

const path = require('node:path');
const crypto = require('node:crypto');
const nm = path.join(__dirname, '..', 'node_modules');
const zmq = require(path.join(nm, 'zeromq'));
const { encode } = require(path.join(nm, '@msgpack', 'msgpack'));

const BLOCKS = 4;          /* blocks per valid batch, one chain */
const BLOCK_SIZE = 16;

function seqFrame(seq) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(seq));
  return b;
}

// chain k: token ids of its own (the last chain is looked up afterwards)
function chainIds(k) {
  const ids = [];
  for (let i = 0; i < BLOCKS * BLOCK_SIZE; i++) ids.push(141000 + (k % 150) * 64 + i);
  return ids;
}

function validBatch(k) {
  const hashes = [];
  for (let j = 0; j < BLOCKS; j++) hashes.push(BigInt(k * 8 + j + 1));
  const ev = ['BlockStored', hashes, null, chainIds(k), BLOCK_SIZE, null];
  return Buffer.from(encode([Date.now() / 1000, [ev], 0], { useBigInt64: true }));
}

async function main() {
  const [endpoint, delay, secs, rate, every] = process.argv.slice(2);
  const seconds = Number(secs || 10);
  const perSec = Number(rate || 10000);
  const validEvery = Number(every || 20);
  const pub = new zmq.Publisher({ sendHighWaterMark: 0, linger: 0 });
  await pub.bind(endpoint);
  await new Promise((r) => setTimeout(r, Number(delay || 2) * 1000));
  process.stdout.write('start\n');

  const sample = validBatch(0);
  const many = Number(process.env.FLOOD_MANY_FRAMES || 6);
  const out = { frame_bad: 0, payload_bad: 0, valid: 0, valid_blocks: 0,
                last_chain_ids: null, seconds: 0, bad_per_s: 0 };
  let seq = 0;
  let bad = 0;
  let chain = 0;
  const topic = Buffer.alloc(0);
  const start = Date.now();
  const tickMs = 10;
  const perTick = Math.max(1, Math.round(perSec * tickMs / 1000));
  let ticks = 0;

  while (Date.now() - start < seconds * 1000) {
    for (let i = 0; i < perTick; i++) {
      const kind = bad % 8;
      let frames;
      switch (kind) {
      case 0: frames = [topic, seqFrame(seq)]; break;
      case 1: frames = [seqFrame(seq)]; break;
      case 2: frames = [topic, seqFrame(seq).subarray(1), sample]; break;
      case 3: frames = [topic, seqFrame(seq), sample]; while (frames.length < many) frames.push(topic); break;
      case 4: frames = [topic, seqFrame(seq++), Buffer.from('c1c1c1c1', 'hex')]; break;
      case 5: frames = [topic, seqFrame(seq++), Buffer.from(encode({ x: 1 }))]; break;
      case 6: frames = [topic, seqFrame(seq++), sample.subarray(0, sample.length >> 1)]; break;
      default: frames = [topic, seqFrame(seq++), crypto.randomBytes(1 + (bad % 200))];
      }
      if (kind < 4) out.frame_bad++; else out.payload_bad++;
      await pub.send(frames);
      bad++;
      if (bad % validEvery === 0) {
        await pub.send([topic, seqFrame(seq++), validBatch(chain)]);
        out.last_chain_ids = chainIds(chain);
        chain++;
        out.valid++;
        out.valid_blocks += BLOCKS;
      }
    }
    ticks++;
    const lag = start + ticks * tickMs - Date.now();
    if (lag > 0) await new Promise((r) => setTimeout(r, lag));
  }
  out.seconds = (Date.now() - start) / 1000;
  out.bad_per_s = Math.round(bad / out.seconds);
  out.sequence_numbers = seq;
  out.many_frames = many;
  process.stdout.write(JSON.stringify(out) + '\n');
  process.on('SIGTERM', () => { pub.close(); process.exit(0); });
  setInterval(() => {}, 1000);
}

main().catch((e) => { process.stderr.write(String(e.stack || e) + '\n'); process.exit(1); });
