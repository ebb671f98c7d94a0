'use strict';
// The policy simulator (bench/sim) runs the emulator's own scheduler on a
// virtual clock in a child process (it replaces the timers).

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const MAIN = path.join(__dirname, '..', 'sim', 'main.js');

function sim(args) {
  const out = execFileSync(process.execPath, [MAIN, ...args], { encoding: 'utf8' });
  return out.trim().split('\n').map((l) => JSON.parse(l));
}

test('one prompt on an idle engine: TTFT is one step of the timing model', () => {
  const [r] = sim(['--workers', '1', '--prefixes', '1', '--concurrency', '1', '--requests', '1',
    '--seeds', '1', 'round_robin']);
  // base 20 ms + 38 us x 2,371 uncached tokens
  assert.equal(r.ttft_p50_ms, 110.1);
  assert.equal(r.request_hit_rate, 0);
  // then 15 decode steps of 20 + 10 ms
  assert.equal(r.requests_per_s, Math.round(1000 / (110.098 + 15 * 30) * 100) / 100);
});

test('two engines on one GPU share it: simultaneous prompts take twice as long', () => {
  const args = ['--workers', '2', '--prefixes', '2', '--concurrency', '2', '--requests', '2', '--seeds', '1'];
  const [apart] = sim(args.concat(['round_robin']));
  const [shared] = sim(args.concat(['--gpu-pairs', 'round_robin']));
  const [half] = sim(args.concat(['--gpu-pairs', '--share', '0.5', 'round_robin']));
  assert.equal(apart.ttft_p99_ms, 110.1);
  assert.equal(shared.ttft_p99_ms, 220.2);
  assert.equal(half.ttft_p99_ms, 165.1);
});

test('deterministic; the partition pins each type to one engine and beats round robin on hits', () => {
  const args = ['--workers', '6', '--prefixes', '24', '--concurrency', '8', '--requests', '300', '--seeds', '2'];
  const a = sim(args.concat(['partition', 'round_robin', 'cost', 'kvroute']));
  const b = sim(args.concat(['partition', 'round_robin', 'cost', 'kvroute']));
  assert.deepEqual(a, b);
  const [part, rr, cost, kvr] = a;
  assert.equal(part.engines_per_prefix, 1);
  assert.ok(rr.engines_per_prefix > 5, `round robin spreads every prefix (${rr.engines_per_prefix})`);
  assert.ok(part.request_hit_rate > 3 * rr.request_hit_rate);
  // kvroute's rules and the cost keep most prefixes together
  assert.ok(cost.request_hit_rate > 2 * rr.request_hit_rate, JSON.stringify(cost));
  assert.ok(kvr.request_hit_rate > 2 * rr.request_hit_rate, JSON.stringify(kvr));
});

test('unknown policies are refused', () => {
  assert.throws(() => execFileSync(process.execPath, [MAIN, 'fastest'], { stdio: 'pipe' }),
    /unknown policy fastest/);
});
