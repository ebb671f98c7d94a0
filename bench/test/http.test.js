'use strict';
// The emulator's HTTP surface, through a real child process.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startEmulator, request, postJson, sseData } = require('./helpers');

const BS = 16;
let emu;

test.before(async () => {
  emu = await startEmulator(['--time-scale', '50', '--capacity-blocks', '400'], 2);
});

test.after(async () => {
  const code = await emu.stop();
  assert.equal(code, 0, 'clean exit on SIGTERM');
});

function tokens(start, n) {
  return Array.from({ length: n }, (_, i) => 1000 + ((start + i * 7919) % 50000));
}

test('the same long prompt twice: cached_tokens 0, then floor((len-1)/16)*16', async () => {
  const prompt = tokens(1, 2371);
  const a = await postJson(emu.basePort, '/v1/completions', { prompt, max_tokens: 4 });
  assert.equal(a.status, 200);
  assert.equal(a.json.usage.prompt_tokens, 2371);
  assert.equal(a.json.usage.completion_tokens, 4);
  assert.equal(a.json.usage.total_tokens, 2375);
  assert.equal(a.json.usage.prompt_tokens_details.cached_tokens, 0);
  const b = await postJson(emu.basePort, '/v1/completions', { prompt, max_tokens: 4 });
  assert.equal(b.json.usage.prompt_tokens_details.cached_tokens, Math.floor(2370 / BS) * BS);
  // the other engine has its own cache
  const c = await postJson(emu.basePort + 1, '/v1/completions', { prompt, max_tokens: 4 });
  assert.equal(c.json.usage.prompt_tokens_details.cached_tokens, 0);
});

test('text prompts: cached_tokens from the tokenized length', async () => {
  const text = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');
  const a = await postJson(emu.basePort, '/v1/completions', { prompt: text, max_tokens: 1 });
  const n = a.json.usage.prompt_tokens;
  assert.ok(n > 300);
  const b = await postJson(emu.basePort, '/v1/completions', { prompt: [text], max_tokens: 1 });
  assert.equal(b.json.usage.prompt_tokens, n);
  assert.equal(b.json.usage.prompt_tokens_details.cached_tokens, Math.floor((n - 1) / BS) * BS);
});

test('engine identity in header and body', async () => {
  for (const i of [0, 1]) {
    const r = await postJson(emu.basePort + i, '/v1/completions', { prompt: 'hi', max_tokens: 2 });
    assert.equal(r.headers['x-engine-id'], `engine-${i}`);
    assert.equal(r.json.engine_id, `engine-${i}`);
    assert.equal(r.json.object, 'text_completion');
    assert.equal(r.json.choices[0].finish_reason, 'length');
    assert.equal(typeof r.json.choices[0].text, 'string');
  }
});

test('several prompts and n > 1: one choice per (prompt, sample)', async () => {
  const p0 = tokens(300, 40);
  const p1 = tokens(400, 70);
  const r = await postJson(emu.basePort, '/v1/completions', { prompt: [p0, p1], n: 2, max_tokens: 3 });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.choices.map((c) => c.index), [0, 1, 2, 3]);
  assert.equal(r.json.usage.prompt_tokens, 110);
  assert.equal(r.json.usage.completion_tokens, 12);
  // the same again: both prompts cached, counted once each
  const again = await postJson(emu.basePort, '/v1/completions', { prompt: [p0, p1], max_tokens: 1 });
  assert.equal(again.json.usage.prompt_tokens_details.cached_tokens, 32 + 64);
  const s = await postJson(emu.basePort, '/v1/completions', {
    prompt: ['one two', 'three four'], max_tokens: 2, stream: true, stream_options: { include_usage: true } });
  const chunks = sseData(s.body).slice(0, -1).map((d) => JSON.parse(d));
  const perIndex = [0, 0];
  for (const c of chunks) if (c.choices.length) perIndex[c.choices[0].index]++;
  assert.deepEqual(perIndex, [2, 2]);
  assert.equal(chunks[chunks.length - 1].usage.completion_tokens, 4);
});

test('max_tokens defaults to 16', async () => {
  const r = await postJson(emu.basePort, '/v1/completions', { prompt: 'hello' });
  assert.equal(r.json.usage.completion_tokens, 16);
});

test('completions streaming: SSE chunks, usage chunk, [DONE]', async () => {
  const r = await postJson(emu.basePort, '/v1/completions', {
    prompt: tokens(99, 100), max_tokens: 5, stream: true, stream_options: { include_usage: true } });
  assert.equal(r.status, 200);
  assert.match(r.headers['content-type'], /^text\/event-stream/);
  assert.equal(r.headers['x-engine-id'], 'engine-0');
  const data = sseData(r.body);
  assert.equal(data[data.length - 1], '[DONE]');
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
  assert.equal(chunks.length, 6, '5 token chunks + 1 usage chunk');
  for (const c of chunks) assert.equal(c.engine_id, 'engine-0');
  for (const c of chunks.slice(0, 5)) {
    assert.equal(c.choices.length, 1);
    assert.equal(typeof c.choices[0].text, 'string');
  }
  assert.equal(chunks[3].choices[0].finish_reason, null);
  assert.equal(chunks[4].choices[0].finish_reason, 'length');
  assert.deepEqual(chunks[5].choices, []);
  assert.equal(chunks[5].usage.completion_tokens, 5);
  assert.equal(chunks[5].usage.prompt_tokens, 100);
  assert.equal(chunks[5].usage.prompt_tokens_details.cached_tokens, 0);
});

test('streaming without include_usage has no usage chunk', async () => {
  const r = await postJson(emu.basePort, '/v1/completions', { prompt: 'x y z', max_tokens: 2, stream: true });
  const data = sseData(r.body);
  assert.deepEqual(data.length, 3);
  assert.equal(data[2], '[DONE]');
  for (const d of data.slice(0, 2)) assert.equal(JSON.parse(d).usage, undefined);
});

test('chat completions, stream and not', async () => {
  const messages = [{ role: 'user', content: 'Hello! What is 2+2?' }];
  const r = await postJson(emu.basePort + 1, '/v1/chat/completions', { messages, max_tokens: 3 });
  assert.equal(r.status, 200);
  assert.equal(r.json.object, 'chat.completion');
  assert.equal(r.json.engine_id, 'engine-1');
  assert.equal(r.json.choices[0].message.role, 'assistant');
  assert.equal(r.json.usage.completion_tokens, 3);
  // "<|im_start|>user\nHello! What is 2+2?<|im_end|>\n<|im_start|>assistant\n"
  const s = await postJson(emu.basePort + 1, '/v1/chat/completions', {
    messages, max_completion_tokens: 2, stream: true, stream_options: { include_usage: true } });
  const data = sseData(s.body);
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
  assert.equal(chunks[0].object, 'chat.completion.chunk');
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  const content = chunks.filter((c) => c.choices.length && c.choices[0].delta.content);
  assert.equal(content.length, 2);
  const usage = chunks[chunks.length - 1].usage;
  assert.equal(usage.prompt_tokens, r.json.usage.prompt_tokens);
  assert.ok(usage.prompt_tokens_details.cached_tokens >= 0);
});

test('the first stream chunk arrives at the first token, before the last', async () => {
  const slow = await startEmulator(['--time-scale', '1', '--base-us', '1000',
    '--prefill-us-per-token', '1', '--decode-us-per-seq', '60000']);
  try {
    const http = require('node:http');
    const times = await new Promise((resolve, reject) => {
      const t0 = Date.now();
      const stamps = [];
      const req = http.request({ host: '127.0.0.1', port: slow.basePort, method: 'POST',
        path: '/v1/completions', headers: { 'content-type': 'application/json' } }, (res) => {
        res.on('data', (c) => { if (c.toString().includes('data: {')) stamps.push(Date.now() - t0); });
        res.on('end', () => resolve(stamps));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ prompt: 'one two three', max_tokens: 3, stream: true }));
    });
    // prefill step ~1 ms; two decode steps of ~61 ms each follow
    assert.equal(times.length >= 2, true);
    assert.ok(times[times.length - 1] - times[0] >= 100,
      `first chunk at ${times[0]} ms, last at ${times[times.length - 1]} ms`);
  } finally {
    await slow.stop();
  }
});

test('bad requests get 400 with an OpenAI-style error', async () => {
  const cases = [
    '{not json',
    '[1,2]',
    { max_tokens: 4 },
    { prompt: '' },
    { prompt: 'hi', max_tokens: 0 },
    { prompt: 'hi', max_tokens: 1.5 },
    { prompt: [1, 2, -3] },
    { prompt: [1, 2, 1e9] },
    { prompt: { a: 1 } },
    { prompt: 'hi', n: 0 },
    { prompt: 'hi', n: 1000 },
    { prompt: ['a', [1, 2]] },
    { prompt: [] },
    { prompt: tokens(0, 400 * 16) },            // larger than the whole cache
  ];
  for (const body of cases) {
    const r = await postJson(emu.basePort, '/v1/completions', body);
    assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
    assert.equal(r.json.object, 'error');
    assert.equal(typeof r.json.message, 'string');
    assert.equal(r.headers['x-engine-id'], 'engine-0');
  }
  const c = await postJson(emu.basePort, '/v1/chat/completions', { messages: 'hi' });
  assert.equal(c.status, 400);
  const nf = await request(emu.basePort, 'GET', '/nope');
  assert.equal(nf.status, 404);
  // still serving
  const ok = await postJson(emu.basePort, '/v1/completions', { prompt: 'hi', max_tokens: 1 });
  assert.equal(ok.status, 200);
});

test('a body over 32 MiB gets 413 and the engine keeps serving', async () => {
  const big = '{"prompt":"' + 'a'.repeat(33 * 1024 * 1024) + '"}';
  const r = await request(emu.basePort, 'POST', '/v1/completions', big);
  assert.equal(r.status, 413);
  assert.equal(JSON.parse(r.body).object, 'error');
  const ok = await postJson(emu.basePort, '/v1/completions', { prompt: 'hi', max_tokens: 1 });
  assert.equal(ok.status, 200);
});

test('/v1/models', async () => {
  const r = await request(emu.basePort, 'GET', '/v1/models');
  const j = JSON.parse(r.body);
  assert.equal(j.object, 'list');
  assert.equal(j.data[0].id, 'Qwen/Qwen3-0.6B');
});

function metricValue(text, name) {
  const line = text.split('\n').find((l) => l.startsWith(name + '{') || l.startsWith(name + ' '));
  assert.ok(line, 'metric ' + name);
  return Number(line.split(' ').pop());
}

test('/metrics: vLLM names; prefix cache counters in tokens', async () => {
  const e = await startEmulator(['--time-scale', '50']);
  try {
    const prompt = tokens(5, 200);
    await postJson(e.basePort, '/v1/completions', { prompt, max_tokens: 2 });
    await postJson(e.basePort, '/v1/completions', { prompt, max_tokens: 2 });
    const m = (await request(e.basePort, 'GET', '/metrics')).body;
    for (const name of ['vllm:num_requests_running', 'vllm:num_requests_waiting',
      'vllm:gpu_cache_usage_perc', 'vllm:kv_cache_usage_perc']) {
      assert.match(m, new RegExp(`^# TYPE ${name} gauge$`, 'm'));
    }
    assert.match(m, /^# TYPE vllm:prefix_cache_queries counter$/m);
    assert.match(m, /^# TYPE vllm:prefix_cache_hits counter$/m);
    assert.equal(metricValue(m, 'vllm:prefix_cache_queries_total'), 400);
    assert.equal(metricValue(m, 'vllm:prefix_cache_hits_total'), Math.floor(199 / BS) * BS);
    assert.equal(metricValue(m, 'kvemu_requests_total'), 2);
    assert.equal(metricValue(m, 'vllm:num_requests_running'), 0);
    assert.equal(metricValue(m, 'vllm:kv_cache_usage_perc'), 0, 'finished requests hold no blocks');
  } finally {
    await e.stop();
  }
});

test('/metrics: the inter-token latency histogram counts each token after the first, in model time', async () => {
  // one step of one decoding request: 1 ms CPU + 4 ms GPU at speed 1
  const args = ['--time-scale', '1', '--base-us', '1000', '--gpu-step-us', '4000', '--decode-us-per-seq', '0'];
  const fast = await startEmulator(args);
  const slow = await startEmulator(args.concat(['--gpus', '0.5']));
  try {
    const itl = async (e) => {
      await postJson(e.basePort, '/v1/completions', { prompt: tokens(3, 40), max_tokens: 11 });
      const m = (await request(e.basePort, 'GET', '/metrics')).body;
      assert.match(m, /^# TYPE vllm:inter_token_latency_seconds histogram$/m);
      const count = metricValue(m, 'vllm:inter_token_latency_seconds_count');
      assert.equal(count, 10, 'eleven tokens: ten gaps');
      const inf = m.split('\n').find((l) => l.startsWith('vllm:inter_token_latency_seconds_bucket{') &&
        l.includes('le="+Inf"'));
      assert.equal(Number(inf.split(' ').pop()), count);
      return metricValue(m, 'vllm:inter_token_latency_seconds_sum') / count;
    };
    const a = await itl(fast);
    const b = await itl(slow);
    assert.ok(a > 0.0045 && a < 0.010, `a step of 5 ms (as the clock reads it), late by at most a little: ${a}`);
    assert.ok(b > 1.5 * a, `a node at half speed: about twice (${a} ${b})`);
  } finally {
    await fast.stop();
    await slow.stop();
  }
});

test('/metrics: the prefill histograms count each finished request: time from scheduled to first token, tokens computed', async () => {
  // a step: 1 ms CPU + 4 ms GPU + 10 µs a prefill token, at speed 1; the
  // budget of 256 tokens chunks a 600-token prompt into 3 steps
  const e = await startEmulator(['--time-scale', '1', '--base-us', '1000', '--gpu-step-us', '4000',
    '--decode-us-per-seq', '0', '--prefill-us-per-token', '10', '--max-batched-tokens', '256']);
  try {
    const prompt = tokens(11, 600);
    await postJson(e.basePort, '/v1/completions', { prompt, max_tokens: 3 });
    let m = (await request(e.basePort, 'GET', '/metrics')).body;
    assert.match(m, /^# TYPE vllm:request_prefill_time_seconds histogram$/m);
    assert.match(m, /^# TYPE vllm:request_prefill_kv_computed_tokens histogram$/m);
    assert.equal(metricValue(m, 'vllm:request_prefill_time_seconds_count'), 1);
    assert.equal(metricValue(m, 'vllm:request_prefill_kv_computed_tokens_sum'), 600);
    const first = metricValue(m, 'vllm:request_prefill_time_seconds_sum');
    // 3 steps of 5 ms and 6 ms of prefill: 21 ms, a little late at most
    assert.ok(first > 0.020 && first < 0.030, `three chunked steps: ${first}`);
    // the same prompt again: all but its last block cached, one step
    await postJson(e.basePort, '/v1/completions', { prompt, max_tokens: 3 });
    m = (await request(e.basePort, 'GET', '/metrics')).body;
    assert.equal(metricValue(m, 'vllm:request_prefill_time_seconds_count'), 2);
    assert.equal(metricValue(m, 'vllm:request_prefill_kv_computed_tokens_sum'), 600 + 600 - Math.floor(599 / BS) * BS);
    const second = metricValue(m, 'vllm:request_prefill_time_seconds_sum') - first;
    assert.ok(second > 0.005 && second < first / 2, `a hit is one step: ${second} vs ${first}`);
    const inf = m.split('\n').find((l) => l.startsWith('vllm:request_prefill_kv_computed_tokens_bucket{') &&
      l.includes('le="+Inf"'));
    assert.equal(Number(inf.split(' ').pop()), 2);
  } finally {
    await e.stop();
  }
});

test('/metrics with --flavour sglang: SGLang\'s load gauges and labels, no vLLM ones', async () => {
  const e = await startEmulator(['--time-scale', '50', '--flavour', 'sglang']);
  try {
    const prompt = tokens(9, 200);
    await postJson(e.basePort, '/v1/completions', { prompt, max_tokens: 2 });
    const m = (await request(e.basePort, 'GET', '/metrics')).body;
    for (const name of ['sglang:num_running_reqs', 'sglang:num_queue_reqs', 'sglang:token_usage']) {
      assert.match(m, new RegExp(`^# TYPE ${name} gauge$`, 'm'));
      assert.match(m, new RegExp(`^${name}\\{engine_type="unified",model_name="[^"]*",pp_rank="0",tp_rank="0"\\} `, 'm'));
    }
    assert.doesNotMatch(m, /^vllm:num_requests_running/m);
    assert.doesNotMatch(m, /^vllm:kv_cache_usage_perc/m);
    assert.equal(metricValue(m, 'sglang:num_running_reqs'), 0);
    assert.equal(metricValue(m, 'sglang:token_usage'), 0, 'finished requests hold no blocks');
    assert.equal(metricValue(m, 'kvemu_requests_total'), 1);
  } finally {
    await e.stop();
  }
});

test('/metrics while busy: running and waiting count the requests in flight, in both flavours', async () => {
  for (const flavour of ['vllm', 'sglang']) {
    // a slow engine that runs at most 2 at a time
    const e = await startEmulator(['--time-scale', '1', '--flavour', flavour, '--max-num-seqs', '2']);
    try {
      const inflight = Array.from({ length: 5 }, (_, k) =>
        postJson(e.basePort, '/v1/completions', { prompt: tokens(100 * k, 64), max_tokens: 200 })
          .catch(() => null));       // cut short when the engine stops
      await new Promise((r) => setTimeout(r, 300));
      const m = (await request(e.basePort, 'GET', '/metrics')).body;
      const running = flavour === 'sglang' ? 'sglang:num_running_reqs' : 'vllm:num_requests_running';
      const waiting = flavour === 'sglang' ? 'sglang:num_queue_reqs' : 'vllm:num_requests_waiting';
      assert.equal(metricValue(m, running), 2, flavour + ' running');
      assert.equal(metricValue(m, waiting), 3, flavour + ' waiting');
      const usage = flavour === 'sglang' ? 'sglang:token_usage' : 'vllm:kv_cache_usage_perc';
      assert.ok(metricValue(m, usage) > 0, flavour + ' usage while running');
      await e.stop();
      await Promise.all(inflight);
    } catch (err) {
      await e.stop();
      throw err;
    }
  }
});

test('POST /reset_prefix_cache drops cached prefixes', async () => {
  const prompt = tokens(77, 64);
  await postJson(emu.basePort + 1, '/v1/completions', { prompt, max_tokens: 1 });
  const hit = await postJson(emu.basePort + 1, '/v1/completions', { prompt, max_tokens: 1 });
  assert.equal(hit.json.usage.prompt_tokens_details.cached_tokens, 48);
  const r = await request(emu.basePort + 1, 'POST', '/reset_prefix_cache');
  assert.equal(r.status, 200);
  const miss = await postJson(emu.basePort + 1, '/v1/completions', { prompt, max_tokens: 1 });
  assert.equal(miss.json.usage.prompt_tokens_details.cached_tokens, 0);
});

test('concurrent requests on a small cache all complete', async () => {
  const e = await startEmulator(['--time-scale', '100', '--capacity-blocks', '20']);
  try {
    // each needs ceil((150 + 4) / 16) = 10 blocks: two at a time fit
    const rs = await Promise.all(Array.from({ length: 8 }, (_, k) =>
      postJson(e.basePort, '/v1/completions', { prompt: tokens(k * 1000, 150), max_tokens: 4 })));
    for (const r of rs) assert.equal(r.status, 200);
    const m = (await request(e.basePort, 'GET', '/metrics')).body;
    assert.equal(metricValue(m, 'kvemu_free_blocks'), 20);
  } finally {
    await e.stop();
  }
});


test('--trace: the usage says how the request went in the engine; without it, nothing', async () => {
  const traced = await startEmulator(['--time-scale', '50', '--capacity-blocks', '400', '--trace'], 1);
  try {
    const prompt = tokens(5, 600);
    const a = await postJson(traced.basePort, '/v1/completions', { prompt, max_tokens: 3 });
    assert.equal(a.status, 200);
    const t = a.json.usage.emulator_trace;
    assert.ok(t, 'a trace with --trace');
    assert.ok(t.queue_ms >= 0, `queue_ms ${t.queue_ms}`);
    // 600 tokens of prefill take model time before the first token
    assert.ok(t.prefill_ms > 0, `prefill_ms ${t.prefill_ms}`);
    assert.equal(t.preemptions, 0);
    // the engine when it came: idle, its cache empty of running requests
    assert.deepEqual(t.at_submit, { used: 0, running: 0, waiting: 0 });
    // a second while the first runs (3,000 steps: a few hundred ms even at
    // time scale 50, against the 20 ms the second waits): the engine says
    // what it held
    const prompt2 = tokens(7, 600);
    const [c, d] = await Promise.all([
      postJson(traced.basePort, '/v1/completions', { prompt: prompt2, max_tokens: 3000 }),
      new Promise((resolve) => setTimeout(resolve, 20)).then(() =>
        postJson(traced.basePort, '/v1/completions', { prompt: tokens(9, 300), max_tokens: 2 })),
    ]);
    assert.equal(c.status, 200);
    const s = d.json.usage.emulator_trace.at_submit;
    assert.equal(s.running + s.waiting, 1, `the first request in the engine: ${JSON.stringify(s)}`);
    assert.ok(s.running === 0 || s.used > 0, 'a running request holds blocks');
  } finally {
    assert.equal(await traced.stop(), 0);
  }
  const b = await postJson(emu.basePort, '/v1/completions', { prompt: tokens(6, 40), max_tokens: 2 });
  assert.equal(b.json.usage.emulator_trace, undefined, 'no trace without --trace');
});

test('--eos-tokens: the model ends an answer on its own (finish_reason stop), the same length for the same prompt; max_tokens still cuts it', async () => {
  const eos = await startEmulator(['--time-scale', '50', '--capacity-blocks', '400', '--eos-tokens', '2-9'], 1);
  try {
    const lens = [];
    for (let k = 0; k < 6; k++) {
      const prompt = tokens(100 + k * 31, 50);
      const a = await postJson(eos.basePort, '/v1/completions', { prompt, max_tokens: 100 });
      assert.equal(a.status, 200);
      const n = a.json.usage.completion_tokens;
      assert.ok(n >= 2 && n <= 9, `completion_tokens ${n}`);
      assert.equal(a.json.choices[0].finish_reason, 'stop');
      const b = await postJson(eos.basePort, '/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }],
        max_tokens: 100, stream: true, stream_options: { include_usage: true } });
      assert.equal(b.status, 200);
      const chunks = sseData(b.body).slice(0, -1).map((d) => JSON.parse(d));
      const finishes = chunks.filter((c) => c.choices && c.choices[0] && c.choices[0].finish_reason);
      assert.equal(finishes.length, 1);
      assert.equal(finishes[0].choices[0].finish_reason, 'stop');
      const again = await postJson(eos.basePort, '/v1/completions', { prompt, max_tokens: 100 });
      assert.equal(again.json.usage.completion_tokens, n);
      lens.push(n);
      const cut = await postJson(eos.basePort, '/v1/completions', { prompt, max_tokens: 1 });
      assert.equal(cut.json.usage.completion_tokens, 1);
      assert.equal(cut.json.choices[0].finish_reason, 'length');
    }
    assert.ok(new Set(lens).size > 1, `lengths ${lens}`);
  } finally {
    assert.equal(await eos.stop(), 0);
  }
});
