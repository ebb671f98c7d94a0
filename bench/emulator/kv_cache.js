'use strict';
// Paged KV cache with prefix caching, modelled on vLLM v1's BlockPool
// (kv-events.md section 6): a doubly linked free queue (allocation pops the
// head, a finished request frees its blocks tail-first, unhashed blocks go
// to the head), refcounted blocks, chained hashes over full blocks, lazy
// eviction (a cached block loses its hash only when it is popped for reuse)
// and no de-duplication (two blocks may be cached under one hash).

const crypto = require('node:crypto');

class Block {
  constructor(id) {
    this.id = id;
    this.refCnt = 0;
    this.hash = null;       // Buffer (32-byte digest) while cached
    this.hashKey = null;    // hex string of hash, the cache map key
    this.prev = null;       // free queue links
    this.next = null;
    this.inFreeQueue = false;
  }
}

// Doubly linked list of free blocks with O(1) removal from the middle.
class FreeQueue {
  constructor() {
    this.head = null;
    this.tail = null;
    this.length = 0;
  }

  append(block) {
    block.prev = this.tail;
    block.next = null;
    if (this.tail) this.tail.next = block; else this.head = block;
    this.tail = block;
    block.inFreeQueue = true;
    this.length++;
  }

  prepend(block) {
    block.next = this.head;
    block.prev = null;
    if (this.head) this.head.prev = block; else this.tail = block;
    this.head = block;
    block.inFreeQueue = true;
    this.length++;
  }

  remove(block) {
    if (!block.inFreeQueue) throw new Error('block not in free queue');
    if (block.prev) block.prev.next = block.next; else this.head = block.next;
    if (block.next) block.next.prev = block.prev; else this.tail = block.prev;
    block.prev = block.next = null;
    block.inFreeQueue = false;
    this.length--;
  }

  popLeft() {
    const block = this.head;
    if (!block) throw new Error('free queue empty');
    this.remove(block);
    return block;
  }

  // ids from head to tail (tests, debugging)
  ids() {
    const out = [];
    for (let b = this.head; b; b = b.next) out.push(b.id);
    return out;
  }
}

// The root of every hash chain: a fixed digest, like vLLM's NONE_HASH
// with PYTHONHASHSEED set (deterministic across restarts).
function noneHash(seed) {
  return crypto.createHash('sha256').update('kvroute-emulator:' + seed)
    .digest();
}

// hash(block) = sha256(parent digest || token ids as u32 little-endian
// [|| JSON of the block's extra keys]), as vLLM hashes (parent, tokens,
// extra_keys): a block without extra keys hashes as before they existed
function hashBlock(parent, tokens, start, end, extra) {
  const buf = Buffer.allocUnsafe((end - start) * 4);
  for (let i = start; i < end; i++) buf.writeUInt32LE(tokens[i] >>> 0, (i - start) * 4);
  const h = crypto.createHash('sha256').update(parent).update(buf);
  if (extra) h.update(JSON.stringify(extra));
  return h.digest();
}

// A request's extra keys (vLLM kv_cache_utils, docs/engine-events.md
// "Keys"): keys = { lora: {name, id} | null, salt: string | null,
// mm: [{id, start, length}] } (multimodal items by token position).
// Block i's list, in vLLM's order: the LoRA name (every block), each item
// the block overlaps as [identifier, its start relative to the block's],
// the salt (the first block only); null when empty.
function blockExtraKeys(keys, i, bs) {
  if (!keys) return null;
  const out = [];
  if (keys.lora) out.push(keys.lora.name);
  for (const m of keys.mm || []) {
    if (m.start < (i + 1) * bs && m.start + m.length > i * bs) out.push([m.id, m.start - i * bs]);
  }
  if (keys.salt !== null && keys.salt !== undefined && i === 0) out.push(keys.salt);
  return out.length ? out : null;
}

// The cache map's key of a digest, computed once per digest (lookups
// repeat for every request and every engine a router asks about).
const hashKeys = new WeakMap();
function hashKeyOf(h) {
  let k = hashKeys.get(h);
  if (k === undefined) {
    k = h.toString('hex');
    hashKeys.set(h, k);
  }
  return k;
}

// Extends `hashes` (array of digests of full blocks) to cover every full
// block of tokens[0..numTokens); keys: the request's extra keys, or none.
function extendBlockHashes(hashes, tokens, numTokens, blockSize, root, keys) {
  const full = Math.floor(numTokens / blockSize);
  for (let i = hashes.length; i < full; i++) {
    const parent = i === 0 ? root : hashes[i - 1];
    hashes.push(hashBlock(parent, tokens, i * blockSize, (i + 1) * blockSize,
      blockExtraKeys(keys, i, blockSize)));
  }
  return hashes;
}

// An offload tier in host memory written through, as vLLM's
// OffloadingConnector with its CPU backend (docs/engine-events.md "Tiers"):
// every block the GPU caches is stored there too (a block it holds already
// is refreshed, not stored again), least recently used evicted past
// numBlocks; a request's leading blocks the GPU lacks and the tier holds
// are loaded back instead of computed (scheduler.js). Its events carry the
// tier's medium: form 'hashes' as vLLM's connector sends them (block
// hashes alone: token_ids [], parent nil), form 'tokens' with token ids
// and parent as SGLang's HiCache and Dynamo's KVBM send them.
// With group G > 1 (the connector's block_size G GPU blocks, form
// 'hashes' only), a tier block is a request's G GPU blocks from a multiple
// of G, named by the hash of its last GPU block (vLLM's
// BlockHashListWithBlockSize), stored once all G are computed, and loaded
// back as the connector does (lookup).
class CpuTier {
  constructor(numBlocks, medium, form, onEvent, group = 1) {
    if (group > 1 && form !== 'hashes') throw new Error('CpuTier: groups need form hashes');
    this.numBlocks = numBlocks;
    this.medium = medium;
    this.form = form;
    this.onEvent = onEvent;
    this.group = group;
    this.lru = new Map();      // hashKey -> digest, insertion order = LRU
    this.loaded = 0;           // blocks loaded back (metrics, tests)
  }

  // A request's blocks [0, upTo) are cached on the GPU (hashes: all its
  // block hashes): its whole groups written through, least recently used
  // groups evicted past numBlocks GPU blocks.
  storeGroups(hashes, upTo, bs) {
    const G = this.group;
    const fresh = [];
    for (let q = 0; (q + 1) * G <= upTo; q++) {
      const h = hashes[(q + 1) * G - 1];
      const k = hashKeyOf(h);
      if (this.lru.delete(k)) {
        this.lru.set(k, h);
      } else {
        this.lru.set(k, h);
        fresh.push(h);
      }
    }
    if (fresh.length) {
      this.onEvent({ type: 'BlockStored', hashes: fresh, parent: null, tokenIds: [],
        blockSize: G * bs, medium: this.medium });
    }
    this._evict(Math.max(1, Math.floor(this.numBlocks / G)));
  }

  _evict(max) {
    const evicted = [];
    for (const [k, h] of this.lru) {
      if (this.lru.size - evicted.length <= max) break;
      evicted.push([k, h]);
    }
    for (const [k] of evicted) this.lru.delete(k);
    if (evicted.length) {
      this.onEvent({ type: 'BlockRemoved', hashes: evicted.map((e) => e[1]), medium: this.medium });
    }
  }

  // The GPU cached ev's blocks (a BlockStored): write them through.
  store(ev) {
    const bs = ev.blockSize;
    const fresh = [];
    ev.hashes.forEach((h, i) => {
      const k = hashKeyOf(h);
      if (this.lru.has(k)) {
        this.lru.delete(k);
        this.lru.set(k, h);
      } else {
        this.lru.set(k, h);
        fresh.push(i);
      }
    });
    // runs of consecutive new blocks, each one store
    for (let a = 0; a < fresh.length;) {
      let b = a;
      while (b + 1 < fresh.length && fresh[b + 1] === fresh[b] + 1) b++;
      const first = fresh[a];
      const last = fresh[b];
      const hashes = ev.hashes.slice(first, last + 1);
      if (this.form === 'hashes') {
        this.onEvent({ type: 'BlockStored', hashes, parent: null, tokenIds: [],
          blockSize: bs, medium: this.medium });
      } else {
        this.onEvent({ type: 'BlockStored', hashes,
          parent: first === 0 ? ev.parent : ev.hashes[first - 1],
          tokenIds: ev.tokenIds.slice(first * bs, (last + 1) * bs),
          blockSize: bs, medium: this.medium });
      }
      a = b + 1;
    }
    this._evict(this.numBlocks);
  }

  // Blocks of blockHashes the tier holds in a run from `from`, below `max`:
  // its groups (each held as its last block's hash; a group of 1 is a
  // block) from the one holding block `from` while held, counted only when
  // they reach at least one group past `from` (vLLM's
  // OffloadingConnectorScheduler.get_num_new_matched_tokens).
  lookup(blockHashes, from, max) {
    const G = this.group;
    const last = Math.min(max, blockHashes.length);
    let q = Math.floor(from / G);
    while ((q + 1) * G <= last && this.lru.has(hashKeyOf(blockHashes[(q + 1) * G - 1]))) q++;
    const end = q * G;
    return end >= from + G ? end - from : 0;
  }

  // A hit read blocks back: recently used.
  touch(hashes) {
    for (const h of hashes) {
      const k = hashKeyOf(h);
      if (this.lru.delete(k)) this.lru.set(k, h);
    }
    this.loaded += hashes.length;
  }

  clear() {
    this.lru.clear();
  }
}

class KvCache {
  // opts: numBlocks, blockSize, cpuBlocks (an offload tier, CpuTier, 0:
  // none), cpuMedium, cpuForm, cpuGroup (GPU blocks a tier block spans),
  // onEvent(ev) where ev is
  //   {type:'BlockStored', hashes:[Buffer], parent:Buffer|null,
  //    tokenIds:[int], blockSize}
  //   {type:'BlockRemoved', hashes:[Buffer]}
  //   {type:'AllBlocksCleared'}
  constructor(opts) {
    if (!(opts.numBlocks >= 1)) throw new Error('numBlocks must be >= 1');
    this.numBlocks = opts.numBlocks;
    this.blockSize = opts.blockSize;
    this.onEvent = opts.onEvent || (() => {});
    this.blocks = [];
    this.free = new FreeQueue();
    this.cached = new Map();   // hashKey -> [Block] (no de-duplication)
    for (let i = 0; i < this.numBlocks; i++) {
      const b = new Block(i);
      this.blocks.push(b);
      this.free.append(b);
    }
    this.queries = 0;          // prefix cache queries (tokens)
    this.hits = 0;             // prefix cache hits (tokens)
    this.cpu = opts.cpuBlocks > 0
      ? new CpuTier(opts.cpuBlocks, opts.cpuMedium || 'CPU', opts.cpuForm || 'hashes',
        (ev) => this.onEvent(ev), opts.cpuGroup || 1)
      : null;
  }

  numFree() {
    return this.free.length;
  }

  usage() {
    return (this.numBlocks - this.free.length) / this.numBlocks;
  }

  // The longest leading run of cached full blocks of a prompt, capped so
  // that at least the prompt's last token is recomputed. Returns blocks.
  lookup(blockHashes, promptLen) {
    const maxBlocks = Math.floor((promptLen - 1) / this.blockSize);
    const hit = [];
    for (let i = 0; i < blockHashes.length && i < maxBlocks; i++) {
      const list = this.cached.get(hashKeyOf(blockHashes[i]));
      if (!list) break;
      hit.push(list[0]);
    }
    return hit;
  }

  // Count a query for metrics (vLLM counts per scheduled new request).
  recordQuery(promptLen, hitTokens) {
    this.queries += promptLen;
    this.hits += hitTokens;
  }

  // A hit takes the blocks out of the free queue while in use.
  touch(blocks) {
    for (const b of blocks) {
      if (b.refCnt === 0 && b.inFreeQueue) this.free.remove(b);
      b.refCnt++;
    }
  }

  // Number of blocks of `blocks` that touch() would take from the free queue.
  countEvictable(blocks) {
    let n = 0;
    for (const b of blocks) if (b.refCnt === 0 && b.inFreeQueue) n++;
    return n;
  }

  // Pop n blocks from the head; cached ones are evicted now (lazy
  // BlockRemoved, one event per evicted block).
  allocate(n) {
    if (n > this.free.length) throw new Error('allocate: not enough free blocks');
    const out = [];
    for (let i = 0; i < n; i++) {
      const b = this.free.popLeft();
      if (b.hash) this._evict(b);
      b.refCnt = 1;
      out.push(b);
    }
    return out;
  }

  _evict(b) {
    const list = this.cached.get(b.hashKey);
    if (list) {
      const j = list.indexOf(b);
      if (j >= 0) list.splice(j, 1);
      if (list.length === 0) this.cached.delete(b.hashKey);
    }
    const h = b.hash;
    b.hash = null;
    b.hashKey = null;
    this.onEvent({ type: 'BlockRemoved', hashes: [h] });
  }

  // Cache req blocks [fromBlock, toBlock) under hashes[fromBlock..toBlock),
  // emitting one BlockStored for the run. tokens: the request's token ids;
  // keys: its extra keys (blockExtraKeys), published with the blocks.
  cacheBlocks(reqBlocks, hashes, tokens, fromBlock, toBlock, keys) {
    if (toBlock <= fromBlock) return;
    const stored = [];
    for (let i = fromBlock; i < toBlock; i++) {
      const b = reqBlocks[i];
      if (b.hash) continue;  // already cached (a hit block)
      b.hash = hashes[i];
      b.hashKey = hashKeyOf(b.hash);
      const list = this.cached.get(b.hashKey);
      if (list) list.push(b); else this.cached.set(b.hashKey, [b]);
      stored.push(i);
    }
    if (stored.length === 0) return;
    const first = stored[0];
    const last = stored[stored.length - 1];
    const bs = this.blockSize;
    const ev = {
      type: 'BlockStored',
      hashes: stored.map((i) => hashes[i]),
      parent: first === 0 ? null : hashes[first - 1],
      tokenIds: Array.from(tokens.slice(first * bs, (last + 1) * bs)),
      blockSize: bs,
    };
    if (keys) {
      ev.lora = keys.lora || null;
      ev.extraKeys = stored.map((i) => blockExtraKeys(keys, i, bs));
    }
    this.onEvent(ev);
    if (this.cpu && this.cpu.group > 1) this.cpu.storeGroups(hashes, toBlock, bs);
    else if (this.cpu) this.cpu.store(ev);
  }

  // Free a request's blocks: tail block first; hashed blocks to the tail of
  // the free queue (evicted last), unhashed ones to the head (reused first).
  freeBlocks(reqBlocks) {
    for (let i = reqBlocks.length - 1; i >= 0; i--) {
      const b = reqBlocks[i];
      if (b.refCnt <= 0) throw new Error('double free of block ' + b.id);
      b.refCnt--;
      if (b.refCnt === 0) {
        if (b.hash) this.free.append(b); else this.free.prepend(b);
      }
    }
  }

  // Drop every cached hash; only when no block is in use (as vLLM).
  reset() {
    for (const b of this.blocks) if (b.refCnt > 0) return false;
    for (const b of this.blocks) {
      b.hash = null;
      b.hashKey = null;
    }
    this.cached.clear();
    this.onEvent({ type: 'AllBlocksCleared' });
    if (this.cpu) this.cpu.clear();
    return true;
  }
}

module.exports = { hashKeyOf, KvCache, CpuTier, FreeQueue, Block, hashBlock, extendBlockHashes, blockExtraKeys,
  noneHash };
