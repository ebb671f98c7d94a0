'use strict';
// One emulated engine: KV cache + scheduler + (optional) KV event publisher
// + its own HTTP server. Engines in one process share only the tokenizer.

const { KvCache, noneHash } = require('./kv_cache');
const { Scheduler, Request } = require('./scheduler');
const { EventPublisher } = require('./events');
const { handleHttp, listenHttp, closeHttp } = require('./http_api');

// Filler output: one token per word, cycling.
const FILLER_WORDS = [' the', ' quick', ' brown', ' fox', ' jumps', ' over',
  ' a', ' lazy', ' dog', ' and', ' then', ' runs', ' away', '.'];

class Engine {
  // o: index, name, host, port, model, blockSize, capacityBlocks, timing,
  //    kvEvents ('none'|'zmq'), eventsPort, replayPort|null, topic,
  //    eventsFormat, hashType, flavour, hashSeed, dpRank, listen (false: a
  //    data-parallel rank behind a DpFront's HTTP server); tokenizer:
  //    TextTokenizer (or null), filler: {ids, texts}
  constructor(o, tokenizer, filler) {
    this.o = o;
    this.name = o.name;
    this.tokenizer = tokenizer;
    this.filler = filler;
    this.publisher = null;
    this.requestsTotal = 0;
    this.requestsFinished = 0;
    this.promptTokensTotal = 0;
    this.generationTokensTotal = 0;
    this.nextId = 0;
    this.created = Math.floor(Date.now() / 1000);
    this.down = false;
    this.downs = 0;
    this._fresh();
    this.sockets = new Set();
  }

  // An empty cache and an idle scheduler: a new engine, or one restarted.
  _fresh() {
    this.cache = new KvCache({
      numBlocks: this.o.capacityBlocks,
      blockSize: this.o.blockSize,
      // an offload tier: vLLM's connector sends hashes alone, SGLang's
      // HiCache its blocks' token ids
      cpuBlocks: (this.o.eventForms && this.o.eventForms.offload) || 0,
      cpuMedium: this.o.flavour === 'sglang' ? 'CPU_PINNED' : 'CPU',
      cpuForm: this.o.flavour === 'sglang' ? 'tokens' : 'hashes',
      // vLLM's connector with a block_size of several GPU blocks
      cpuGroup: this.o.eventForms && this.o.eventForms.offloadBlockSize
        ? this.o.eventForms.offloadBlockSize / this.o.blockSize : 1,
      onEvent: (ev) => { if (this.publisher) this.publisher.add(ev); },
    });
    this.scheduler = new Scheduler(this.cache, {
      timing: this.o.timing,
      gpu: this.o.gpu,
      hashRoot: noneHash(this.o.hashSeed || 0),
      partialBlocks: !!(this.o.eventForms && this.o.eventForms.partial),
      eosTokens: this.o.eosTokens || null,
      outputTokenId: (i) => this.filler.ids[i % this.filler.ids.length],
      onScheduled: () => { if (this.publisher) this.publisher.flush(); },
    });
  }

  async start() {
    await this._startPublisher();
    if (this.o.listen !== false) await this._listen();
  }

  async _startPublisher() {
    if (this.o.kvEvents === 'zmq') {
      const host = this.o.eventsHost || '127.0.0.1';
      this.publisher = new EventPublisher({
        endpoint: `tcp://${host}:${this.o.eventsPort}`,
        replayEndpoint: this.o.replayPort ? `tcp://${host}:${this.o.replayPort}` : null,
        topic: this.o.topic || '',
        format: this.o.eventsFormat,
        flavour: this.o.flavour,
        hashType: this.o.hashType,
        bufferSteps: 10000,
        replayTopicFrame: this.o.flavour === 'vllm' && this.o.eventsFormat === 'map',
        forms: this.o.eventForms,
        dpRank: this.o.dpRank || 0,
      });
      await this.publisher.start();
    }
  }

  async _listen() {
    await listenHttp(this, (req, res) => handleHttp(this, req, res));
  }

  newRequestId(prefix) {
    return `${prefix}-${this.name}-${this.nextId++}`;
  }

  // Run one request through the scheduler. handlers: onToken(text, index,
  // last), onFinish(reason). Returns the Request (for abort). Throws an
  // Error with status 400 when the request can never fit in the cache.
  // Why a request can never be served (it needs more blocks than the whole
  // cache), or null.
  refusal(promptLen, maxTokens) {
    const need = this.scheduler.blocksNeeded(promptLen, maxTokens);
    if (need <= this.cache.numBlocks) return null;
    return `prompt (${promptLen} tokens) + max_tokens (${maxTokens}) need ${need} KV ` +
      `blocks but the emulated cache holds ${this.cache.numBlocks} ` +
      `(${this.cache.numBlocks * this.cache.blockSize} tokens)`;
  }

  // keys: the request's extra keys (http_api.js requestKeys), or null
  submit(promptIds, maxTokens, handlers, keys) {
    const why = this.refusal(promptIds.length, maxTokens);
    if (why) {
      const e = new Error(why);
      e.status = 400;
      throw e;
    }
    this.requestsTotal++;
    this.promptTokensTotal += promptIds.length;
    const req = new Request(this.nextId, promptIds, maxTokens, {
      onToken: (id, index, last) => {
        this.generationTokensTotal++;
        const text = this.filler.texts[index % this.filler.texts.length];
        handlers.onToken(text, index, last);
      },
      onFinish: (reason) => {
        this.requestsFinished++;
        handlers.onFinish(reason);
      },
    }, keys);
    req.arrival = Date.now();
    // the serving frontend's own time before the engine sees the request
    // (tokenizing, routing, forwarding): a fit parameter, see BENCHMARKS §3
    const delayMs = (this.o.frontendUs || 0) / 1000 / this.o.timing.timeScale;
    if (delayMs > 0) {
      const sched = this.scheduler;
      setTimeout(() => {
        if (req.state === 'new' && !sched.stopped) sched.submit(req);
      }, delayMs);
    } else {
      this.scheduler.submit(req);
    }
    return req;
  }

  abort(req) {
    if (req.state === 'new') {
      req.state = 'aborted';
      return;
    }
    this.scheduler.abort(req);
  }

  // The publisher's next n batches are lost to subscribers (main.js "gap");
  // false without a publisher.
  loseBatches(n) {
    if (!this.publisher) return false;
    this.publisher.lose += n;
    return true;
  }

  resetPrefixCache() {
    const ok = this.cache.reset();
    if (ok && this.publisher) this.publisher.flush();
    return ok;
  }

  // The engine goes away for `ms` (a crash or a restart of the server):
  // connections and requests in flight are cut, nothing listens, and it
  // comes back as a new process would, with an empty cache and, with
  // events, a new publisher whose sequence starts again at 0.
  // onChange(state) is called with 'down' and then 'up'.
  async goDown(ms, onChange) {
    if (this.down || this.stopped) return false;
    this.down = true;
    this.downs++;
    this.scheduler.stop();
    if (this.server) {
      await closeHttp(this);
      this.server = null;
    }
    if (this.publisher) {
      await this.publisher.close();
      this.publisher = null;
    }
    onChange('down');
    this.upTimer = setTimeout(async () => {
      this.upTimer = null;
      if (this.stopped) return;
      this._fresh();
      try {
        await this._startPublisher();
        if (this.o.listen !== false) await this._listen();
        this.down = false;
        onChange('up');
      } catch (err) {
        onChange('failed: ' + err.message);
      }
    }, ms);
    return true;
  }

  async stop() {
    this.stopped = true;
    if (this.upTimer) clearTimeout(this.upTimer);
    this.scheduler.stop();
    if (this.server) closeHttp(this);
    if (this.publisher) await this.publisher.close();
  }
}

// Token ids and texts of the filler words, computed with the tokenizer.
async function makeFiller(tokenizer) {
  const ids = [];
  for (const w of FILLER_WORDS) {
    const enc = tokenizer ? await tokenizer.encode(w, false) : [0];
    ids.push(enc[0]);
  }
  return { ids, texts: FILLER_WORDS.slice() };
}

module.exports = { Engine, makeFiller, FILLER_WORDS };
