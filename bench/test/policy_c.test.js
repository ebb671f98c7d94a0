'use strict';
// One policy, one implementation: the simulator calls src/route/kvr_policy.c
// built to WebAssembly (bench/sim/cpolicy.js); build/policy-cli is the same
// sources built natively, as the module builds them. Both must pick the same
// server, with the same reason, on the same inputs: random cases of every
// policy, and every choice the simulator made in a run. Needs
// `make policy-wasm`.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const C = require('../sim/cpolicy');

const CLI = path.join(__dirname, '..', '..', 'build', 'policy-cli');
const MAIN = path.join(__dirname, '..', 'sim', 'main.js');

function native(lines) {
  const out = execFileSync(CLI, { input: lines.join('\n') + '\n', encoding: 'utf8' });
  return out.trim().split('\n').map((l) => l.split(' ').map(Number));
}

// a small seeded generator (mulberry32)
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomCase(r, policy) {
  const int = (n) => Math.floor(r() * n);
  const n = 1 + int(8);
  const blocks = 1 + int(200);
  const cands = [];
  for (let i = 0; i < n; i++) {
    const inflight = int(r() < 0.3 ? 2 : 12);
    cands.push({ overlap: r() < 0.5 ? int(blocks + 1) : 0, inflight,
      inflightTokens: inflight * int(3000), inflightPrefill: int(8000),
      id: [int(2 ** 32), int(2 ** 32)], weight: 1 + int(r() < 0.8 ? 1 : 3),
      cachedBlocks: int(700), capacity: r() < 0.1 ? 0 : 300 + int(600), prefixes: int(8),
      pinned: int(900), pinnedOwn: int(blocks + 1),
      // the offload tiers' blocks after the GPU overlap
      overlapHost: r() < 0.3 ? int(blocks + 1) : 0, overlapDisk: r() < 0.2 ? int(blocks + 1) : 0 });
  }
  // equal costs happen: copy a candidate's figures to another
  if (n > 1 && r() < 0.3) cands[1] = { ...cands[0], id: cands[1].id };
  const demand = { blocks, tokens: blocks * 16 + int(16), firstBlock: [int(2 ** 32), int(2 ** 32)],
    share: int(1025), random: [int(2 ** 32), int(2 ** 32)], outBlocks: int(4) };
  return { n, flat: C.flatten({ policy, blockSize: 16, spread: int(3) }, demand, cands) };
}

test('random cases: the WebAssembly and native builds pick alike, every policy', () => {
  const r = prng(18);
  const cases = [];
  for (const policy of Object.keys(C.POLICY)) {
    for (let i = 0; i < 500; i++) cases.push(randomCase(r, policy));
  }
  const wasm = cases.map((c) => C.pickFlat(c.flat, c.n));
  const cli = native(cases.map((c) => `${c.n} ${Array.from(c.flat).join(' ')}`));
  assert.equal(cli.length, cases.length);
  const picks = new Set();
  cases.forEach((c, i) => {
    assert.deepEqual([wasm[i].pick, wasm[i].why], cli[i], `case ${i}`);
    picks.add(wasm[i].pick);
  });
  // the cases are not all alike
  assert.ok(picks.size >= 4);
});

test('policy=ttft: the KV room term moves the choice, in both builds', () => {
  const cand = (o) => ({ overlap: 0, inflight: 0, id: [0, 1], capacity: 500, ...o });
  const demand = { blocks: 100, tokens: 1600, outBlocks: 1 };
  const holder = { overlap: 100, inflight: 1, pinned: 450, pinnedOwn: 100, id: [0, 2] };
  const roomy = C.flatten({ policy: 'ttft' }, demand, [cand({ prefixes: 5 }), cand(holder)]);
  const tight = C.flatten({ policy: 'ttft' }, demand,
    [cand({ prefixes: 5 }), cand({ ...holder, pinnedOwn: 50 })]);
  assert.equal(C.pickFlat(roomy, 2).pick, 1);
  assert.equal(C.pickFlat(tight, 2).pick, 0);
  assert.deepEqual(native([`2 ${Array.from(roomy).join(' ')}`, `2 ${Array.from(tight).join(' ')}`])
    .map((x) => x[0]), [1, 0]);
});

test('the simulator runs the C policy: each of its picks is the native pick', () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kvr-policy-')), 'calls');
  execFileSync(process.execPath, [MAIN, '--workers', '3', '--prefixes', '6', '--concurrency', '6',
    '--requests', '120', '--seeds', '1', 'ttft_c'], { env: { ...process.env, KVR_POLICY_RECORD: file },
    encoding: 'utf8' });
  const calls = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => l.split(' '));
  assert.equal(calls.length, 120);
  const cli = native(calls.map((c) => c.slice(0, -1).join(' ')));
  calls.forEach((c, i) => assert.equal(cli[i][0], Number(c[c.length - 1]), `call ${i}`));
  // it spreads the load: more than one engine chosen
  assert.ok(new Set(calls.map((c) => c[c.length - 1])).size > 1);
  fs.rmSync(path.dirname(file), { recursive: true });
});
