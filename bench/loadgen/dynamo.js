'use strict';
// NVIDIA Dynamo's KV router as the seed ran it (DYN_ROUTER_MODE=kv with
// the workers' KV events, defaults), for the bench: the seed's "KV routing"
// column, and a peer that kvroute's policies are compared with. It runs in
// the load generator (the client routes each request itself), fed by the
// engines' real ZeroMQ KV event streams.
//
// The rules (routers.md A.4, A.5, classic form, overlap_score_weight 1,
// temperature 0):
//   prefill_blocks = (pending prefill tokens + prompt - overlap x bs) / bs
//   decode_blocks  = distinct blocks active on the worker + this request's
//                    blocks not among them
//   cost           = prefill_blocks + decode_blocks, lowest wins, ties at
//                    random
// where "active" and "pending" are the router's own bookkeeping of the
// requests it routed: blocks from routing to the end of the request
// (deduplicated by hash, router_assume_kv_reuse), prefill tokens from
// routing to the first output token. The overlap is the longest run of the
// prompt's leading blocks that the worker's events say it holds.
//
// The simulator (bench/sim) uses the same cost on the engines' own state.

const zmq = require('zeromq');
const msgpack = require('@msgpack/msgpack');
const { extendBlockHashes, noneHash, hashKeyOf } = require('../emulator/kv_cache');

// One worker's side of the decision: what the router knows of it.
class Worker {
  constructor(index) {
    this.index = index;
    this.activeBlocks = new Map();  // block key -> requests in flight using it
    this.pendingPrefill = 0;
  }
}

// cost of sending q (blocks: its block keys, tokens) to worker w holding
// `overlap` of its leading blocks
function dynamoCost(w, q, overlap, bs, overlapWeight = 1) {
  const prefill = (w.pendingPrefill + q.tokens - overlap * bs) / bs;
  let fresh = 0;
  for (const k of q.blockKeys) if (!w.activeBlocks.has(k)) fresh++;
  return overlapWeight * prefill + w.activeBlocks.size + fresh;
}

// a deterministic tie-break from two small integers
function mix(a, b) {
  let z = (Math.imul(a + 1, 0x9e3779b1) ^ Math.imul(b + 1, 0x85ebca77)) >>> 0;
  z = Math.imul(z ^ (z >>> 15), 0x2c1b3c6d) >>> 0;
  return (z ^ (z >>> 12)) >>> 0;
}

// argmin over workers; overlapOf(w) -> blocks; usable(w) (optional) says
// which workers may be chosen (all when none may)
function pickDynamo(workers, q, overlapOf, bs, picks, usable) {
  let best = 0;
  let bestCost = Infinity;
  let bestTie = 0;
  const some = usable && workers.some(usable);
  for (const w of workers) {
    if (some && !usable(w)) continue;
    const cost = dynamoCost(w, q, overlapOf(w), bs);
    const tie = mix(w.index, picks);
    if (cost < bestCost || (cost === bestCost && tie < bestTie)) {
      best = w.index;
      bestCost = cost;
      bestTie = tie;
    }
  }
  return best;
}

function addActive(w, q, uncached) {
  w.pendingPrefill += uncached;
  for (const k of q.blockKeys) w.activeBlocks.set(k, (w.activeBlocks.get(k) || 0) + 1);
}

function firstToken(w, uncached) {
  w.pendingPrefill -= uncached;
}

function removeActive(w, q) {
  for (const k of q.blockKeys) {
    const n = w.activeBlocks.get(k) - 1;
    if (n <= 0) w.activeBlocks.delete(k); else w.activeBlocks.set(k, n);
  }
}

// vLLM's int hash on the wire: the last 8 digest bytes (events.js)
function wireKey(digest) {
  return digest.readBigUInt64BE(digest.length - 8).toString();
}

function wireValueKey(v) {
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v).readBigUInt64BE(v.length - 8).toString();
  return BigInt(v).toString();
}

// What each engine holds, from its ZeroMQ KV event stream: the wire
// hashes of its stored blocks, for the longest run of a prompt's leading
// blocks (the overlap every KV router here asks for).
class EventIndex {
  // o: eventsPorts[], blockSize, hashSeed, host
  constructor(o) {
    this.o = o;
    this.bs = o.blockSize;
    this.root = noneHash(o.hashSeed || 0);
    this.held = o.eventsPorts.map(() => new Map());   // wire hash -> copies
    this.subs = [];
    this.closed = false;
    this.badMessages = 0;
  }

  async start() {
    for (let i = 0; i < this.o.eventsPorts.length; i++) {
      const sub = new zmq.Subscriber({ receiveHighWaterMark: 0 });
      sub.connect(`tcp://${this.o.host || '127.0.0.1'}:${this.o.eventsPorts[i]}`);
      sub.subscribe();
      this.subs.push(sub);
      this._loop(sub, this.held[i]);
    }
    // the slow joiner: let every subscription reach its publisher
    await new Promise((r) => setTimeout(r, 300));
  }

  async _loop(sub, held) {
    try {
      for await (const frames of sub) {
        if (frames.length < 3) { this.badMessages++; continue; }
        let batch;
        try {
          batch = msgpack.decode(frames[frames.length - 1], { useBigInt64: true });
        } catch (e) {
          this.badMessages++;
          continue;
        }
        if (!Array.isArray(batch) || !Array.isArray(batch[1])) { this.badMessages++; continue; }
        for (const ev of batch[1]) applyEvent(held, ev);
      }
    } catch (e) {
      if (!this.closed) this.badMessages++;
    }
  }

  // ids -> { digests (the prompt's block digests), overlaps[engine] }
  lookup(ids) {
    const digests = extendBlockHashes([], ids, ids.length, this.bs, this.root);
    const wire = digests.map(wireKey);
    const overlaps = this.held.map((held) => {
      let n = 0;
      while (n < wire.length && held.has(wire[n])) n++;
      return n;
    });
    return { digests, overlaps };
  }

  async stop() {
    this.closed = true;
    for (const s of this.subs) s.close();
  }
}

function applyEvent(held, ev) {
  const type = Array.isArray(ev) ? ev[0] : ev && ev.type;
  const hashes = Array.isArray(ev) ? ev[1] : ev && ev.block_hashes;
  if (type === 'AllBlocksCleared') {
    held.clear();
    return;
  }
  if (!Array.isArray(hashes)) return;
  for (const h of hashes) {
    const k = wireValueKey(h);
    if (type === 'BlockStored') {
      held.set(k, (held.get(k) || 0) + 1);
    } else if (type === 'BlockRemoved') {
      const n = (held.get(k) || 0) - 1;
      if (n <= 0) held.delete(k); else held.set(k, n);
    }
  }
}

// The router: the engines' events for the overlap, its own bookkeeping of
// what it routed for the load.
class DynamoRouter {
  // o: eventsPorts[], blockSize, hashSeed, host
  constructor(o) {
    this.bs = o.blockSize;
    this.index = new EventIndex(o);
    this.workers = o.eventsPorts.map((_, i) => new Worker(i));
    this.picks = 0;
    // A worker that refused a connection is left out for failTimeoutMs
    // (real time) and its blocks leave the index, as Dynamo drops an
    // instance that discovery lost; its events refill the index when it is
    // back.  The same 2 s as the nginx side's fail_timeout (nginx.js).
    this.failTimeoutMs = o.failTimeoutMs || 2000;
    this.downUntil = this.workers.map(() => 0);
  }

  start() { return this.index.start(); }

  stop() { return this.index.stop(); }

  // q: { ids } -> { engine, onFirstToken, onFinish }
  route(q) {
    const ids = q.ids;
    const { digests, overlaps } = this.index.lookup(ids);
    const req = { tokens: ids.length, blockKeys: digests.map(hashKeyOf) };
    const now = Date.now();
    const best = pickDynamo(this.workers, req, (w) => overlaps[w.index], this.bs, this.picks++,
      (w) => this.downUntil[w.index] <= now);
    const w = this.workers[best];
    const uncached = Math.max(0, ids.length - overlaps[best] * this.bs);
    addActive(w, req, uncached);
    let prefilled = false;
    return {
      engine: best,
      overlap: overlaps[best],
      onFirstToken: () => {
        if (!prefilled) { prefilled = true; firstToken(w, uncached); }
      },
      onFinish: () => {
        if (!prefilled) { prefilled = true; firstToken(w, uncached); }
        removeActive(w, req);
      },
      // the engine could not be reached: the client routes the request
      // again (it calls onFinish for this try first)
      onFail: () => {
        this.downUntil[best] = Date.now() + this.failTimeoutMs;
        this.index.held[best].clear();
      },
    };
  }
}

module.exports = { DynamoRouter, EventIndex, Worker, mix, dynamoCost, pickDynamo, addActive, firstToken, removeActive };
