'use strict';
// Continuous batching of one emulated engine: a loop of steps. Each step
// has a token budget shared by prefills (uncached prompt tokens, chunked
// when longer than the budget) and decodes (one token per running request
// past its prefill). Step duration =
//   base_us + prefill_us_per_token * prefill_tokens + decode_us_per_seq * decodes
// divided by time_scale. A request's first token is emitted at the end of the
// step that finishes its prefill, then one token per step.
//
// Blocks: a request is admitted (FIFO, head-of-line blocking) only when the
// free queue can supply every block it will ever need (prompt + max_tokens,
// minus its prefix hit); that reservation replaces vLLM's preemption, so the
// engine never deadlocks and never preempts. Blocks are still taken from the
// free queue step by step, as vLLM's allocate_slots does, so eviction
// timing and event order match.

const { extendBlockHashes } = require('./kv_cache');

// Calibrated against the seed's round-robin tables (6 workers, two per GPU,
// token-id prompts): TTFT p50 35/115 ms at concurrency 4 and 81/151 ms at 16
// for 2/24 prefix types, 19.4/16.3 requests/s at 16 (seed: 41/113, 74/199,
// 19.1/14.3). See bench/README.md.
const DEFAULT_TIMING = {
  baseUs: 20000,
  prefillUsPerToken: 38,
  decodeUsPerSeq: 10000,
  maxBatchedTokens: 8192,
  maxNumSeqs: 256,
  timeScale: 1,
};

class Request {
  // promptIds: array of token ids; maxTokens >= 1; outputIds(i) -> token id
  constructor(id, promptIds, maxTokens, handlers) {
    this.id = id;
    this.tokens = promptIds.slice();
    this.promptLen = promptIds.length;
    this.maxTokens = maxTokens;
    this.generated = 0;
    this.numComputed = 0;
    this.numCachedTokens = -1;
    this.blocks = [];
    this.blockHashes = [];
    this.reserved = 0;       // blocks reserved but not yet allocated
    this.onToken = handlers.onToken || (() => {});
    this.onFinish = handlers.onFinish || (() => {});
    this.state = 'new';      // new, waiting, running, finished, aborted
    this.arrival = 0;
  }
}

class Scheduler {
  // cache: KvCache; opts: timing (see DEFAULT_TIMING), outputTokenId(i),
  // onBatchEnd() called after each scheduling pass (to publish events)
  constructor(cache, opts) {
    this.cache = cache;
    this.bs = cache.blockSize;
    this.t = Object.assign({}, DEFAULT_TIMING, opts.timing || {});
    this.outputTokenId = opts.outputTokenId || ((i) => 0);
    this.onScheduled = opts.onScheduled || (() => {});
    this.root = opts.hashRoot;
    this.waiting = [];
    this.running = [];
    this.reservedTotal = 0;
    this.busy = false;         // a step is in flight
    this.kickPending = false;
    this.timer = null;
    this.stopped = false;
    this.stepCount = 0;
    this.finishedCount = 0;
  }

  // Blocks a request needs over its life (KV of prompt + outputs).
  blocksNeeded(promptLen, maxTokens) {
    return Math.ceil((promptLen + maxTokens) / this.bs);
  }

  // Largest prompt+max_tokens the cache can ever hold.
  maxTokensTotal() {
    return this.cache.numBlocks * this.bs;
  }

  submit(req) {
    if (this.stopped) throw new Error('scheduler stopped');
    if (this.blocksNeeded(req.promptLen, req.maxTokens) > this.cache.numBlocks) {
      throw new Error('request needs more blocks than the whole cache');
    }
    extendBlockHashes(req.blockHashes, req.tokens, req.promptLen, this.bs, this.root);
    req.state = 'waiting';
    this.waiting.push(req);
    this._kick();
  }

  abort(req) {
    if (req.state === 'waiting') {
      const i = this.waiting.indexOf(req);
      if (i >= 0) this.waiting.splice(i, 1);
      req.state = 'aborted';
    } else if (req.state === 'running') {
      // freed at the end of the current step (its blocks may be in use)
      req.abortRequested = true;
      if (!this.busy) this._finish(req, 'abort');
    }
  }

  _kick() {
    if (this.busy || this.kickPending || this.stopped) return;
    this.kickPending = true;
    setImmediate(() => {
      this.kickPending = false;
      if (!this.busy && !this.stopped) this._step();
    });
  }

  // One scheduling pass; returns the list of [req, numNewTokens].
  schedule() {
    const bs = this.bs;
    let budget = this.t.maxBatchedTokens;
    const scheduled = [];
    let prefillTokens = 0;
    let decodes = 0;

    for (const req of this.running) {
      if (budget <= 0) break;
      let n;
      if (req.numComputed < req.promptLen) {
        n = Math.min(req.promptLen - req.numComputed, budget);
        prefillTokens += n;
      } else {
        n = 1;
        decodes++;
      }
      this._allocateAndCache(req, req.numComputed + n);
      budget -= n;
      scheduled.push([req, n]);
    }

    while (this.waiting.length > 0 && budget > 0 &&
           this.running.length < this.t.maxNumSeqs) {
      const req = this.waiting[0];
      const hit = this.cache.lookup(req.blockHashes, req.promptLen);
      const newBlocks = this.blocksNeeded(req.promptLen, req.maxTokens) - hit.length;
      const avail = this.cache.numFree() - this.cache.countEvictable(hit) -
        this.reservedTotal;
      if (avail < newBlocks) break;
      this.waiting.shift();
      this.cache.touch(hit);
      req.blocks = hit.slice();
      req.numComputed = hit.length * bs;
      if (req.numCachedTokens < 0) req.numCachedTokens = req.numComputed;
      this.cache.recordQuery(req.promptLen, req.numComputed);
      req.reserved = newBlocks;
      this.reservedTotal += newBlocks;
      req.state = 'running';
      this.running.push(req);
      const n = Math.min(req.promptLen - req.numComputed, budget);
      prefillTokens += n;
      this._allocateAndCache(req, req.numComputed + n);
      budget -= n;
      scheduled.push([req, n]);
    }
    return { scheduled, prefillTokens, decodes };
  }

  // Give req blocks to hold tokens [0, upTo) and cache its newly full blocks.
  _allocateAndCache(req, upTo) {
    const bs = this.bs;
    const need = Math.ceil(upTo / bs) - req.blocks.length;
    if (need > 0) {
      if (need > req.reserved) throw new Error('reservation exceeded');
      const got = this.cache.allocate(need);
      for (const b of got) req.blocks.push(b);
      req.reserved -= need;
      this.reservedTotal -= need;
    }
    const cachedBefore = Math.floor(req.numComputed / bs);
    const full = Math.floor(Math.min(upTo, req.tokens.length) / bs);
    if (full > cachedBefore) {
      extendBlockHashes(req.blockHashes, req.tokens, full * bs, bs, this.root);
      this.cache.cacheBlocks(req.blocks, req.blockHashes, req.tokens, cachedBefore, full);
    }
  }

  stepDurationUs(prefillTokens, decodes) {
    return this.t.baseUs + this.t.prefillUsPerToken * prefillTokens +
      this.t.decodeUsPerSeq * decodes;
  }

  _step() {
    if (this.running.length === 0 && this.waiting.length === 0) return;
    const plan = this.schedule();
    this.onScheduled();
    if (plan.scheduled.length === 0) return;  // cannot happen; see admission
    this.busy = true;
    this.stepCount++;
    const us = this.stepDurationUs(plan.prefillTokens, plan.decodes);
    const ms = us / 1000 / this.t.timeScale;
    this.timer = setTimeout(() => {
      this.timer = null;
      this._complete(plan.scheduled);
      this.busy = false;
      if (!this.stopped) this._step();
    }, ms);
  }

  _complete(scheduled) {
    for (const [req, n] of scheduled) {
      if (req.state !== 'running') continue;
      req.numComputed += n;
      if (req.abortRequested) {
        this._finish(req, 'abort');
        continue;
      }
      if (req.numComputed < req.promptLen) continue;  // chunked prefill
      const id = this.outputTokenId(req.generated);
      req.tokens.push(id);
      req.generated++;
      const last = req.generated >= req.maxTokens;
      req.onToken(id, req.generated - 1, last);
      if (last) this._finish(req, 'length');
    }
  }

  _finish(req, reason) {
    const i = this.running.indexOf(req);
    if (i >= 0) this.running.splice(i, 1);
    this.cache.freeBlocks(req.blocks);
    req.blocks = [];
    this.reservedTotal -= req.reserved;
    req.reserved = 0;
    req.state = reason === 'abort' ? 'aborted' : 'finished';
    this.finishedCount++;
    req.onFinish(reason);
  }

  stop() {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

module.exports = { Scheduler, Request, DEFAULT_TIMING };
