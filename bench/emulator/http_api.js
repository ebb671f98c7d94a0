'use strict';
// The OpenAI-compatible HTTP surface of one engine, shaped like vLLM's:
// POST /v1/completions, POST /v1/chat/completions (stream or not),
// GET /v1/models, GET /metrics, GET /health, POST /reset_prefix_cache.
// Every response carries header x-engine-id and (JSON) field engine_id.

const http = require('node:http');
const { renderMetrics } = require('./metrics');

const MAX_BODY_BYTES = 32 * 1024 * 1024;
const DEFAULT_MAX_TOKENS = 16;

function sendJson(engine, res, status, obj) {
  if (res.headersSent) return;
  const body = JSON.stringify(obj);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-engine-id': engine.name,
  });
  res.end(body);
}

function sendError(engine, res, status, message, type) {
  sendJson(engine, res, status, {
    object: 'error',
    message,
    type: type || (status === 404 ? 'NotFoundError' : 'BadRequestError'),
    param: null,
    code: status,
    engine_id: engine.name,
  });
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c) => {
      if (tooLarge) return;           // discard the rest; the socket closes after the 413
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        tooLarge = true;
        chunks.length = 0;
        const e = new Error('request body larger than ' + MAX_BODY_BYTES + ' bytes');
        e.status = 413;
        e.closeConnection = true;
        reject(e);
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function bad(msg) {
  const e = new Error(msg);
  e.status = 400;
  return e;
}

function isTokenArray(a) {
  return Array.isArray(a) && a.length > 0 && a.every((x) => Number.isInteger(x));
}

const MAX_N = 64;
const MAX_PROMPTS = 1024;

// Common sampling fields: max_tokens (or max_completion_tokens), n, stream.
function parseCommon(body, chat) {
  let maxTokens = body.max_tokens;
  if (chat && body.max_completion_tokens !== undefined && body.max_completion_tokens !== null) {
    maxTokens = body.max_completion_tokens;
  }
  if (maxTokens === undefined || maxTokens === null) maxTokens = DEFAULT_MAX_TOKENS;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw bad('max_tokens must be an integer >= 1');
  }
  let n = body.n;
  if (n === undefined || n === null) n = 1;
  if (!Number.isInteger(n) || n < 1 || n > MAX_N) throw bad(`n must be an integer in [1, ${MAX_N}]`);
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    throw bad('stream must be a boolean');
  }
  const so = body.stream_options;
  if (so !== undefined && so !== null && (typeof so !== 'object' || Array.isArray(so))) {
    throw bad('stream_options must be an object');
  }
  return {
    maxTokens,
    n,
    stream: body.stream === true,
    includeUsage: !!(so && so.include_usage),
  };
}

// The extra keys a request's blocks are hashed with (kv_cache.js
// blockExtraKeys), or null: a LoRA adapter named by `model` (one of the
// engine's --lora-modules; any other name is served by the base model),
// `cache_salt` (vLLM: a non-empty string) and images (mm, from the chat).
function requestKeys(engine, body, mm) {
  let salt = null;
  if (body.cache_salt !== undefined && body.cache_salt !== null) {
    if (typeof body.cache_salt !== 'string' || body.cache_salt === '') {
      throw bad("Parameter 'cache_salt' must be a non-empty string if provided.");
    }
    salt = body.cache_salt;
  }
  const loras = engine.o.loraModules || [];
  const k = typeof body.model === 'string' ? loras.indexOf(body.model) : -1;
  const lora = k >= 0 ? { name: loras[k], id: k + 1 } : null;
  if (salt === null && lora === null && (!mm || mm.length === 0)) return null;
  return { lora, salt, mm: mm || [] };
}

// Completions prompt -> list of token id arrays: a string (encoded with
// special tokens), a token id array, or a non-empty list of either.
async function completionPrompts(engine, prompt) {
  let list;
  if (typeof prompt === 'string' || isTokenArray(prompt)) {
    list = [prompt];
  } else if (Array.isArray(prompt) && prompt.length > 0 &&
             (prompt.every((p) => typeof p === 'string') || prompt.every(isTokenArray))) {
    list = prompt;
  } else {
    throw bad('prompt must be a string, an array of token ids, or a non-empty list of either');
  }
  if (list.length > MAX_PROMPTS) throw bad(`at most ${MAX_PROMPTS} prompts per request`);
  const vocab = engine.tokenizer.vocabSize;
  const out = [];
  for (const p of list) {
    let ids;
    if (typeof p === 'string') {
      if (p.length === 0) throw bad('prompt must not be empty');
      ids = await engine.tokenizer.encode(p, true);
    } else {
      ids = p;
    }
    for (const t of ids) {
      if (t < 0 || t >= vocab) throw bad(`token id ${t} out of vocabulary range [0, ${vocab})`);
    }
    if (ids.length === 0) throw bad('prompt has no tokens');
    out.push(ids);
  }
  return out;
}

function usageOf(promptLen, completion, cached) {
  return {
    prompt_tokens: promptLen,
    total_tokens: promptLen + completion,
    completion_tokens: completion,
    prompt_tokens_details: { cached_tokens: cached },
  };
}

async function handleGenerate(engine, req, res, chat) {
  let body;
  try {
    const raw = await readBody(req);
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch (e) {
      throw bad('request body is not valid JSON: ' + e.message);
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw bad('request body must be a JSON object');
  } catch (err) {
    if (err.closeConnection) {
      res.setHeader('connection', 'close');
      res.on('finish', () => req.socket.destroy());
    }
    return sendError(engine, res, err.status || 400, err.message);
  }

  let common, prompts, keys;
  try {
    common = parseCommon(body, chat);
    let mm = null;
    if (chat) {
      const enc = await engine.tokenizer.encodeChatWithImages(body, engine.o.mmTokens || 0);
      prompts = [enc.ids];
      mm = enc.mm;
    } else {
      if (body.prompt === undefined) throw bad('prompt is required');
      prompts = await completionPrompts(engine, body.prompt);
    }
    for (const ids of prompts) {
      const why = engine.refusal(ids.length, common.maxTokens);
      if (why) throw bad(why);
    }
    keys = requestKeys(engine, body, mm);
  } catch (err) {
    return sendError(engine, res, err.status || 400, err.message);
  }

  const id = engine.newRequestId(chat ? 'chatcmpl' : 'cmpl');
  const created = Math.floor(Date.now() / 1000);
  const model = engine.o.model;
  const object = chat ? 'chat.completion' : 'text_completion';
  const chunkObject = chat ? 'chat.completion.chunk' : 'text_completion';
  const writeChunk = (obj) => { res.write('data: ' + JSON.stringify(obj) + '\n\n'); };

  // one choice per (prompt, sample), index = prompt * n + sample, as vLLM
  const choices = [];
  prompts.forEach((ids, p) => {
    for (let k = 0; k < common.n; k++) {
      choices.push({ index: p * common.n + k, prompt: p, sample: k, texts: [], finish: 'length', done: false, request: null });
    }
  });
  let remaining = choices.length;
  let aborted = false;

  const usage = () => {
    let promptTokens = 0;
    let completion = 0;
    let cached = 0;
    for (const c of choices) {
      completion += c.texts.length;
      if (c.sample === 0) {
        promptTokens += prompts[c.prompt].length;
        cached += Math.max(c.request.numCachedTokens, 0);
      }
    }
    const u = usageOf(promptTokens, completion, cached);
    // --trace: how the first prompt's request went in the engine, in model
    // ms (kvbench's KVBENCH_TRACE lines carry it), for looking into a policy
    if (engine.o.trace && choices.length > 0 && choices[0].request) {
      const r = choices[0].request;
      u.emulator_trace = { queue_ms: r.scheduledMs - r.submitMs,
        prefill_ms: r.firstTokenMs - r.scheduledMs, preemptions: r.preemptions,
        // the engine when it came: KV blocks in use, requests running, waiting
        at_submit: r.atSubmit };
    }
    return u;
  };

  const finishAll = () => {
    if (common.stream) {
      if (common.includeUsage) {
        writeChunk({ id, object: chunkObject, created, model, choices: [], usage: usage(),
          engine_id: engine.name });
      }
      res.end('data: [DONE]\n\n');
      return;
    }
    const out = choices.map((c) => {
      const text = c.texts.join('');
      return chat
        ? { index: c.index, message: { role: 'assistant', content: text, reasoning_content: null, tool_calls: [] },
          logprobs: null, finish_reason: c.finish, stop_reason: null }
        : { index: c.index, text, logprobs: null, finish_reason: c.finish, stop_reason: null,
          prompt_logprobs: null };
    });
    sendJson(engine, res, 200, { id, object, created, model, choices: out, usage: usage(),
      engine_id: engine.name });
  };

  const handlersFor = (c) => ({
    onToken: (text, index, last) => {
      c.texts.push(text);
      // 'length' or 'stop' (scheduler.js), as vLLM's finish_reason
      const finish = last || null;
      if (finish) c.finish = finish;
      if (!common.stream || res.destroyed) return;
      if (chat) {
        if (index === 0) {
          writeChunk({ id, object: chunkObject, created, model,
            choices: [{ index: c.index, delta: { role: 'assistant', content: '' }, logprobs: null,
              finish_reason: null }],
            engine_id: engine.name });
        }
        writeChunk({ id, object: chunkObject, created, model,
          choices: [{ index: c.index, delta: { content: text }, logprobs: null, finish_reason: finish }],
          engine_id: engine.name });
      } else {
        writeChunk({ id, object: chunkObject, created, model,
          choices: [{ index: c.index, text, logprobs: null, finish_reason: finish, stop_reason: null }],
          engine_id: engine.name });
      }
    },
    onFinish: (reason) => {
      c.done = true;
      remaining--;
      if (reason === 'abort') aborted = true;
      if (remaining === 0 && !aborted && !res.destroyed) finishAll();
    },
  });

  for (const c of choices) c.request = engine.submit(prompts[c.prompt], common.maxTokens, handlersFor(c), keys);
  res.on('close', () => {
    for (const c of choices) if (!c.done) engine.abort(c.request);
  });
  if (common.stream) {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-engine-id': engine.name,
    });
    res.flushHeaders();
  }
}

function handleHttp(engine, req, res) {
  const url = (req.url || '/').split('?')[0];
  const m = req.method;
  const wrap = (p) => p.catch((err) => {
    if (!res.headersSent) sendError(engine, res, 500, 'internal error: ' + err.message, 'InternalServerError');
    else res.destroy();
  });
  if (m === 'POST' && url === '/v1/completions') return wrap(handleGenerate(engine, req, res, false));
  if (m === 'POST' && url === '/v1/chat/completions') return wrap(handleGenerate(engine, req, res, true));
  if (m === 'GET' && url === '/v1/models') {
    return sendJson(engine, res, 200, {
      object: 'list',
      data: [{ id: engine.o.model, object: 'model', created: engine.created, owned_by: 'vllm',
        root: engine.o.model, parent: null, max_model_len: engine.cache.numBlocks * engine.cache.blockSize }],
      engine_id: engine.name,
    });
  }
  if (m === 'GET' && url === '/metrics') {
    const text = renderMetrics(engine);
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8',
      'x-engine-id': engine.name });
    return res.end(text);
  }
  if (m === 'GET' && (url === '/health' || url === '/ping')) {
    res.writeHead(200, { 'x-engine-id': engine.name, 'content-length': 0 });
    return res.end();
  }
  if (m === 'POST' && url === '/reset_prefix_cache') {
    const ok = engine.resetPrefixCache();
    return sendJson(engine, res, ok ? 200 : 409, { reset: ok, engine_id: engine.name });
  }
  if (m === 'POST' && url === '/_kvemu/gap') {
    // the instrument's own (not vLLM's): the stdin command "gap I N" for
    // tests that cannot write to its stdin
    return wrap(readBody(req).then((raw) => {
      let n = 1;
      try { n = JSON.parse(raw.toString('utf8') || '{}').batches || 1; } catch (e) { /* 1 */ }
      if (!Number.isInteger(n) || n < 1 || n > 1000000) throw bad('batches must be an integer in [1, 1000000]');
      const ok = engine.loseBatches(n);
      sendJson(engine, res, ok ? 200 : 409, { lost: ok ? n : 0, engine_id: engine.name });
    }).catch((err) => sendError(engine, res, err.status || 400, err.message)));
  }
  req.resume();
  return sendError(engine, res, 404, `no route for ${m} ${url}`);
}

// The HTTP server of an engine or of a data-parallel front (dp_front.js):
// listens on owner.o.host:owner.o.port as owner.server, and keeps its
// connections in owner.sockets so that a crash (goDown) or a stop cuts them.
async function listenHttp(owner, handle) {
  owner.server = http.createServer({ keepAliveTimeout: 65000 }, handle);
  owner.server.on('connection', (s) => {
    owner.sockets.add(s);
    s.on('close', () => owner.sockets.delete(s));
  });
  await new Promise((resolve, reject) => {
    owner.server.once('error', reject);
    owner.server.listen(owner.o.port, owner.o.host, () => {
      owner.server.removeListener('error', reject);
      resolve();
    });
  });
}

// Closes owner.server and cuts its connections; resolves once closed.
function closeHttp(owner) {
  const closed = new Promise((resolve) => owner.server.close(() => resolve()));
  for (const s of owner.sockets) s.destroy();
  return closed;
}

module.exports = { handleHttp, DEFAULT_MAX_TOKENS, listenHttp, closeHttp };
