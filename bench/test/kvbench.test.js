'use strict';
// kvbench end to end (emulator + nginx + load) on a tiny point, and the
// pieces whose results can be derived by hand: workload, statistics.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { buildWorkload, singleTokenWords, rng } = require('../loadgen/workload');
const { percentile, upperBound, summarisePhases, summariseBurst, beliefs, perFrontend } = require('../loadgen/stats');
const { staleServers, splitter } = require('../loadgen/run');
const { routerTable } = require('../loadgen/routers');
const { nginxConf } = require('../loadgen/nginx');
const { TextTokenizer } = require('../emulator/tokenize');

const KVBENCH = path.join(__dirname, '..', 'kvbench');
const NGINX = process.env.NGINX || '/usr/sbin/nginx';

let words;
test.before(async () => { words = await singleTokenWords(); });

test('workload: 2,032-token prefixes, 2,371-token prompts, same seed same requests', async () => {
  const a = buildWorkload(words, { seed: 7, prefixes: 3, requests: 6 });
  const b = buildWorkload(words, { seed: 7, prefixes: 3, requests: 6 });
  assert.deepEqual(a.requests.map((r) => r.ids), b.requests.map((r) => r.ids));
  const tk = new TextTokenizer({});
  for (const r of a.requests) {
    assert.equal(r.ids.length, 2371);
    assert.deepEqual(r.ids.slice(0, 2032), a.prefixes[r.prefixId].ids);
    // the text tokenizes to exactly these ids
    assert.deepEqual(Array.from(await tk.encode(r.text, true)), r.ids);
  }
  const tails = new Set(a.requests.map((r) => r.ids.slice(2032).join(',')));
  assert.equal(tails.size, 6, 'unique tails');
});

test('workload: --zipf draws prefix k with weight 1/(k+1)^s, tails unchanged', () => {
  const u = buildWorkload(words, { seed: 3, prefixes: 8, requests: 8000 });
  const z = buildWorkload(words, { seed: 3, prefixes: 8, requests: 8000, zipf: 1.2 });
  const counts = new Array(8).fill(0);
  for (const r of z.requests) counts[r.prefixId]++;
  let sum = 0;
  for (let k = 0; k < 8; k++) sum += 1 / Math.pow(k + 1, 1.2);
  for (let k = 0; k < 8; k++) {
    const expected = 8000 / Math.pow(k + 1, 1.2) / sum;
    assert.ok(Math.abs(counts[k] - expected) < 5 * Math.sqrt(expected) + 5,
      `prefix ${k}: ${counts[k]} vs ${expected.toFixed(0)}`);
  }
  // one draw a request either way: the same tails in the same order
  assert.deepEqual(z.requests.map((r) => r.ids.slice(2032).join(',')),
    u.requests.map((r) => r.ids.slice(2032).join(',')));
});

test('workload: --turns T grows each conversation by one tail a request', () => {
  const w = buildWorkload(words, { seed: 5, prefixes: 2, requests: 40, turns: 3 });
  const seen = [[], []];
  for (const q of w.requests) {
    const past = seen[q.prefixId];
    const turn = past.length % 3;
    assert.equal(q.ids.length, 2032 + 339 * (turn + 1), 'prompt length by turn');
    if (turn > 0) {
      assert.deepEqual(q.ids.slice(0, past[past.length - 1].length), past[past.length - 1],
        'starts with the previous request of its conversation');
    } else {
      assert.deepEqual(q.ids.slice(0, 2032), w.prefixes[q.prefixId].ids, 'a new conversation');
    }
    past.push(q.ids);
  }
});

test('workload: --keys salt,lora=2: types share tokens, kept apart by adapter and salt only', () => {
  const plain = buildWorkload(words, { seed: 4, prefixes: 24, requests: 400 });
  const keyed = buildWorkload(words, { seed: 4, prefixes: 24, requests: 400, keys: { salt: true, lora: 2 } });
  // 6 variants (base, ad-1, ad-2; each unsalted and salted): 4 token prefixes
  const variant = (p) => `${p.model || 'base'}/${p.salt ? 'salted' : '-'}`;
  const tokens = new Set(keyed.prefixes.map((p) => p.ids.join(',')));
  assert.equal(tokens.size, 4);
  const pairs = new Set(keyed.prefixes.map((p) => `${p.ids.join(',')}|${variant(p)}`));
  assert.equal(pairs.size, 24, 'every type a distinct (tokens, keys) pair');
  assert.equal(new Set(keyed.prefixes.map(variant)).size, 6);
  const salts = keyed.prefixes.filter((p) => p.salt).map((p) => p.salt);
  assert.equal(new Set(salts).size, 12, 'half the types salted, each its own tenant');
  // the same picks and tails; each request carries its type's keys
  assert.deepEqual(keyed.requests.map((q) => q.prefixId), plain.requests.map((q) => q.prefixId));
  assert.deepEqual(keyed.requests.map((q) => q.ids.slice(2032).join(',')),
    plain.requests.map((q) => q.ids.slice(2032).join(',')));
  for (const q of keyed.requests) {
    assert.equal(q.model, keyed.prefixes[q.prefixId].model);
    assert.equal(q.salt, keyed.prefixes[q.prefixId].salt);
  }
  const share = keyed.requests.filter((q) => q.salt).length / keyed.requests.length;
  assert.ok(share > 0.4 && share < 0.6, `salted share ${share}`);
});

test('workload: --burst F:N puts a new prefix on N requests in a row, the rest unchanged', () => {
  const plain = buildWorkload(words, { seed: 4, prefixes: 6, requests: 100 });
  const b = buildWorkload(words, { seed: 4, prefixes: 6, requests: 100, burst: { at: 0.3, count: 20 } });
  assert.equal(b.prefixes.length, 7);
  const fresh = b.prefixes[6].ids.join(',');
  for (let p = 0; p < 6; p++) assert.notEqual(b.prefixes[p].ids.join(','), fresh, 'a prefix no type had');
  b.requests.forEach((q, i) => {
    const inBurst = i >= 30 && i < 50;
    assert.equal(q.prefixId === 6, inBurst, `request ${i}`);
    if (inBurst) assert.equal(q.ids.slice(0, 2032).join(','), fresh);
    else assert.deepEqual(q.ids, plain.requests[i].ids, `request ${i} as without the burst`);
  });
  const rec = (engine, cached) => ({ ok: true, engine, cachedTokens: cached, promptTokens: 100, ttftMs: 10 });
  const records = [rec('engine-0', 0), rec('engine-1', 100), rec('engine-1', 50), rec('engine-2', 0), rec('engine-0', 0)];
  const s = summariseBurst(records, 1, 4);
  assert.deepEqual([s.before.requests, s.burst.requests, s.after.requests], [1, 3, 1]);
  assert.deepEqual(s.burst.served_by, { 'engine-1': 2, 'engine-2': 1 });
  assert.equal(s.burst.cached_token_ratio, 0.5);
});

test('workload: prefix types are drawn evenly', () => {
  const w = buildWorkload(words, { seed: 3, prefixes: 4, requests: 4000 });
  const counts = [0, 0, 0, 0];
  for (const r of w.requests) counts[r.prefixId]++;
  for (const c of counts) assert.ok(c > 900 && c < 1100, `count ${c}`);
  const r = rng(1);
  assert.notEqual(r(), r());
});

test('stats: nearest-rank percentiles and the seed upper bounds', () => {
  assert.equal(percentile([5, 1, 4, 2, 3], 50), 3);
  assert.equal(percentile(Array.from({ length: 100 }, (_, i) => i + 1), 99), 99);
  // seed-experiment.md: 6 workers 24 types 99%, 3 workers 24 types 49%, 3 workers 12 types 99%
  assert.equal(Math.round(100 * upperBound(6, 24, 9360, 2371)), 99);
  assert.equal(Math.round(100 * upperBound(3, 24, 9360, 2371)), 49);
  assert.equal(Math.round(100 * upperBound(3, 12, 9360, 2371)), 99);
  assert.equal(upperBound(6, 7, 9360, 2371), 1);
  assert.equal(upperBound(6, 24, 9360, 2371, true), 0.75);
});

test('router table: every router renders an upstream block', () => {
  const table = routerTable('/top', '/top/build');
  for (const name of ['round_robin', 'random', 'hash', 'kvroute-approx', 'kvroute-dynamo']) assert.ok(table[name], name);
  const conf = nginxConf({ dir: '/tmp/x', router: table.hash, port: 9000, enginePorts: [9001, 9002] });
  assert.match(conf, /upstream kvbench_engines \{\s+hash \$kvbench_prefix consistent;/);
  assert.match(conf, /server 127\.0\.0\.1:9002/);
  const k = nginxConf({ dir: '/tmp/x', router: table['kvroute-approx'], port: 9000, enginePorts: [9001] });
  assert.match(k, /^load_module \/top\/build\/ngx_http_kvroute_module\.so;$/m);
  assert.match(k, /kvroute mode=approx capacity=585 block_size=16;/);
  const d = routerTable('/top', '/top/build', { capacityBlocks: 100, blockSize: 32 })['kvroute-dynamo'];
  assert.deepEqual(d.upstream, ['kvroute mode=approx policy=dynamo capacity=100 block_size=32;']);
  assert.deepEqual(table['kvroute-approx-ttft'].upstream, ['kvroute mode=approx policy=ttft capacity=585 block_size=16;']);
  assert.deepEqual(table['kvroute-kv-ttft'].emulatorArgs, ['--kv-events', 'zmq']);
  const f = nginxConf({ dir: '/tmp/x', port: 9000, enginePorts: [9001, 9002], eventsPorts: [9101, 9102],
    router: { upstream: (c) => c.eventsPorts.map((p) => `# events ${p};`) } });
  assert.match(f, /# events 9101;\n\s+# events 9102;/);
});

test('engine down: phases split by send time, the engine counted; nginx told to retry', () => {
  const rec = (sentMs, engine, cached, ok = true) => ({ sentMs, engine, ok, cachedTokens: cached,
    promptTokens: 100, ttftMs: sentMs / 10 });
  const records = [rec(0, 'engine-1', 50), rec(999, 'engine-2', 0, false), rec(1000, 'engine-0', 0),
    rec(4999, 'engine-0', 20), rec(5000, 'engine-1', 100), rec(14999, 'engine-1', 0), rec(15000, 'engine-1', 30)];
  const p = summarisePhases(records, 1000, 5000, 'engine-1');
  assert.deepEqual(Object.keys(p), ['before', 'down', 'first_10s_back', 'later']);
  assert.deepEqual([p.before.requests, p.before.errors, p.before.to_engine, p.before.request_hit_rate], [2, 1, 1, 1]);
  assert.deepEqual([p.down.requests, p.down.request_hit_rate, p.down.cached_token_ratio, p.down.to_engine], [2, 0.5, 0.1, 0]);
  assert.deepEqual([p.first_10s_back.requests, p.first_10s_back.to_engine, p.first_10s_back.request_hit_rate], [2, 2, 0.5]);
  assert.deepEqual([p.later.requests, p.later.cached_token_ratio], [1, 0.3]);
  const table = routerTable('/top', '/top/build');
  const plain = nginxConf({ dir: '/tmp/x', router: table.round_robin, port: 9000, enginePorts: [9001] });
  assert.match(plain, /server 127\.0\.0\.1:9001 max_fails=0;/);
  assert.doesNotMatch(plain, /non_idempotent/);
  const down = nginxConf({ dir: '/tmp/x', router: table.round_robin, port: 9000, enginePorts: [9001], engineDown: {} });
  assert.match(down, /server 127\.0\.0\.1:9001 max_fails=1 fail_timeout=2s;/);
  assert.match(down, /proxy_next_upstream error timeout non_idempotent;/);
});

test('frontends: the split, believed vs actual, stale servers, the status location', () => {
  const alt = splitter('alternate', 3, 1, 0);
  assert.deepEqual([0, 1, 2, 3, 4].map((i) => alt(i, 0)), [0, 1, 2, 0, 1]);
  const cl = splitter('client', 2, 1, 0);
  assert.deepEqual([0, 1, 2, 3].map((i) => cl(i, 3)), [1, 1, 1, 1], 'one frontend per client');
  assert.deepEqual([0, 1, 2, 3].map((c) => cl(0, c)), [0, 1, 0, 1]);
  const r1 = splitter('random', 4, 7, 0);
  const r2 = splitter('random', 4, 7, 0);
  const draws = Array.from({ length: 400 }, (_, i) => r1(i));
  assert.deepEqual(draws, Array.from({ length: 400 }, (_, i) => r2(i)), 'seeded: the same split');
  for (let f = 0; f < 4; f++) {
    const n = draws.filter((x) => x === f).length;
    assert.ok(n > 60 && n < 140, `frontend ${f}: ${n} of 400`);
  }
  assert.equal(splitter('alternate', 1, 1, 0), null, 'one frontend: no split');
  assert.throws(() => splitter('nope', 2, 1, 0), /--split/);

  // routed for a predicted hit (overlap > 0): did it hit?
  const rec = (overlap, cached, frontend) => ({ ok: true, overlap, cachedTokens: cached, frontend, ttftMs: 10 });
  const rs = [rec(5, 32, 0), rec(5, 0, 1), rec(0, 16, 0), rec(127, 2032, 1), rec(0, 0, 1)];
  assert.deepEqual(beliefs(rs), { believed_hits: 3, believed_hit_share: 0.6667, false_hits: 1 });
  assert.deepEqual(beliefs([{ ok: true, overlap: null, cachedTokens: 5 }]),
    { believed_hits: null, believed_hit_share: null, false_hits: null }, 'a router that says nothing');
  const pf = perFrontend(rs, 2);
  assert.deepEqual(pf.map((f) => [f.requests, f.believed_hits, f.false_hits]), [[2, 1, 0], [3, 2, 1]]);

  const status = [
    'kvroute_events_stale{upstream="u",server="127.0.0.1:1"} 0',
    'kvroute_events_stale{upstream="u",server="127.0.0.1:2"} 1',
    'kvroute_events_stale_total{upstream="u",server="127.0.0.1:2"} 3',
  ].join('\n');
  assert.deepEqual(staleServers(status), ['127.0.0.1:2']);

  const table = routerTable('/top', '/top/build', { basePort: 9001, eventsBasePort: 9101, replayBasePort: 9201 });
  const kv = nginxConf({ dir: '/tmp/x', router: table['kvroute-kv'], port: 9000, enginePorts: [9001] });
  assert.match(kv, /location = \/kvroute_status \{\s+kvroute_status;/);
  assert.match(kv, /add_header X-Kvroute-Overlap \$kvroute_overlap always;/);
  const rr = nginxConf({ dir: '/tmp/x', router: table.round_robin, port: 9000, enginePorts: [9001] });
  assert.doesNotMatch(rr, /kvroute_status|X-Kvroute/, 'no kvroute, no kvroute directives');
});

function kvbench(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [KVBENCH, ...args], { timeout: 60000 }, (err, stdout, stderr) => {
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
}

const haveNginx = fs.existsSync(NGINX);

// The runs below take ports from 21000-27100: under Linux's ephemeral
// range (32768-60999), where an outgoing connection may already hold one
// (a CI run failed so: "Address already in use").

test('kvbench run through nginx: round_robin (token ids) and hash (text)', { skip: !haveNginx && 'no nginx' }, async () => {
  const base = 21000 + Math.floor(Math.random() * 200) * 10;
  const common = ['--workers', '2', '--prefixes', '3', '--concurrency', '2', '--requests', '12',
    '--seed', '5', '--time-scale', '20', '--json', '--port', String(base), '--base-port', String(base + 1)];
  const rr = await kvbench(['run', '--router', 'round_robin', ...common]);
  assert.equal(rr.code, 0, rr.stderr);
  const lines = rr.stdout.trim().split('\n');
  const j = JSON.parse(lines[lines.length - 1]);
  for (const k of ['router', 'workers', 'prefixes', 'concurrency', 'requests', 'request_hit_rate',
    'cached_token_ratio', 'ttft_p50_ms', 'ttft_p99_ms', 'requests_per_s', 'engines_per_prefix',
    'upper_bound_hit_rate']) assert.ok(k in j, k);
  assert.equal(j.router, 'round_robin');
  assert.equal(j.requests, 12);
  assert.equal(j.errors, 0);
  assert.equal(j.prompt_length_mismatches, 0);
  assert.deepEqual(j.requests_per_engine, { 'engine-0': 6, 'engine-1': 6 });
  // where the row came from: commit, router line, emulator parameters, runs
  assert.match(j.commit, /^[0-9a-f]{7,}(-dirty)?$/);
  assert.equal(j.upstream, '(nginx round robin)');
  assert.equal(j.runs, 1);
  assert.equal(j.emulator_params.time_scale, 20);
  assert.equal(j.emulator_params.seed, 5);
  assert.ok(j.emulator_params.timing.prefillUsPerToken > 0, JSON.stringify(j.emulator_params));

  // hash pins a prefix type to one engine; 3 prefixes fit in one cache, so
  // only the first request of each type misses
  const h = await kvbench(['run', '--router', 'hash', '--prompt-form', 'text', ...common]);
  assert.equal(h.code, 0, h.stderr);
  const hj = JSON.parse(h.stdout.trim().split('\n').pop());
  assert.equal(hj.engines_per_prefix, 1);
  const wl = buildWorkload(words, { seed: 5, prefixes: 3, requests: 12 });
  const distinct = new Set(wl.requests.map((r) => r.prefixId)).size;
  assert.equal(hj.request_hit_rate, Math.round(10000 * (12 - distinct) / 12) / 10000);
  // hit requests reuse all 127 prefix blocks: 2,032 of 2,371 tokens
  assert.equal(hj.cached_token_ratio, Math.round(10000 * (12 - distinct) * 2032 / (12 * 2371)) / 10000);
});

test('kvbench: unknown router is refused', async () => {
  const r = await kvbench(['run', '--router', 'nope', '--requests', '1']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /unknown router nope/);
});

test('kvbench: random_conn keeps each client on one engine; dynamo routes on the KV events', { skip: !haveNginx && 'no nginx' }, async () => {
  const base = 23000 + Math.floor(Math.random() * 200) * 10;
  const common = ['--workers', '3', '--prefixes', '2', '--requests', '12', '--seed', '5',
    '--time-scale', '20', '--json', '--port', String(base), '--base-port', String(base + 1),
    '--events-base-port', String(base + 5)];
  // one client, one connection: every request on the engine it drew
  const rc = await kvbench(['run', '--router', 'random_conn', '--concurrency', '1', ...common]);
  assert.equal(rc.code, 0, rc.stderr);
  const rj = JSON.parse(rc.stdout.trim().split('\n').pop());
  assert.equal(rj.errors, 0);
  assert.deepEqual(Object.values(rj.requests_per_engine), [12]);
  // Dynamo on the events: after each type's first request, the type's
  // requests go where its blocks are (one client: nothing else in flight)
  const d = await kvbench(['run', '--router', 'dynamo', '--concurrency', '1', ...common]);
  assert.equal(d.code, 0, d.stderr);
  const dj = JSON.parse(d.stdout.trim().split('\n').pop());
  assert.equal(dj.errors, 0);
  assert.equal(dj.engines_per_prefix, 1);
  assert.equal(dj.request_hit_rate, Math.round(10000 * 10 / 12) / 10000);
  assert.ok(dj.emulator && typeof dj.emulator.lateness_p99_ms === 'number');
});

const haveModule = fs.existsSync(path.join(__dirname, '..', '..', 'build', 'ngx_http_kvroute_module.so'));

test('kvbench --frontends 2: two nginx instances on the same engines, none stale, believed vs actual',
  { skip: (!haveNginx && 'no nginx') || (!haveModule && 'no module (make all)') }, async () => {
    const base = 25000 + Math.floor(Math.random() * 200) * 10;
    const r = await kvbench(['run', '--router', 'kvroute-kv', '--workers', '3', '--prefixes', '2',
      '--concurrency', '2', '--requests', '12', '--seed', '5', '--time-scale', '20', '--json',
      '--frontends', '2', '--split', 'client', '--port', String(base), '--base-port', String(base + 2),
      '--events-base-port', String(base + 5)]);
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout.trim().split('\n').pop());
    assert.equal(j.errors, 0);
    assert.equal(j.frontends, 2);
    assert.deepEqual(j.stale_at_start, []);
    // one client each: both instances serve, as fast as their client's
    // requests come back (the seed's nodes are of unequal speed)
    const per = j.per_frontend.map((f) => f.requests);
    assert.equal(per.length, 2);
    assert.equal(per[0] + per[1], 12);
    assert.ok(per[0] >= 3 && per[1] >= 3, `one client each: ${per}`);
    // every request was told what kvroute believed; 2 types on 3 engines:
    // after each type's first request the rest are routed for a hit
    assert.ok(j.believed_hits >= 8, `believed ${j.believed_hits}`);
    assert.equal(j.believed_hit_share, 1);
  });

test("a row records the nodes and frontend time its --emulator-arg set, not kvbench's own that they override", () => {
  const { emulatorParams } = require('../loadgen/provenance');
  const base = { gpus: '24g,8g,8g', frontendUs: null, maxTokens: 21, timeScale: 1, capacityBlocks: 585,
    blockSize: 16, requests: 720, seed: 1 };
  const plain = emulatorParams(base);
  assert.equal(plain.gpus, '24g,8g,8g');
  const world = emulatorParams(Object.assign({}, base, { emulatorArgs: ['--gpus', '1,0.6/0.5,0.6/0.5',
    '--frontend-us=3450', '--decode-us-per-seq', '2382'] }));
  assert.equal(world.gpus, '1,0.6/0.5,0.6/0.5');
  assert.equal(world.frontend_us, 3450);
  assert.equal(world.timing.decodeUsPerSeq, 2382);
  assert.notEqual(plain.frontend_us, 3450);
});

test('the status page\'s ttft_decode as a row records it: learned or configured, and the fits', () => {
  const { ttftDecode } = require('../loadgen/run');
  assert.equal(ttftDecode(''), null);
  assert.equal(ttftDecode('kvroute_index_entries{zone="z"} 4\n'), null);
  assert.deepEqual(ttftDecode('kvroute_ttft_decode_tokens{upstream="llm",source="configured"} 300\n'),
    { tokens: 300, source: 'configured' });
  assert.deepEqual(ttftDecode('kvroute_ttft_decode_tokens{upstream="llm",source="learned"} 1711\n' +
    'kvroute_ttft_decode_requests_total{zone="z"} 190\nkvroute_ttft_decode_fits_total{zone="z"} 3\n'),
  { tokens: 1711, source: 'learned', fits: 3 });
});

test('ttft_decode=auto through nginx: the module learns a low weight where a decode is nearly free, a high one where it is dear',
  { skip: (!haveNginx && 'no nginx') || (!haveModule && 'no module (make all)') }, async () => {
    const learned = async (decodeUs, base) => {
      const r = await kvbench(['run', '--router', 'kvroute-kv-own50-decauto', '--workers', '3', '--prefixes', '7',
        '--concurrency', '4', '--requests', '200', '--seed', '1', '--time-scale', '3', '--json',
        '--port', String(base), '--base-port', String(base + 1), '--events-base-port', String(base + 5),
        '--emulator-arg=--decode-us-per-seq', `--emulator-arg=${decodeUs}`]);
      assert.equal(r.code, 0, r.stderr);
      const j = JSON.parse(r.stdout.trim().split('\n').pop());
      assert.equal(j.errors, 0);
      assert.equal(j.ttft_decode.length, 1);
      const d = j.ttft_decode[0];
      // 200 requests: fits at 50, 100, 150 and 200 ended (most of them)
      assert.equal(d.source, 'learned', JSON.stringify(d));
      assert.ok(d.fits >= 2, JSON.stringify(d));
      return d.tokens;
    };
    const base = 27000 + Math.floor(Math.random() * 200) * 10;
    // the emulator's default decode adds 3.3 µs a sequence to a ~5 ms
    // step; 4,000 µs makes each decoding request most of a step
    const free = await learned(3.3, base);
    const dear = await learned(4000, base);
    assert.ok(free <= 450, `free ${free}`);
    assert.ok(dear > 3 * free, `dear ${dear} against free ${free}`);
  });
