'use strict';
// The bench's Dynamo router (loadgen/dynamo.js): its cost on its own
// bookkeeping, as routers.md A.4-A.5 state it.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Worker, dynamoCost, pickDynamo, addActive, firstToken, removeActive } = require('../loadgen/dynamo');

const q = (tokens, keys) => ({ tokens, blockKeys: keys });

test('cost = pending prefill blocks + distinct active blocks + the request\'s new blocks', () => {
  const w = new Worker(0);
  const a = q(64, ['p0', 'p1', 'a2', 'a3']);
  assert.equal(dynamoCost(w, a, 0, 16), 4 + 0 + 4);
  addActive(w, a, 64);
  // a second request of the same prefix: its shared blocks are active
  // once, its own two are new; the first's 64 tokens still await prefill
  const b = q(64, ['p0', 'p1', 'b2', 'b3']);
  assert.equal(dynamoCost(w, b, 2, 16), (64 + 64 - 32) / 16 + 4 + 2);
  firstToken(w, 64);
  assert.equal(dynamoCost(w, b, 2, 16), (64 - 32) / 16 + 4 + 2);
  addActive(w, b, 32);
  assert.equal(w.activeBlocks.size, 6);
  removeActive(w, a);
  assert.deepEqual([...w.activeBlocks.keys()].sort(), ['b2', 'b3', 'p0', 'p1']);
});

test('the lowest cost wins: overlap against load', () => {
  const ws = [new Worker(0), new Worker(1)];
  const r = q(160, Array.from({ length: 10 }, (_, i) => `k${i}`));
  // worker 0 holds 8 of the 10 blocks; worker 1 nothing: 0 wins
  assert.equal(pickDynamo(ws, r, (w) => (w.index === 0 ? 8 : 0), 16, 0), 0);
  // worker 0 busy with 30 distinct active blocks: 2 + 30 + 10 > 10 + 0 + 10
  addActive(ws[0], q(480, Array.from({ length: 30 }, (_, i) => `x${i}`)), 0);
  assert.equal(pickDynamo(ws, r, (w) => (w.index === 0 ? 8 : 0), 16, 0), 1);
});

test('a worker that may not be chosen is passed over, unless none may', () => {
  const ws = [new Worker(0), new Worker(1)];
  const r = q(160, Array.from({ length: 10 }, (_, i) => `k${i}`));
  const holder0 = (w) => (w.index === 0 ? 8 : 0);
  assert.equal(pickDynamo(ws, r, holder0, 16, 0, (w) => w.index !== 0), 1);
  assert.equal(pickDynamo(ws, r, holder0, 16, 0, () => false), 0);
});
