'use strict';
// Closed-loop load: C clients, each sending its next request as soon as the
// previous one finished, streaming, measuring TTFT at the first SSE chunk.

const http = require('node:http');

// One streaming completion. Resolves a record {ok, status, ttftMs, totalMs,
// promptTokens, cachedTokens, engine, error}.
function sendOne(agent, port, body, headers, onFirst) {
  return new Promise((resolve) => {
    const data = Buffer.from(JSON.stringify(body));
    const t0 = process.hrtime.bigint();
    const ms = () => Number(process.hrtime.bigint() - t0) / 1e6;
    let ttft = null;
    const rec = { ok: false, status: 0, ttftMs: null, totalMs: null, promptTokens: null,
      cachedTokens: null, engine: null, overlap: null, reason: null, error: null };
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/completions', agent,
      headers: Object.assign({ 'content-type': 'application/json', 'content-length': data.length }, headers) },
    (res) => {
      rec.status = res.statusCode;
      rec.engine = res.headers['x-engine-id'] || null;
      // kvroute's belief (kvbench's nginx adds it): the leading blocks of
      // the prompt it thought the chosen server held, and why it chose it
      const ov = res.headers['x-kvroute-overlap'];
      rec.overlap = ov === undefined || ov === '' ? null : Number(ov);
      rec.reason = res.headers['x-kvroute-reason'] || null;
      const chunks = [];
      res.on('data', (c) => {
        if (ttft === null) {
          ttft = ms();
          if (onFirst) onFirst();
        }
        chunks.push(c);
      });
      res.on('end', () => {
        rec.totalMs = ms();
        rec.ttftMs = ttft;
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) {
          rec.error = `HTTP ${res.statusCode}: ${text.slice(0, 200)}`;
          return resolve(rec);
        }
        let usage = null;
        let done = false;
        for (const ev of text.split('\n\n')) {
          if (!ev.startsWith('data: ')) continue;
          const d = ev.slice(6);
          if (d === '[DONE]') { done = true; continue; }
          try {
            const j = JSON.parse(d);
            if (j.usage) usage = j.usage;
            if (j.engine_id && !rec.engine) rec.engine = j.engine_id;
          } catch (e) { /* counted below */ }
        }
        if (!done || !usage) {
          rec.error = 'stream ended without usage or [DONE]';
          return resolve(rec);
        }
        rec.promptTokens = usage.prompt_tokens;
        rec.cachedTokens = usage.prompt_tokens_details ? usage.prompt_tokens_details.cached_tokens : 0;
        if (usage.emulator_trace) rec.emulatorTrace = usage.emulator_trace;
        rec.ok = true;
        resolve(rec);
      });
      res.on('error', (err) => { rec.error = err.message; resolve(rec); });
    });
    req.on('error', (err) => { rec.error = err.message; resolve(rec); });
    req.end(data);
  });
}

// Request q through nginx (frontend fe of o.ports, or o.port), or through
// a router of the load generator's own (o.route: it picks the engine and
// is told of the first token and the end).  A router that can tell a dead
// engine (onFail) routes again when the engine refused the connection or
// cut it before the first token, once per engine at most, as nginx's
// proxy_next_upstream does; rec.tries counts the tries.
async function sendThrough(o, agent, q, body, headers, fe) {
  if (!o.route) return sendOne(agent, o.frontend ? o.ports[fe] : o.port, body, headers, null);
  let rec;
  const tries = o.enginePorts.length;
  for (let t = 1; t <= tries; t++) {
    const routed = o.route(q);
    rec = await sendOne(agent, o.enginePorts[routed.engine], body, headers, routed.onFirstToken);
    routed.onFinish();
    rec.tries = t;
    const unreached = !rec.ok && rec.status === 0 && rec.ttftMs === null;
    if (!unreached || !routed.onFail) break;
    routed.onFail();
  }
  return rec;
}

// The body of request q: streamed, usage included; its type's adapter
// (model) and cache_salt when the workload has keys (workload.js).
function requestBody(q, o) {
  const body = {
    model: q.model || o.model,
    prompt: o.promptForm === 'tokens' ? q.ids : q.text,
    max_tokens: o.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (q.salt) body.cache_salt = q.salt;
  return body;
}

// requests: [{prefixId, ids, text, model?, salt?}]; o: port, concurrency, maxTokens,
// promptForm ('text'|'tokens'), model, onSend(i) called before request i
// goes out, clientIds (one string per client, sent as X-Kvbench-Client),
// frontend(i, client) (optional: which of several nginx instances request
// i goes to, an index into o.ports; else o.port).
// Each client keeps one keep-alive connection of its own, as the seed's
// clients did (its baseline balanced per connection), per frontend.
// Resolves {records, wallMs, t0} (t0: hrtime of the start).
async function runLoad(requests, o) {
  const agents = Array.from({ length: o.concurrency },
    () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const records = new Array(requests.length);
  let next = 0;
  const t0 = process.hrtime.bigint();
  const worker = async (client) => {
    const agent = agents[client];
    const headers = { 'x-kvbench-client': o.clientIds ? o.clientIds[client] : String(client) };
    for (;;) {
      const i = next++;
      if (i >= requests.length) return;
      const q = requests[i];
      const body = requestBody(q, o);
      if (o.onSend) o.onSend(i);
      const sentMs = Number(process.hrtime.bigint() - t0) / 1e6;
      // a router in the load generator itself (o.route: the bench's Dynamo)
      // picks the engine and is told of the first token and the end
      const fe = o.frontend ? o.frontend(i, client) : 0;
      const rec = await sendThrough(o, agent, q, body,
        Object.assign({ 'x-kvbench-prefix': String(q.prefixId) }, headers), fe);
      rec.sentMs = sentMs;
      rec.prefixId = q.prefixId;
      rec.frontend = fe;
      rec.expectedPromptTokens = q.ids.length;
      records[i] = rec;
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, (_, c) => worker(c)));
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  for (const a of agents) a.destroy();
  return { records, wallMs, t0 };
}

// Open-loop load: requests arrive as a Poisson process of o.rate a second
// (real time), whatever the engines' pace, so a router that lets a queue
// grow shows it in TTFT instead of slowing the clients down.  Request i
// belongs to client i mod o.concurrency (its X-Kvbench-Client, its
// keep-alive pool), so connection-sticky routers see a fixed set of
// clients.  A request's times count from its arrival, not from when the
// generator got round to sending it.  Resolves as runLoad does.
async function runOpenLoop(requests, o) {
  const { poissonArrivals } = require('./workload');
  const agents = Array.from({ length: o.concurrency },
    () => new http.Agent({ keepAlive: true }));
  const records = new Array(requests.length);
  const arrivals = poissonArrivals(requests.length, o.rate, o.arrivalSeed || 1);
  const t0 = process.hrtime.bigint();
  const now = () => Number(process.hrtime.bigint() - t0) / 1e6;
  const pending = [];
  for (let i = 0; i < requests.length; i++) {
    const wait = arrivals[i] - now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const q = requests[i];
    const client = i % o.concurrency;
    const body = requestBody(q, o);
    if (o.onSend) o.onSend(i);
    const late = Math.max(0, now() - arrivals[i]);
    const fe = o.frontend ? o.frontend(i, client) : 0;
    pending.push(sendThrough(o, agents[client], q, body,
      { 'x-kvbench-prefix': String(q.prefixId),
        'x-kvbench-client': o.clientIds ? o.clientIds[client] : String(client) }, fe).then((rec) => {
      if (rec.ttftMs !== null) rec.ttftMs += late;
      if (rec.totalMs !== null) rec.totalMs += late;
      rec.sentMs = arrivals[i];
      rec.prefixId = q.prefixId;
      rec.frontend = fe;
      rec.expectedPromptTokens = q.ids.length;
      records[i] = rec;
    }));
  }
  await Promise.all(pending);
  const wallMs = now();
  for (const a of agents) a.destroy();
  return { records, wallMs, t0 };
}

module.exports = { runLoad, runOpenLoop, sendOne };
