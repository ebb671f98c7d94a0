'use strict';
// Open-loop load (kvbench --rate), steady-state figures (--skip) and the
// goodput read off a rate sweep (bench/sweep.js).

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { runOpenLoop } = require('../loadgen/client');
const { steadyState } = require('../loadgen/stats');
const { goodput, crossing, poolPoints } = require('../sweep');

// an engine stand-in: answers every completion after `ms`, one usage chunk
function slowServer(ms) {
  const arrivals = [];
  const server = http.createServer((req, res) => {
    arrivals.push(process.hrtime.bigint());
    req.resume();
    req.on('end', () => setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"usage": {"prompt_tokens": 3, "prompt_tokens_details": {"cached_tokens": 0}}}\n\n' +
        'data: [DONE]\n\n');
    }, ms));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, arrivals })));
}

test('open loop: arrivals do not wait for answers, and keep the Poisson rate', async () => {
  const { server, arrivals } = await slowServer(300);
  const requests = Array.from({ length: 120 }, (_, i) => ({ prefixId: i % 3, ids: [1, 2, 3], text: 'a b c' }));
  const t0 = Date.now();
  const { records } = await runOpenLoop(requests, { port: server.address().port, concurrency: 2, rate: 200,
    maxTokens: 1, promptForm: 'tokens', model: 'm', arrivalSeed: 3 });
  const wall = Date.now() - t0;
  server.close();
  assert.equal(records.filter((r) => r.ok).length, 120);
  // closed loop with 2 clients would need 120 / 2 * 300 ms = 18 s
  assert.ok(wall < 5000, `took ${wall} ms`);
  const gaps = [];
  for (let i = 1; i < arrivals.length; i++) gaps.push(Number(arrivals[i] - arrivals[i - 1]) / 1e6);
  const mean = gaps.reduce((a, x) => a + x, 0) / gaps.length;
  assert.ok(mean > 3 && mean < 8, `mean gap ${mean} ms, expected about 5`);
  // exponential gaps: many shorter than the mean, the spread near the mean
  assert.ok(gaps.filter((g) => g < mean).length > 0.5 * gaps.length);
  for (const r of records) assert.ok(r.ttftMs >= 290, `ttft ${r.ttftMs}`);
});

test('steady state: only the records after the skip, requests/s over their window', () => {
  const rec = (sentMs, totalMs, cached, ttft) => ({ ok: true, sentMs, totalMs, ttftMs: ttft,
    promptTokens: 100, cachedTokens: cached });
  const s = steadyState([rec(1000, 1000, 100, 50), rec(1500, 1500, 0, 400), rec(2000, 1000, 50, 60)]);
  assert.equal(s.requests, 3);
  assert.equal(s.request_hit_rate, 0.6667);
  assert.equal(s.cached_token_ratio, 0.5);
  assert.equal(s.ttft_p99_ms, 400);
  // from 1000 ms (first sent) to 3000 ms (last finished): 3 in 2 s
  assert.equal(s.requests_per_s, 1.5);
  assert.equal(steadyState([{ ok: false }]), null);
});

test('goodput: the highest rate below the first whose p99 broke the limit', () => {
  const pts = [{ rate: 4, ttft_p99_ms: 300 }, { rate: 8, ttft_p99_ms: 900 }, { rate: 10, ttft_p99_ms: 1400 },
    { rate: 12, ttft_p99_ms: 800 }];
  assert.equal(goodput(pts, 1000), 8);
  assert.equal(goodput(pts, 200), null);
  assert.equal(goodput(pts.slice(0, 2), 1000), 8);
});

test('crossing: where the p99 passes the limit, between the last rate that held and the first that broke', () => {
  const pts = [{ rate: 4, ttft_p99_ms: 300 }, { rate: 8, ttft_p99_ms: 900 }, { rate: 10, ttft_p99_ms: 1400 },
    { rate: 12, ttft_p99_ms: 800 }];
  assert.equal(crossing(pts, 1000), 8.4);
  assert.equal(crossing(pts, 200), null, 'none held');
  assert.equal(crossing(pts.slice(0, 2), 1000), null, 'none broke');
});

test('poolPoints: a point run in two sweeps is the median over all their runs', () => {
  const run = (p99, rps) => ({ steady: { ttft_p99_ms: p99, requests_per_s: rps }, emulator: { clock_ok: true } });
  const rows = [
    { router: 'a', rate: 10, workers: 6, prefixes: 24, ttft_p99_ms: 500, result: { each_run: [run(400, 9), run(500, 10), run(900, 11)] } },
    { router: 'a', rate: 10, workers: 6, prefixes: 24, ttft_p99_ms: 700, result: { each_run: [run(700, 8), run(1200, 12), run(600, 10)] } },
    { router: 'a', rate: 12, workers: 6, prefixes: 24, ttft_p99_ms: 1500, result: {} },
  ];
  const pts = poolPoints(rows);
  const p10 = pts.find((p) => p.rate === 10);
  assert.equal(p10.runs, 6);
  assert.equal(p10.ttft_p99_ms, 650);
  assert.equal(p10.requests_per_s, 10);
  assert.equal(pts.find((p) => p.rate === 12).ttft_p99_ms, 1500, 'a point of one row stays as it was');
});
