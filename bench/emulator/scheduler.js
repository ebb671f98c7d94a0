'use strict';
// Continuous batching of one emulated engine, with vLLM V1's scheduler
// semantics (vllm/v1/core/sched/scheduler.py):
//
// - A request is a list of tokens (prompt, then outputs) and a count of
//   tokens whose KV is computed. Every step gives each scheduled request
//   the tokens it lacks, up to the step's token budget: a prompt is
//   prefilled in chunks of the budget, a decoding request gets 1 token.
//   When all its tokens are computed the next token is sampled.
// - Running requests are scheduled first, in order. Each step allocates
//   only the blocks the step's tokens need. When the free queue cannot
//   supply them the newest running request is preempted: its blocks are
//   freed (hashed ones stay in the prefix cache, as vLLM's do), its
//   computed count drops to 0, and it goes back to the front of the waiting
//   queue, to be recomputed, prompt and outputs, as a prefill.
// - Waiting requests are admitted in FIFO order (head-of-line blocking),
//   only in a step that preempted nobody, when the budget, --max-num-seqs
//   and the blocks for the first chunk allow.
//
// - With an offload tier (kv_cache.js CpuTier, vLLM's OffloadingConnector
//   with its CPU backend) a waiting request's leading blocks the GPU lacks
//   and the tier holds, after the GPU's hit, are loaded back instead of
//   computed: they count as computed, in its cached tokens too (vLLM's
//   num_cached_tokens is num_computed_tokens, external tokens included),
//   and are cached on the GPU.
//
// A step's time (gpu.js runs it):
//   CPU phase  base_us                                   (the engine's own)
//   GPU phase  gpu_step_us + prefill_us_per_token x prefill tokens
//              + decode_us_per_seq x decoding requests    (shared on a GPU)
//              + load_us_per_token x tokens loaded back   (PCIe; the load
//                is charged to the step that admits the request, as if
//                synchronous: vLLM loads asynchronously, before the
//                request's first step)
// The GPU phase is affine in the batch, so the cost per decoding request
// falls as the batch grows: decoding a small model is memory-bound, the
// weights are read once per step and each request adds its KV reads.

const { extendBlockHashes, hashBlock, blockExtraKeys } = require('./kv_cache');
const { Gpu } = require('./gpu');
const { realClock } = require('./model_clock');
const { outputLength } = require('./eos');

// Fitted to the seed's tables (bench/fidelity/fit.js, BENCHMARKS.md §3.1),
// at the reference node's speeds; the node model (speeds, placement,
// sharing) is gpu.js's.
// vLLM's buckets for vllm:inter_token_latency_seconds (v0.11-0.12,
// vllm/v1/metrics/loggers.py), seconds, cumulative as Prometheus counts
const ITL_BUCKETS_S = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
  1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];

// and for its request-level histograms (vllm:request_prefill_time_seconds)
const PREFILL_BUCKETS_S = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
  40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0];
// and for its token counts: 1, 2, 5, 10, ... up to the model's length
// (Qwen3-0.6B's 40,960)
const TOKEN_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000];

const DEFAULT_TIMING = {
  baseUs: 1450,             // CPU per step
  gpuStepUs: 4975,          // GPU per step (weights, launches)
  prefillUsPerToken: 20.1,  // GPU per uncached prompt token
  decodeUsPerSeq: 3.3,      // GPU per decoding request (its KV reads)
  // a prompt token's KV loaded back from the host (CPU) tier over PCIe:
  // Qwen3-0.6B's KV is 28 layers x 2 x 8 heads x 128 x 2 bytes = 114,688
  // bytes a token, at ~25 GB/s (PCIe 4.0 x16, pinned host memory) 4.6 us;
  // a token recomputed costs prefillUsPerToken (20.1 us)
  loadUsPerToken: 4.6,
  maxBatchedTokens: 2048,   // vLLM's default for `vllm serve` on GPUs < 70 GiB
  maxNumSeqs: 256,
  timeScale: 1,
};

class Request {
  // promptIds: array of token ids; maxTokens >= 1; outputIds(i) -> token id;
  // keys: the extra keys its blocks are hashed with (kv_cache.js
  // blockExtraKeys: LoRA adapter, cache_salt, multimodal items), or null
  constructor(id, promptIds, maxTokens, handlers, keys) {
    this.id = id;
    this.tokens = promptIds.slice();
    this.promptLen = promptIds.length;
    this.maxTokens = maxTokens;
    this.generated = 0;
    this.outputLength = maxTokens;  // where it stops (set by submit, eos.js)
    this.numComputed = 0;
    this.numCachedTokens = -1;
    this.blocks = [];
    this.blockHashes = [];
    this.keys = keys || null;
    this.partialHash = null;  // the partial block announced (--events-partial)
    this.preemptions = 0;
    this.onToken = handlers.onToken || (() => {});
    this.onFinish = handlers.onFinish || (() => {});
    this.state = 'new';      // new, waiting, running, finished, aborted
    this.arrival = 0;
    this.lastTokenMs = 0;    // model time of its last output token
  }
}

class Scheduler {
  // cache: KvCache; opts: timing (see DEFAULT_TIMING), gpu (a Gpu shared
  // with sibling engines; default one of its own on the real clock),
  // outputTokenId(i), onScheduled() called after each scheduling pass (to
  // publish events), eosTokens (eos.js: the range of the model's own
  // answer lengths, { lo, hi }; null: every answer runs to max_tokens)
  constructor(cache, opts) {
    this.cache = cache;
    this.bs = cache.blockSize;
    this.t = Object.assign({}, DEFAULT_TIMING, opts.timing || {});
    this.gpu = opts.gpu || new Gpu(realClock(this.t.timeScale), { speed: 1, share: 1 });
    this.outputTokenId = opts.outputTokenId || ((i) => 0);
    this.onScheduled = opts.onScheduled || (() => {});
    this.root = opts.hashRoot;
    // vLLM's partial-block stores (docs/engine-events.md "Token ids")
    this.partialBlocks = !!opts.partialBlocks;
    this.eosTokens = opts.eosTokens || null;
    this.waiting = [];
    this.running = [];
    this.busy = false;         // a step is in flight
    this.kickPending = false;
    this.stopped = false;
    this.stepCount = 0;
    this.finishedCount = 0;
    this.preemptionCount = 0;
    // vLLM's inter-token latency histogram (metrics.js): the model time
    // between two output tokens of one request, each token after the first
    this.itl = { sumMs: 0, count: 0, buckets: ITL_BUCKETS_S.map(() => 0) };
    // vLLM's vllm:request_prefill_time_seconds (first scheduled to first
    // token, model time) and vllm:request_prefill_kv_computed_tokens
    // (prompt tokens less cached ones), both recorded as a request
    // finishes, as vLLM records them (vllm/v1/metrics/stats.py)
    this.prefill = { sumMs: 0, count: 0, buckets: PREFILL_BUCKETS_S.map(() => 0) };
    this.prefillComputed = { sum: 0, count: 0, buckets: TOKEN_BUCKETS.map(() => 0) };
  }

  // Blocks a request needs to hold prompt and outputs at once.
  blocksNeeded(promptLen, maxTokens) {
    return Math.ceil((promptLen + maxTokens) / this.bs);
  }

  // Largest prompt+max_tokens the cache can ever hold.
  maxTokensTotal() {
    return this.cache.numBlocks * this.bs;
  }

  submit(req) {
    if (this.stopped) throw new Error('scheduler stopped');
    // vLLM refuses what exceeds max_model_len; here, what can never fit
    if (this.blocksNeeded(req.promptLen, req.maxTokens) > this.cache.numBlocks) {
      throw new Error('request needs more blocks than the whole cache');
    }
    extendBlockHashes(req.blockHashes, req.tokens, req.promptLen, this.bs, this.root, req.keys);
    req.outputLength = outputLength(req.tokens, req.maxTokens, this.eosTokens);
    req.state = 'waiting';
    req.submitMs = this.gpu.clock.now();
    req.atSubmit = { used: this.cache.numBlocks - this.cache.numFree(),
      running: this.running.length, waiting: this.waiting.length };
    this.waiting.push(req);
    this._kick();
  }

  abort(req) {
    if (req.state === 'waiting') {
      const i = this.waiting.indexOf(req);
      if (i >= 0) this.waiting.splice(i, 1);
      this._release(req);
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

  // Blocks req must add to hold tokens [0, upTo).
  _newBlocks(req, upTo) {
    return Math.max(0, Math.ceil(upTo / this.bs) - req.blocks.length);
  }

  _release(req) {
    this._retractPartial(req);
    if (req.blocks.length > 0) this.cache.freeBlocks(req.blocks);
    req.blocks = [];
  }

  // vLLM's preemption: free everything, recompute from scratch later.
  _preempt(req) {
    this._release(req);
    req.numComputed = 0;
    req.preemptions++;
    this.preemptionCount++;
    req.state = 'waiting';
    this.waiting.unshift(req);
  }

  // One scheduling pass: { scheduled: [[req, numNewTokens]], prefillTokens,
  // decodes, preempted }.
  schedule() {
    let budget = this.t.maxBatchedTokens;
    const scheduled = [];
    let preempted = 0;
    let loadTokens = 0;

    for (let i = 0; i < this.running.length && budget > 0;) {
      const req = this.running[i];
      const n = Math.min(req.tokens.length - req.numComputed, budget);
      let fits = true;
      while (this._newBlocks(req, req.numComputed + n) > this.cache.numFree()) {
        const victim = this.running.pop();
        const k = scheduled.findIndex(([r]) => r === victim);
        if (k >= 0) {
          budget += scheduled[k][1];
          scheduled.splice(k, 1);
        }
        this._preempt(victim);
        preempted++;
        if (victim === req) {
          fits = false;
          break;
        }
      }
      if (!fits) break;
      this._allocateAndCache(req, req.numComputed + n);
      budget -= n;
      scheduled.push([req, n]);
      i++;
    }

    while (preempted === 0 && this.waiting.length > 0 && budget > 0 &&
           this.running.length < this.t.maxNumSeqs) {
      const req = this.waiting[0];
      extendBlockHashes(req.blockHashes, req.tokens, req.tokens.length, this.bs, this.root, req.keys);
      const hit = this.cache.lookup(req.blockHashes, req.tokens.length);
      const loaded = this.cache.cpu
        ? this.cache.cpu.lookup(req.blockHashes, hit.length,
          Math.floor((req.tokens.length - 1) / this.bs))
        : 0;
      const computed = (hit.length + loaded) * this.bs;
      const n = Math.min(req.tokens.length - computed, budget);
      const need = Math.ceil((computed + n) / this.bs) - hit.length;
      if (need > this.cache.numFree() - this.cache.countEvictable(hit)) break;
      this.waiting.shift();
      this.cache.touch(hit);
      req.blocks = hit.slice();
      if (req.numCachedTokens < 0) {
        req.numCachedTokens = computed;
        req.scheduledMs = this.gpu.clock.now();
        this.cache.recordQuery(req.promptLen, computed);
      }
      req.state = 'running';
      this.running.push(req);
      // the blocks loaded back are cached on the GPU with the new ones
      req.numComputed = hit.length * this.bs;
      this._allocateAndCache(req, computed + n);
      req.numComputed = computed;
      if (loaded > 0) {
        this.cache.cpu.touch(req.blockHashes.slice(hit.length, hit.length + loaded));
        loadTokens += loaded * this.bs;
      }
      budget -= n;
      scheduled.push([req, n]);
    }

    let prefillTokens = 0;
    let decodes = 0;
    for (const [req, n] of scheduled) {
      if (req.generated > 0 && n === 1 && req.numComputed === req.tokens.length - 1) decodes++;
      else prefillTokens += n;
    }
    return { scheduled, prefillTokens, decodes, preempted, loadTokens };
  }

  // Give req blocks to hold tokens [0, upTo) and cache its newly full blocks.
  _allocateAndCache(req, upTo) {
    const bs = this.bs;
    const need = this._newBlocks(req, upTo);
    if (need > 0) {
      const got = this.cache.allocate(need);
      for (const b of got) req.blocks.push(b);
    }
    const cachedBefore = Math.floor(req.numComputed / bs);
    const full = Math.floor(Math.min(upTo, req.tokens.length) / bs);
    if (full > cachedBefore) {
      extendBlockHashes(req.blockHashes, req.tokens, full * bs, bs, this.root, req.keys);
      this._retractPartial(req);
      this.cache.cacheBlocks(req.blocks, req.blockHashes, req.tokens, cachedBefore, full, req.keys);
    }
    if (this.partialBlocks) this._announcePartial(req, Math.min(upTo, req.tokens.length));
  }

  // vLLM's cache_partial_block: a prompt that ends inside a block publishes
  // one hash for the block's tokens so far (block_size: how many); the hash
  // is removed when the block fills or the request lets it go.
  _announcePartial(req, upTo) {
    const bs = this.bs;
    const rem = upTo % bs;
    if (req.partialHash || req.generated > 0 || upTo < req.promptLen || rem === 0) return;
    const i = Math.floor(upTo / bs);
    const parent = i === 0 ? null : req.blockHashes[i - 1];
    req.partialHash = hashBlock(parent || this.root, req.tokens, i * bs, upTo,
      blockExtraKeys(req.keys, i, bs));
    this.cache.onEvent({ type: 'BlockStored', hashes: [req.partialHash], parent,
      tokenIds: req.tokens.slice(i * bs, upTo), blockSize: rem, partial: true,
      lora: req.keys ? req.keys.lora || null : null,
      extraKeys: [blockExtraKeys(req.keys, i, bs)] });
  }

  _retractPartial(req) {
    if (!req.partialHash) return;
    this.cache.onEvent({ type: 'BlockRemoved', hashes: [req.partialHash], partial: true });
    req.partialHash = null;
  }

  // A step's two phases, µs at the reference GPU's speed.
  stepPhasesUs(prefillTokens, decodes) {
    return {
      cpu: this.t.baseUs,
      gpu: this.t.gpuStepUs + this.t.prefillUsPerToken * prefillTokens +
        this.t.decodeUsPerSeq * decodes,
    };
  }

  // The same split by what sets its speed (gpu.js runStep); load: PCIe
  // transfers of the offload tier, at no GPU's speed.
  stepWorkUs(prefillTokens, decodes, loadTokens) {
    return {
      cpu: this.t.baseUs,
      step: this.t.gpuStepUs + this.t.decodeUsPerSeq * decodes,
      prefill: this.t.prefillUsPerToken * prefillTokens,
      load: this.t.loadUsPerToken * (loadTokens || 0),
    };
  }

  stepDurationUs(prefillTokens, decodes) {
    const p = this.stepPhasesUs(prefillTokens, decodes);
    return p.cpu + p.gpu;
  }

  _step() {
    if (this.stopped || (this.running.length === 0 && this.waiting.length === 0)) return;
    const plan = this.schedule();
    this.onScheduled();
    if (plan.scheduled.length === 0) {
      // everything preempted and nothing admitted cannot last: the next
      // pass admits the front request into a cache with its blocks free
      if (this.running.length === 0 && this.waiting.length > 0) this._kick();
      return;
    }
    this.busy = true;
    this.stepCount++;
    const w = this.stepWorkUs(plan.prefillTokens, plan.decodes, plan.loadTokens);
    this.gpu.runStep(this, w, () => {
      if (this.stopped) return;
      this._complete(plan.scheduled);
      this.busy = false;
      this._step();
    });
  }

  _complete(scheduled) {
    for (const [req, n] of scheduled) {
      if (req.state !== 'running') continue;
      req.numComputed += n;
      if (req.abortRequested) {
        this._finish(req, 'abort');
        continue;
      }
      if (req.numComputed < req.tokens.length) continue;  // chunked prefill
      const id = this.outputTokenId(req.generated);
      req.tokens.push(id);
      req.generated++;
      this._recordItl(req);
      // the reason, as vLLM's finish_reason: 'length' at max_tokens,
      // 'stop' where the model ended it
      const last = req.generated >= req.maxTokens ? 'length'
        : req.generated >= req.outputLength ? 'stop' : false;
      req.onToken(id, req.generated - 1, last);
      if (last) this._finish(req, last);
    }
  }

  _recordItl(req) {
    const now = this.gpu.clock.now();
    if (req.generated === 1) req.firstTokenMs = now;
    if (req.generated > 1) {
      const ms = now - req.lastTokenMs;
      this.itl.sumMs += ms;
      this.itl.count++;
      for (let i = 0; i < ITL_BUCKETS_S.length; i++) if (ms <= ITL_BUCKETS_S[i] * 1000) this.itl.buckets[i]++;
    }
    req.lastTokenMs = now;
  }

  _finish(req, reason) {
    const i = this.running.indexOf(req);
    if (i >= 0) this.running.splice(i, 1);
    this._release(req);
    req.state = reason === 'abort' ? 'aborted' : 'finished';
    this.finishedCount++;
    this._recordPrefill(req);
    req.onFinish(reason);
  }

  _recordPrefill(req) {
    if (req.firstTokenMs === undefined || req.scheduledMs === undefined) return;
    const ms = req.firstTokenMs - req.scheduledMs;
    this.prefill.sumMs += ms;
    this.prefill.count++;
    for (let i = 0; i < PREFILL_BUCKETS_S.length; i++) if (ms <= PREFILL_BUCKETS_S[i] * 1000) this.prefill.buckets[i]++;
    const n = req.promptLen - Math.max(0, req.numCachedTokens);
    this.prefillComputed.sum += n;
    this.prefillComputed.count++;
    for (let i = 0; i < TOKEN_BUCKETS.length; i++) if (n <= TOKEN_BUCKETS[i]) this.prefillComputed.buckets[i]++;
  }

  stop() {
    this.stopped = true;
    this.gpu.cancel(this);
  }
}

module.exports = { Scheduler, Request, DEFAULT_TIMING, ITL_BUCKETS_S, PREFILL_BUCKETS_S,
  TOKEN_BUCKETS };
