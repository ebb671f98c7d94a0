'use strict';
// KV events in vLLM's (or SGLang's) wire format (kv-events.md sections 1-2,
// 7): a ZMQ PUB socket sending [topic, seq u64 big-endian, msgpack batch],
// one batch per scheduling pass that produced events; seq counts batches
// from 0. Optional replay ROUTER socket (section 1.4).

const msgpack = require('@msgpack/msgpack');

const U32 = 0x100000000n;

// Hash digest (32-byte Buffer) -> value published on the wire.
//   vllm  int:   last 8 digest bytes read big-endian, unsigned
//   sglang int:  first 8 digest bytes read big-endian, signed int64
//   bytes:       the raw 32-byte digest (msgpack bin)
function wireHash(digest, flavour, hashType) {
  if (digest === null || digest === undefined) return null;
  if (hashType === 'bytes') return Buffer.from(digest);
  const v = flavour === 'sglang' ? digest.readBigInt64BE(0)
    : digest.readBigUInt64BE(digest.length - 8);
  // small values as Number so msgpack picks the smallest int format,
  // as msgspec does; large ones as bigint (int64/uint64)
  if (v >= -0x80000000n && v < U32) return Number(v);
  return v;
}

// One internal event (see KvCache) -> wire object (array or map era).
function encodeEvent(ev, o) {
  const h = (d) => wireHash(d, o.flavour, o.hashType);
  const map = o.format === 'map';
  const sglang = o.flavour === 'sglang';
  if (ev.type === 'BlockStored') {
    const f = {
      block_hashes: ev.hashes.map(h),
      parent_block_hash: h(ev.parent),
      token_ids: ev.tokenIds,
      block_size: ev.blockSize,
      lora_id: null,
      medium: 'GPU',
    };
    if (!sglang) {
      f.lora_name = null;
      f.extra_keys = ev.hashes.map(() => null);
      f.group_idx = 0;
      f.kv_cache_spec_kind = 'full_attention';
      f.kv_cache_spec_sliding_window = null;
    }
    if (map) {
      // msgspec omit_defaults drops None-default fields when None
      if (f.kv_cache_spec_sliding_window === null) delete f.kv_cache_spec_sliding_window;
      return Object.assign({ type: 'BlockStored' }, f);
    }
    return ['BlockStored', ...Object.values(f)];
  }
  if (ev.type === 'BlockRemoved') {
    const f = { block_hashes: ev.hashes.map(h), medium: 'GPU' };
    if (!sglang) f.group_idx = 0;
    if (map) return Object.assign({ type: 'BlockRemoved' }, f);
    return ['BlockRemoved', ...Object.values(f)];
  }
  if (ev.type === 'AllBlocksCleared') {
    return map ? { type: 'AllBlocksCleared' } : ['AllBlocksCleared'];
  }
  throw new Error('unknown event type ' + ev.type);
}

// Batch -> msgpack payload: [ts float64, events, dp_rank 0].
function encodeBatch(events, o, ts) {
  let t = ts === undefined ? Date.now() / 1000 : ts;
  if (Number.isInteger(t)) t += 1e-6;  // keep it a float64 on the wire
  const body = [t, events.map((e) => encodeEvent(e, o)), 0];
  return Buffer.from(msgpack.encode(body, { useBigInt64: true }));
}

function seqBytes(seq) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(seq));
  return b;
}

const END_SEQ = Buffer.alloc(8, 0xff);

class EventPublisher {
  // o: endpoint, replayEndpoint|null, topic, format, flavour, hashType,
  //    bufferSteps, replayTopicFrame (bool: vLLM >= #45177 reply layout)
  constructor(o) {
    this.o = o;
    this.seq = 0;
    this.pending = [];
    this.buffer = [];         // [seq, payload] for replay
    this.sendChain = Promise.resolve();
    this.closed = false;
  }

  async start() {
    const zmq = require('zeromq');
    this.pub = new zmq.Publisher({ sendHighWaterMark: 100000, linger: 0 });
    await this.pub.bind(this.o.endpoint);
    if (this.o.replayEndpoint) {
      this.router = new zmq.Router({ linger: 0 });
      await this.router.bind(this.o.replayEndpoint);
      this._serveReplay();
    }
  }

  add(ev) {
    this.pending.push(ev);
  }

  // Send the events queued since the last flush as one batch.
  flush() {
    if (this.pending.length === 0 || this.closed) {
      this.pending = [];
      return;
    }
    const payload = encodeBatch(this.pending, this.o);
    this.pending = [];
    const seq = this.seq++;
    this.buffer.push([seq, payload]);
    if (this.buffer.length > this.o.bufferSteps) this.buffer.shift();
    const frames = [Buffer.from(this.o.topic), seqBytes(seq), payload];
    this._send(this.pub, frames);
  }

  // zeromq.js allows one pending send per socket: chain them.
  _send(sock, frames) {
    this.sendChain = this.sendChain.then(() => {
      if (!this.closed) return sock.send(frames);
    }).catch((err) => {
      if (!this.closed) process.stderr.write('kv events send: ' + err.message + '\n');
    });
  }

  async _serveReplay() {
    try {
      for await (const msg of this.router) {
        if (msg.length !== 3 || msg[1].length !== 0 || msg[2].length !== 8) {
          process.stderr.write('kv events: invalid replay request\n');
          continue;
        }
        const id = msg[0];
        const start = msg[2].readBigUInt64BE(0);
        const topicFrame = this.o.replayTopicFrame ? [Buffer.from(this.o.topic)] : [];
        for (const [seq, payload] of this.buffer) {
          if (BigInt(seq) < start) continue;
          this._send(this.router, [id, Buffer.alloc(0), ...topicFrame, seqBytes(seq), payload]);
        }
        const endTopic = this.o.replayTopicFrame ? [Buffer.alloc(0)] : [];
        this._send(this.router, [id, Buffer.alloc(0), ...endTopic, END_SEQ, Buffer.alloc(0)]);
      }
    } catch (err) {
      if (!this.closed) process.stderr.write('kv events replay: ' + err.message + '\n');
    }
  }

  async close() {
    this.closed = true;
    await this.sendChain;
    if (this.pub) this.pub.close();
    if (this.router) this.router.close();
  }
}

module.exports = { EventPublisher, encodeEvent, encodeBatch, wireHash, seqBytes, END_SEQ };
