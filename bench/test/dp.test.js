'use strict';
// --dp-ranks: one HTTP server in front of R ranks, each with its own KV
// cache and its own event publisher (events-base-port + i x R + rank), the
// rank chosen by the X-data-parallel-rank header as vLLM's API server
// takes it.

const test = require('node:test');
const assert = require('node:assert/strict');
const zmq = require('zeromq');
const msgpack = require('@msgpack/msgpack');
const { startEmulator, postJson, request } = require('./helpers');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// every batch a SUB socket receives, decoded
async function subscribe(port) {
  const sock = new zmq.Subscriber({ linger: 0 });
  const ready = new Promise((resolve) => sock.events.on('handshake', () => resolve()));
  sock.connect(`tcp://127.0.0.1:${port}`);
  sock.subscribe();
  const batches = [];
  (async () => {
    try {
      for await (const frames of sock) batches.push(msgpack.decode(frames[2], { useBigInt64: true }));
    } catch (e) { /* closed */ }
  })();
  await Promise.race([ready, sleep(3000)]);
  await sleep(150);
  return { batches, close: () => sock.close() };
}

function body(start) {
  return { model: 'Qwen/Qwen3-0.6B', max_tokens: 2,
    prompt: Array.from({ length: 64 }, (_, i) => 1000 + start + i) };
}

const stored = (batches) => batches.flatMap((b) => b[1]).filter((e) => e[0] === 'BlockStored');

test('the header picks the rank: its cache, its events, its dp_rank', async () => {
  const emu = await startEmulator(['--dp-ranks', '2', '--kv-events', 'zmq', '--time-scale', '0.05'], 2);
  try {
    // engine 1's ranks publish on events-base-port + 2 and + 3
    const r0 = await subscribe(emu.eventsPort + 2);
    const r1 = await subscribe(emu.eventsPort + 3);
    const port = emu.basePort + 1;

    let r = await postJson(port, '/v1/completions', body(0), { 'X-data-parallel-rank': '1' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-engine-rank'], '1');
    r = await postJson(port, '/v1/completions', body(0), { 'x-data-parallel-rank': '1' });
    assert.equal(r.json.usage.prompt_tokens_details.cached_tokens, 48,
      'the same rank again: its cache holds the prompt');
    r = await postJson(port, '/v1/completions', body(0), { 'X-Data-Parallel-Rank': '0' });
    assert.equal(r.headers['x-engine-rank'], '0');
    assert.equal(r.json.usage.prompt_tokens_details.cached_tokens, 0,
      'the other rank: a cache of its own');

    await sleep(300);
    assert.ok(stored(r1.batches).length >= 1, 'rank 1 published its blocks');
    assert.ok(r1.batches.every((b) => b[2] === 1), 'rank 1\'s batches say dp_rank 1');
    assert.ok(r0.batches.every((b) => b[2] === 0), 'rank 0\'s batches say dp_rank 0');
    assert.equal(stored(r0.batches).length, 1, 'rank 0 stored once: its own request');
    r0.close();
    r1.close();
  } finally {
    await emu.stop();
  }
});

test('no header, or one that is not an integer: the least loaded rank; out of range: 400', async () => {
  const emu = await startEmulator(['--dp-ranks', '3', '--time-scale', '0.05'], 1);
  try {
    const seen = new Set();
    for (let i = 0; i < 6; i++) {
      const r = await postJson(emu.basePort, '/v1/completions', body(i * 100));
      assert.equal(r.status, 200);
      seen.add(r.headers['x-engine-rank']);
    }
    assert.equal(seen.size, 3, 'idle ranks take turns');
    let r = await postJson(emu.basePort, '/v1/completions', body(0), { 'X-data-parallel-rank': 'two' });
    assert.equal(r.status, 200, 'not an integer: ignored, as vLLM does');
    r = await postJson(emu.basePort, '/v1/completions', body(0), { 'X-data-parallel-rank': '3' });
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /data_parallel_rank 3 is out of range \[0, 3\)/);
    const m = await request(emu.basePort, 'GET', '/metrics');
    assert.match(m.body, /engine="engine-0-dp2"/, 'each rank\'s metrics');
  } finally {
    await emu.stop();
  }
});
