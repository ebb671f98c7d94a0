'use strict';
// Data parallelism (--dp-ranks R): one HTTP server in front of R engines
// (ranks), each with its own KV cache, scheduler and KV event publisher,
// as vLLM's API server fronts its data-parallel engine cores. A request
// names its rank in the X-data-parallel-rank header, read as vLLM's
// _get_data_parallel_rank does (an integer, else ignored; out of range:
// 400); without one the front picks the least loaded rank (vLLM's
// internal load balancing: waiting x 4 + running). Each response says
// which rank served it (x-engine-rank).

const { handleHttp, listenHttp, closeHttp } = require('./http_api');
const { renderMetrics } = require('./metrics');

class DpFront {
  // o: index, name, host, port; ranks: Engines created with listen: false
  constructor(o, ranks) {
    this.o = o;
    this.name = o.name;
    this.ranks = ranks;
    this.next = 0;
    this.down = false;
    this.sockets = new Set();
  }

  async start() {
    await Promise.all(this.ranks.map((r) => r.start()));
    await this._listen();
  }

  async _listen() {
    await listenHttp(this, (req, res) => this._handle(req, res));
  }

  // the rank the header names: a number, null (none or not an integer),
  // or NaN (out of range)
  static headerRank(value, n) {
    if (value === undefined || !/^\s*[+-]?\d+\s*$/.test(value)) return null;
    const r = Number(value);
    return r >= 0 && r < n ? r : NaN;
  }

  // vLLM's DPLBAsyncMPClient: the lowest waiting x 4 + running, from a
  // rotating start so that idle ranks take turns
  leastLoaded() {
    const n = this.ranks.length;
    let best = 0;
    let bestScore = Infinity;
    for (let k = 0; k < n; k++) {
      const i = (this.next + k) % n;
      const s = this.ranks[i].scheduler;
      const score = s.waiting.length * 4 + s.running.length;
      if (score < bestScore) {
        bestScore = score;
        best = i;
      }
    }
    this.next = (best + 1) % n;
    return best;
  }

  _handle(req, res) {
    const url = (req.url || '/').split('?')[0];
    const generate = req.method === 'POST'
      && (url === '/v1/completions' || url === '/v1/chat/completions');
    if (req.method === 'GET' && url === '/metrics') return this._metrics(res);
    if (req.method === 'POST' && url === '/reset_prefix_cache') {
      req.resume();
      const ok = this.ranks.map((r) => r.resetPrefixCache()).every(Boolean);
      res.writeHead(ok ? 200 : 409, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ reset: ok, engine_id: this.name }));
    }
    let rank = 0;
    if (generate) {
      rank = DpFront.headerRank(req.headers['x-data-parallel-rank'], this.ranks.length);
      if (Number.isNaN(rank)) {
        req.resume();
        const msg = `data_parallel_rank ${req.headers['x-data-parallel-rank'].trim()} ` +
          `is out of range [0, ${this.ranks.length}).`;
        res.writeHead(400, { 'content-type': 'application/json', 'x-engine-id': this.name });
        return res.end(JSON.stringify({ error: { message: msg, type: 'BadRequestError', code: 400 } }));
      }
      if (rank === null) rank = this.leastLoaded();
    }
    res.setHeader('x-engine-rank', String(rank));
    return handleHttp(this.ranks[rank], req, res);
  }

  // every rank's samples under its own engine label (HELP and TYPE once)
  _metrics(res) {
    const text = this.ranks.map((r, i) => {
      const t = renderMetrics(r);
      return i === 0 ? t : t.split('\n').filter((l) => l && !l.startsWith('#')).join('\n') + '\n';
    }).join('');
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8',
      'x-engine-id': this.name });
    res.end(text);
  }

  // every rank's publisher loses its next n batches
  loseBatches(n) {
    return this.ranks.map((r) => r.loseBatches(n)).every(Boolean);
  }

  // the whole server goes away and comes back with empty ranks
  async goDown(ms, onChange) {
    if (this.down || this.stopped) return false;
    this.down = true;
    await closeHttp(this);
    await Promise.all(this.ranks.map((r) => r.goDown(ms, () => {})));
    onChange('down');
    this.upTimer = setTimeout(async () => {
      this.upTimer = null;
      if (this.stopped) return;
      try {
        await this._listen();
        this.down = false;
        onChange('up');
      } catch (err) {
        onChange('failed: ' + err.message);
      }
    }, ms + 50);
    return true;
  }

  async stop() {
    this.stopped = true;
    if (this.upTimer) clearTimeout(this.upTimer);
    if (this.server) closeHttp(this);
    await Promise.allSettled(this.ranks.map((r) => r.stop()));
  }
}

module.exports = { DpFront };
