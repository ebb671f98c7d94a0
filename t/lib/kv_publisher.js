'use strict';
// A scripted KV event publisher for kvroute's tests: binds a ZMQ XPUB
// socket, waits for a subscription (at most wait_ms), sends the messages of a
// scenario (JSON file: [{frames: [...]}, ...]), then stays until killed.
// A frame is {hex: "..."}, {text: "..."}, {seq: N} (8 bytes big-endian) or
// {msgpack: value} (hash fields as {"u64": "123"} become uint64).
// With a replay endpoint, a ROUTER serves replays as vLLM does (reply
// ["", seq, payload] per batch from the asked sequence on, then the end
// marker); a message with "replay_only": true is not sent live, only kept
// for replays (a gap the subscriber must fill), one with "live_only": true
// is sent live and never replayed (a buffer that no longer holds it).
// An element {"replay_drop": {"after": N, "count": M}} (not a message)
// makes the first replay asked from a sequence above 0 drop M replies
// after the first N, as a ROUTER past its high-water mark does; later
// replays are whole.  An element {"start_delay": MS} waits MS after the
// subscription before the first message.  With KV_PUBLISHER_REPLAYS=FILE, each replay asked
// appends "replay from SEQ" to FILE.
//   node t/lib/kv_publisher.js tcp://127.0.0.1:PORT scenario.json [wait_ms]
//       [tcp://127.0.0.1:REPLAY_PORT]

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

async function serveReplays(router, buffer, drop) {
  for await (const [id, , start] of router) {
    const from = start.readBigUInt64BE();
    let sent = 0;
    let dropping = drop && from > 0n ? drop : null;
    if (dropping) drop = null;
    if (process.env.KV_PUBLISHER_REPLAYS) {
      fs.appendFileSync(process.env.KV_PUBLISHER_REPLAYS, `replay from ${from}\n`);
    }
    for (const [seq, payload] of buffer) {
      if (seq >= from) {
        sent++;
        if (dropping && sent > dropping.after
            && sent <= dropping.after + dropping.count) continue;
        const b = Buffer.alloc(8);
        b.writeBigUInt64BE(seq);
        await router.send([id, Buffer.alloc(0), b, payload]);
      }
    }
    await router.send([id, Buffer.alloc(0), Buffer.alloc(8, 0xff), Buffer.alloc(0)]);
  }
}

async function main() {
  const [endpoint, file, waitMs, replayEndpoint] = process.argv.slice(2);
  const all = JSON.parse(fs.readFileSync(file, 'utf8'));
  const messages = all.filter((m) => !m.replay_drop && !m.start_delay);
  const delay = (all.find((m) => m.start_delay) || {}).start_delay || 0;
  const drop = (all.find((m) => m.replay_drop) || {}).replay_drop || null;
  // XPUB: a subscription message says a subscriber is in place, so what
  // follows reaches it (a plain PUB drops what it sends before that)
  const pub = new zmq.XPublisher();
  await pub.bind(endpoint);
  const buffer = [];
  if (replayEndpoint) {
    const router = new zmq.Router();
    await router.bind(replayEndpoint);
    serveReplays(router, buffer, drop).catch(() => {});
  }
  const limit = new Promise((r) => setTimeout(r, Number(waitMs || 1000)));
  const subscribed = (async () => {
    for (;;) {
      const [sub] = await pub.receive();
      if (sub.length && sub[0] === 1) return;
    }
  })();
  await Promise.race([subscribed, limit]);
  await new Promise((r) => setTimeout(r, delay));
  for (const m of messages) {
    const frames = m.frames.map(frame);
    if (frames.length === 3 && frames[1].length === 8 && !m.live_only) {
      buffer.push([frames[1].readBigUInt64BE(), frames[2]]);
    }
    if (!m.replay_only) await pub.send(frames);
    await new Promise((r) => setTimeout(r, 20));
  }
  process.stdout.write('sent\n');
  process.on('SIGTERM', () => { pub.close(); process.exit(0); });
  setInterval(() => {}, 1000);
}

main().catch((e) => { process.stderr.write(String(e.stack || e) + '\n'); process.exit(1); });
