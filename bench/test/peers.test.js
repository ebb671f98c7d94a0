'use strict';
// The peers' policies the load generator runs (loadgen/peers.js), on
// inputs whose answers follow from the published rules by hand.

const test = require('node:test');
const assert = require('node:assert/strict');
const { SglangRouter, PartitionRouter, parseEngineMetrics, llmdScores } = require('../loadgen/peers');

const prompt = (tag, n) => Array.from({ length: n }, (_, i) => (tag * 100003 + i) % 150000);

test('metrics: the vLLM gauges are read from Prometheus text', () => {
  const m = parseEngineMetrics('# HELP x\nvllm:num_requests_running{model_name="m"} 3\n' +
    'vllm:num_requests_waiting{model_name="m"} 2\nvllm:kv_cache_usage_perc{model_name="m"} 0.25\n');
  assert.deepEqual(m, { running: 3, waiting: 2, usage: 0.25 });
  assert.equal(parseEngineMetrics('nothing').waiting, null);
});

test('llm-d: 3 prefix + 2 queue + 2 kv-util, queue normalised over the candidates', () => {
  const s = llmdScores([{ waiting: 4, usage: 0.5 }, { waiting: 0, usage: 0.9 }, { waiting: 2, usage: 0 }],
    [10, 0, 5], 10);
  assert.deepEqual(s.map((x) => Math.round(x * 1000) / 1000), [3 + 0 + 1, 0 + 2 + 0.2, 1.5 + 1 + 2]);
  // equal queues: every queue score is 1
  const e = llmdScores([{ waiting: 1, usage: 0 }, { waiting: 1, usage: 0 }], [0, 0], 4);
  assert.deepEqual(e, [4, 4]);
});

test('sglang cache_aware: a match above 0.3 follows the tree, below it the smallest tree', () => {
  const r = new SglangRouter({ engines: 3, blockSize: 16 });
  const a = r.route({ ids: prompt(1, 320) });
  // a new prompt goes to the smallest tree: not where the first went
  const b = r.route({ ids: prompt(2, 320) });
  assert.notEqual(b.engine, a.engine);
  // sharing 160 of 320 tokens (0.5 > 0.3): the first prompt's engine
  const half = prompt(1, 160).concat(prompt(3, 160));
  assert.equal(r.route({ ids: half }).engine, a.engine);
  // sharing 64 of 320 (0.2): the smallest tree, the third engine
  const little = prompt(2, 64).concat(prompt(4, 256));
  const c = r.route({ ids: little });
  assert.ok(c.engine !== a.engine && c.engine !== b.engine, `engine ${c.engine}`);
});

test('sglang cache_aware: an imbalanced fleet goes to the least loaded, whatever matches', () => {
  const r = new SglangRouter({ engines: 2, blockSize: 16, balanceAbs: 2, balanceRel: 1.5 });
  const first = r.route({ ids: prompt(7, 64) });
  const held = [];
  for (let i = 0; i < 2; i++) held.push(r.route({ ids: prompt(7, 64) }));
  assert.ok(held.every((h) => h.engine === first.engine), 'a full match sticks while balanced');
  // load 3 against 0: max - min > 2 and 3 > 1.5 x 0
  const other = r.route({ ids: prompt(7, 64) });
  assert.notEqual(other.engine, first.engine);
  for (const h of held) h.onFinish();
  first.onFinish();
  assert.equal(r.load[first.engine], 0, 'finish returns the load once');
});

test('partition: a type keeps its engines, fewer types share the engines out', () => {
  const many = new PartitionRouter({ engines: 3, prefixes: 7 });
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6].map((p) => many.route({ prefixId: p }).engine), [0, 1, 2, 0, 1, 2, 0]);
  const few = new PartitionRouter({ engines: 6, prefixes: 2 });
  const seen0 = new Set();
  const seen1 = new Set();
  for (let i = 0; i < 6; i++) {
    seen0.add(few.route({ prefixId: 0 }).engine);
    seen1.add(few.route({ prefixId: 1 }).engine);
  }
  assert.deepEqual([...seen0].sort(), [0, 2, 4]);
  assert.deepEqual([...seen1].sort(), [1, 3, 5]);
});
