'use strict';
// An engine that goes away and comes back (stdin "down I MS"): what
// kvbench --engine-down uses to measure a worker stopping mid-run.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { startEmulator, postJson } = require('./helpers');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(cond, ms) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) return false;
    await sleep(20);
  }
  return true;
}

// a fresh connection each time: the engine's old sockets are cut
function connectError(port) {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'GET', path: '/health', agent: false },
      (res) => { res.resume(); resolve(null); });
    req.on('error', (e) => resolve(e.code));
    req.end();
  });
}

test('down: nothing listens, requests in flight are cut; up: an empty cache; the other engine keeps its own', async () => {
  const emu = await startEmulator(['--time-scale', '1', '--capacity-blocks', '400'], 2);
  try {
    const prompt = Array.from({ length: 600 }, (_, i) => 1000 + i);
    for (const port of [emu.basePort, emu.basePort + 1]) {
      await postJson(port, '/v1/completions', { prompt, max_tokens: 2 });
      const again = await postJson(port, '/v1/completions', { prompt, max_tokens: 2 });
      assert.equal(again.json.usage.prompt_tokens_details.cached_tokens, 592);
    }
    // a long request in flight on engine 0 when it goes
    const inflight = postJson(emu.basePort, '/v1/completions', { prompt, max_tokens: 200 })
      .then(() => 'finished', (e) => 'cut: ' + e.message);
    await sleep(100);
    emu.command('down 0 1500');
    assert.ok(await until(() => emu.stdout().includes('engine 0 down'), 2000), 'reported down');
    assert.match(await inflight, /^cut/);
    assert.equal(await connectError(emu.basePort), 'ECONNREFUSED');
    const other = await postJson(emu.basePort + 1, '/v1/completions', { prompt, max_tokens: 2 });
    assert.equal(other.json.usage.prompt_tokens_details.cached_tokens, 592);
    assert.ok(!emu.stdout().includes('engine 0 up'), 'not back before its time');
    assert.ok(await until(() => emu.stdout().includes('engine 0 up'), 6000), 'reported up');
    assert.equal(await connectError(emu.basePort), null);
    const back = await postJson(emu.basePort, '/v1/completions', { prompt, max_tokens: 2 });
    assert.equal(back.status, 200);
    assert.equal(back.json.usage.prompt_tokens_details.cached_tokens, 0, 'a restarted engine starts empty');
    // a second "down" while up works again; unknown commands are refused
    emu.command('down 9 10');
    emu.command('sideways 0');
    assert.ok(await until(() => /unknown command "sideways 0"/.test(emu.stderr()), 2000));
    assert.match(emu.stderr(), /unknown command "down 9 10"/);
  } finally {
    assert.equal(await emu.stop(), 0);
  }
});

test('the bench\'s Dynamo routes again when its engine is away, and leaves it out for a while', async () => {
  const { DynamoRouter } = require('../loadgen/dynamo');
  const { runLoad } = require('../loadgen/client');
  const emu = await startEmulator(['--time-scale', '1', '--capacity-blocks', '400', '--kv-events', 'zmq'], 2);
  const router = new DynamoRouter({ eventsPorts: [emu.eventsPort, emu.eventsPort + 1], blockSize: 16,
    hashSeed: '0', failTimeoutMs: 3000 });
  try {
    await router.start();
    const enginePorts = [emu.basePort, emu.basePort + 1];
    const ids = Array.from({ length: 600 }, (_, i) => 2000 + i);
    const q = { prefixId: 0, ids, text: '' };
    const o = { concurrency: 1, maxTokens: 2, promptForm: 'tokens', model: 'Qwen/Qwen3-0.6B', enginePorts,
      route: (x) => router.route(x) };
    // the prefix lands on one engine; its events make it that engine's
    const first = (await runLoad([q], o)).records[0];
    assert.ok(first.ok, first.error);
    const home = Number(/\d+$/.exec(first.engine)[0]);
    const other = 1 - home;
    assert.ok(await until(() => router.index.lookup(ids).overlaps[home] > 0, 2000), 'events seen');
    emu.command(`down ${home} 10000`);
    assert.ok(await until(() => emu.stdout().includes(`engine ${home} down`), 2000));
    const moved = (await runLoad([q, q], o)).records;
    assert.ok(moved[0].ok, moved[0].error);
    assert.equal(moved[0].engine, `engine-${other}`);
    assert.equal(moved[0].tries, 2, 'refused, then the other engine');
    assert.equal(router.index.lookup(ids).overlaps[home], 0, 'the away engine\'s blocks left the index');
    assert.equal(moved[1].tries, 1, 'left out while away: no second refusal');
    assert.equal(moved[1].engine, `engine-${other}`);
  } finally {
    await router.stop();
    assert.equal(await emu.stop(), 0);
  }
});
