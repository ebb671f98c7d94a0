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

// One internal event (see KvCache; EventShaper adds medium, groupIdx,
// kind) -> wire object (array or map era).
function encodeEvent(ev, o) {
  const h = (d) => wireHash(d, o.flavour, o.hashType);
  const map = o.format === 'map';
  const sglang = o.flavour === 'sglang';
  const bigram = sglang && o.forms && o.forms.bigram;
  if (ev.type === 'BlockStored') {
    const f = {
      block_hashes: ev.hashes.map(h),
      parent_block_hash: h(ev.parent),
      // EAGLE: each position's token and the next one's (the last
      // position's next token is not known yet: itself)
      token_ids: bigram ? ev.tokenIds.map((t, i, a) => [t, i + 1 < a.length ? a[i + 1] : t])
        : ev.tokenIds,
      block_size: ev.blockSize,
      lora_id: ev.lora ? ev.lora.id : null,
      medium: ev.medium || 'GPU',
    };
    if (!sglang) {
      f.lora_name = ev.lora ? ev.lora.name : null;
      f.extra_keys = ev.extraKeys || ev.hashes.map(() => null);
      f.group_idx = ev.groupIdx || 0;
      f.kv_cache_spec_kind = ev.kind || 'full_attention';
      f.kv_cache_spec_sliding_window = ev.kind === 'sliding_window' ? 16 * ev.blockSize : null;
    }
    if (map) {
      // msgspec omit_defaults drops None-default fields when None
      if (f.kv_cache_spec_sliding_window === null) delete f.kv_cache_spec_sliding_window;
      return Object.assign({ type: 'BlockStored' }, f);
    }
    return ['BlockStored', ...Object.values(f)];
  }
  if (ev.type === 'BlockRemoved') {
    const f = { block_hashes: ev.hashes.map(h), medium: ev.medium || 'GPU' };
    if (!sglang) f.group_idx = ev.groupIdx || 0;
    if (map) return Object.assign({ type: 'BlockRemoved' }, f);
    return ['BlockRemoved', ...Object.values(f)];
  }
  if (ev.type === 'AllBlocksCleared') {
    return map ? { type: 'AllBlocksCleared' } : ['AllBlocksCleared'];
  }
  throw new Error('unknown event type ' + ev.type);
}

// Batch -> msgpack payload: [ts float64, events, dp_rank] (o.dpRank, 0
// without data parallelism, as vLLM fills it in).
function encodeBatch(events, o, ts) {
  let t = ts === undefined ? Date.now() / 1000 : ts;
  if (Number.isInteger(t)) t += 1e-6;  // keep it a float64 on the wire
  const body = [t, events.map((e) => encodeEvent(e, o)), o.dpRank || 0];
  return Buffer.from(msgpack.encode(body, { useBigInt64: true }));
}

function seqBytes(seq) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(seq));
  return b;
}

const END_SEQ = Buffer.alloc(8, 0xff);

// The forms real engines send beyond one GPU stream, each behind an option
// (options.js; docs/engine-events.md): o.forms =
//   offload N    a CPU tier of N blocks (kv_cache.js CpuTier: the engine
//                loads hits back from it); its events carry medium "CPU"
//                ("CPU_PINNED" for sglang) and pass through unshaped
//   reportFull   vLLM's kv_cache_report_mode="full": a store under a parent
//                (a prefix reused) first re-announces the prefix's chain
//                from block 0 (parent nil), no removal paired with it
//   hybrid       a sliding-window KV cache group (group_idx 1) beside the
//                full-attention one (0): it stores the same hashes, keeps a
//                window of one block (the last of each store) and removes
//                the previous window's block as its chain grows
//   bigram       (sglang) EAGLE bigram token ids, in encodeEvent
// Partial-block stores and removals (scheduler.js, --events-partial) pass
// through unshaped.
class EventShaper {
  constructor(forms, flavour) {
    this.f = forms || {};
    this.blocks = new Map();    // hex -> { hash, parent: hex|null, tokens }
    this.window = new Map();    // sliding-window group: hex -> digest
  }

  shape(ev) {
    const out = [];
    const key = (d) => d.toString('hex');
    if (ev.medium || ev.partial) return [ev];   // an offload tier's, a partial block's
    if (ev.type === 'BlockStored') {
      const bs = ev.blockSize;
      if (this.f.reportFull && ev.parent) {
        const chain = [];
        for (let k = key(ev.parent); k !== null; ) {
          const b = this.blocks.get(k);
          if (!b || chain.length > this.blocks.size) { chain.length = 0; break; }
          chain.unshift(b);
          k = b.parent;
        }
        if (chain.length) {
          out.push({ type: 'BlockStored', hashes: chain.map((b) => b.hash), parent: null,
            tokenIds: chain.flatMap((b) => b.tokens), blockSize: bs, lora: chain[0].lora,
            extraKeys: chain.map((b) => b.extra) });
        }
      }
      ev.hashes.forEach((h, i) => {
        this.blocks.set(key(h), { hash: h,
          parent: i > 0 ? key(ev.hashes[i - 1]) : (ev.parent ? key(ev.parent) : null),
          tokens: ev.tokenIds.slice(i * bs, (i + 1) * bs),
          lora: ev.lora || null, extra: ev.extraKeys ? ev.extraKeys[i] : null });
      });
      out.push(ev);
      if (this.f.hybrid) {
        const last = ev.hashes[ev.hashes.length - 1];
        out.push(Object.assign({}, ev, { hashes: [last], parent: ev.hashes.length > 1
          ? ev.hashes[ev.hashes.length - 2] : ev.parent,
        tokenIds: ev.tokenIds.slice(-bs), groupIdx: 1, kind: 'sliding_window',
        extraKeys: ev.extraKeys ? ev.extraKeys.slice(-1) : undefined }));
        if (ev.parent && this.window.has(key(ev.parent))) {
          this.window.delete(key(ev.parent));
          out.push({ type: 'BlockRemoved', hashes: [ev.parent], groupIdx: 1 });
        }
        this.window.set(key(last), last);
      }
      return out;
    }
    if (ev.type === 'BlockRemoved') {
      for (const h of ev.hashes) this.blocks.delete(key(h));
      if (this.f.hybrid) {
        const gone = ev.hashes.filter((h) => this.window.delete(key(h)));
        out.push(ev);
        if (gone.length) out.push({ type: 'BlockRemoved', hashes: gone, groupIdx: 1 });
        return out;
      }
      return [ev];
    }
    if (ev.type === 'AllBlocksCleared') {
      this.blocks.clear();
      this.window.clear();
    }
    return [ev];
  }
}

class EventPublisher {
  // o: endpoint, replayEndpoint|null, topic, format, flavour, hashType,
  //    bufferSteps, replayTopicFrame (bool: vLLM >= #45177 reply layout),
  //    forms (EventShaper), dpRank (the batches' data-parallel rank)
  constructor(o) {
    this.o = o;
    this.shaper = new EventShaper(o.forms, o.flavour);
    this.seq = 0;
    this.lose = 0;            // batches still to lose (Engine.loseBatches)
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
    for (const e of this.shaper.shape(ev)) this.pending.push(e);
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
    if (this.lose > 0) {
      this.lose--;
      return;
    }
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

module.exports = { EventPublisher, EventShaper, encodeEvent, encodeBatch, wireHash, seqBytes, END_SEQ };
