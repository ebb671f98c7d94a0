'use strict';
// KV events as a subscriber sees them: a real ZMQ SUB socket connected to
// the emulator, frames and msgpack decoded independently of the emulator's
// encoder, checked against kv-events.md sections 1-2 and 6.

const test = require('node:test');
const assert = require('node:assert/strict');
const zmq = require('zeromq');
const msgpack = require('@msgpack/msgpack');
const { startEmulator, postJson, request } = require('./helpers');

const BS = 16;

function tokens(start, n) {
  return Array.from({ length: n }, (_, i) => 2000 + ((start * 131 + i * 7919) % 60000));
}

class Sub {
  constructor(port) {
    this.sock = new zmq.Subscriber({ linger: 0 });
    // the handshake completes before the subscription can reach the PUB
    this.ready = new Promise((resolve) => this.sock.events.on('handshake', () => resolve()));
    this.sock.connect(`tcp://127.0.0.1:${port}`);
    this.sock.subscribe();
    this.msgs = [];
    this.waiters = [];
    this.loop = (async () => {
      try {
        for await (const frames of this.sock) {
          if (this.msgs.length === 0) this.firstAt = Date.now();
          this.msgs.push(frames);
          for (const w of this.waiters.splice(0)) w();
        }
      } catch (e) { /* closed */ }
    })();
  }

  // handshake done, then a moment for the subscription to be processed
  async connected() {
    await Promise.race([this.ready, sleep(3000)]);
    await sleep(150);
  }

  // wait until at least n messages arrived (or timeout)
  async waitFor(n, ms) {
    const deadline = Date.now() + (ms || 3000);
    while (this.msgs.length < n && Date.now() < deadline) {
      await new Promise((r) => { this.waiters.push(r); setTimeout(r, 50); });
    }
    return this.msgs;
  }

  close() {
    this.sock.close();
  }
}

function decodeMsg(frames) {
  assert.equal(frames.length, 3, 'three frames');
  assert.equal(frames[1].length, 8, '8-byte sequence');
  const seq = frames[1].readBigUInt64BE(0);
  const batch = msgpack.decode(frames[2], { useBigInt64: true });
  return { topic: frames[0].toString(), seq, batch, raw: frames[2] };
}

// all events of all messages, flattened
function allEvents(msgs) {
  return msgs.map(decodeMsg).flatMap((m) => m.batch[1]);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Normalise a wire hash (number, bigint or bytes) to a string key.
function hkey(h) {
  if (h instanceof Uint8Array) return Buffer.from(h).toString('hex');
  return BigInt.asUintN(64, BigInt(h)).toString();
}

test('array era, int hashes: frames, seq from 0, BlockStored at scheduling, lazy BlockRemoved', async () => {
  // 20 blocks: one 200-token request (13 blocks + decode) at a time
  const emu = await startEmulator(['--kv-events', 'zmq', '--time-scale', '50',
    '--capacity-blocks', '20', '--events-topic', 'kv-events']);
  const sub = new Sub(emu.eventsPort);
  try {
    await sub.connected();
    const p1 = tokens(1, 200);
    const r1 = await postJson(emu.basePort, '/v1/completions', { prompt: p1, max_tokens: 1 });
    assert.equal(r1.status, 200);
    await sub.waitFor(1);
    const m0 = decodeMsg(sub.msgs[0]);
    assert.equal(m0.topic, 'kv-events');
    assert.equal(m0.seq, 0n);
    assert.equal(m0.batch.length, 3, '[ts, events, dp_rank]');
    assert.equal(m0.raw[1], 0xcb, 'ts is a float64');
    assert.ok(Math.abs(m0.batch[0] - Date.now() / 1000) < 10);
    assert.equal(Number(m0.batch[2]), 0);
    const st = m0.batch[1][0];
    assert.ok(Array.isArray(st));
    assert.equal(st[0], 'BlockStored');
    assert.equal(st.length, 12);
    const hashes1 = st[1];
    assert.equal(hashes1.length, Math.floor(200 / BS));
    for (const h of hashes1) assert.ok(typeof h === 'number' || typeof h === 'bigint');
    assert.equal(st[2], null, 'parent of the first block is nil');
    assert.deepEqual(st[3].map(Number), p1.slice(0, hashes1.length * BS));
    assert.equal(Number(st[4]), BS);
    assert.equal(st[6], 'GPU');

    // a repeat with a longer prompt: hit on 12 blocks, stores the rest with
    // the last hit block as parent
    const p2 = p1.concat(tokens(2, 40));          // 240 tokens = 15 blocks
    const r2 = await postJson(emu.basePort, '/v1/completions', { prompt: p2, max_tokens: 1 });
    assert.equal(r2.json.usage.prompt_tokens_details.cached_tokens, 12 * BS);
    await sub.waitFor(2);
    const m1 = decodeMsg(sub.msgs[1]);
    assert.equal(m1.seq, 1n, 'seq counts batches');
    const st2 = m1.batch[1].find((e) => e[0] === 'BlockStored');
    assert.equal(hkey(st2[2]), hkey(hashes1[11]), 'parent = last hit block');
    assert.equal(st2[1].length, 3);
    assert.deepEqual(st2[3].map(Number), p2.slice(12 * BS, 15 * BS));
    assert.equal(m1.batch[1].filter((e) => e[0] === 'BlockRemoved').length, 0,
      'nothing evicted yet: no BlockRemoved');

    // an unrelated prompt needs most of the cache: evicts the LRU blocks,
    // tail of the chain first, each in its own BlockRemoved, before the store
    const before = sub.msgs.length;
    const p3 = tokens(3, 280);                  // 18 blocks + decode = 18
    await postJson(emu.basePort, '/v1/completions', { prompt: p3, max_tokens: 1 });
    await sub.waitFor(before + 1);
    await sleep(100);
    const evs = allEvents(sub.msgs.slice(before));
    const removed = evs.filter((e) => e[0] === 'BlockRemoved');
    assert.ok(removed.length > 0);
    for (const e of removed) {
      assert.equal(e[1].length, 1, 'one hash per BlockRemoved');
      assert.equal(e[2], 'GPU');
    }
    const firstStore = evs.findIndex((e) => e[0] === 'BlockStored');
    const lastRemove = evs.map((e) => e[0]).lastIndexOf('BlockRemoved');
    assert.ok(lastRemove < firstStore, 'evictions queued before the store');
    // p2's chain was freed last-block-first: its 15th block goes first
    const p2chain = hashes1.concat(st2[1]).map(hkey);
    assert.equal(hkey(removed[0][1][0]), p2chain[14]);
    assert.equal(hkey(removed[1][1][0]), p2chain[13]);

    // reset: AllBlocksCleared
    const before2 = sub.msgs.length;
    const rr = await request(emu.basePort, 'POST', '/reset_prefix_cache');
    assert.equal(rr.status, 200);
    await sub.waitFor(before2 + 1);
    const last = decodeMsg(sub.msgs[sub.msgs.length - 1]);
    assert.deepEqual(last.batch[1], [['AllBlocksCleared']]);
    const seqs = sub.msgs.map((f) => Number(decodeMsg(f).seq));
    assert.deepEqual(seqs, seqs.map((_, i) => i), 'consecutive sequence numbers');
  } finally {
    sub.close();
    await emu.stop();
  }
});

test('map era, bytes hashes', async () => {
  const emu = await startEmulator(['--kv-events', 'zmq', '--time-scale', '50',
    '--events-format', 'map', '--hash-type', 'bytes']);
  const sub = new Sub(emu.eventsPort);
  try {
    await sub.connected();
    const p = tokens(9, 100);
    await postJson(emu.basePort, '/v1/completions', { prompt: p, max_tokens: 1 });
    await sub.waitFor(1);
    const m = decodeMsg(sub.msgs[0]);
    assert.equal(m.topic, '', 'default topic is empty');
    assert.ok(Array.isArray(m.batch), 'outer batch stays an array');
    const ev = m.batch[1][0];
    assert.equal(ev.type, 'BlockStored');
    assert.equal(ev.block_hashes.length, 6);
    for (const h of ev.block_hashes) {
      assert.ok(h instanceof Uint8Array);
      assert.equal(h.length, 32);
    }
    assert.equal(ev.parent_block_hash, null);
    assert.deepEqual(ev.token_ids.map(Number), p.slice(0, 96));
    assert.equal(Number(ev.block_size), BS);
    assert.ok('lora_id' in ev && ev.lora_id === null, 'no-default fields present as nil');
    assert.ok('lora_name' in ev);
    assert.equal(ev.medium, 'GPU');
    assert.ok(!('kv_cache_spec_sliding_window' in ev), 'None-default fields omitted');
  } finally {
    sub.close();
    await emu.stop();
  }
});

test('sglang flavour: 7-element BlockStored, signed int64 hashes', async () => {
  const emu = await startEmulator(['--kv-events', 'zmq', '--time-scale', '50', '--flavour', 'sglang']);
  const sub = new Sub(emu.eventsPort);
  try {
    await sub.connected();
    await postJson(emu.basePort, '/v1/completions', { prompt: tokens(4, 33 * 16 + 1), max_tokens: 1 });
    await sub.waitFor(1);
    const ev = decodeMsg(sub.msgs[0]).batch[1][0];
    assert.equal(ev[0], 'BlockStored');
    assert.equal(ev.length, 7);
    assert.equal(ev[1].length, 33);
    // 33 random 64-bit values: all non-negative would be a 1 in 2^33 event
    assert.ok(ev[1].some((h) => BigInt(h) < 0n), 'signed hashes');
  } finally {
    sub.close();
    await emu.stop();
  }
});

test('replay over a DEALER socket returns buffered batches and the end marker', async () => {
  const emu = await startEmulator(['--kv-events', 'zmq', '--time-scale', '50']);
  try {
    await postJson(emu.basePort, '/v1/completions', { prompt: tokens(5, 64), max_tokens: 1 });
    await postJson(emu.basePort, '/v1/completions', { prompt: tokens(6, 64), max_tokens: 1 });
    const d = new zmq.Dealer({ linger: 0, receiveTimeout: 3000 });
    d.connect(`tcp://127.0.0.1:${emu.replayPort}`);
    const start = Buffer.alloc(8);
    start.writeBigUInt64BE(1n);
    await d.send([Buffer.alloc(0), start]);
    const replies = [];
    for (;;) {
      const msg = await d.receive();
      replies.push(msg);
      if (msg.length === 3 && msg[1].equals(Buffer.alloc(8, 0xff))) break;
    }
    d.close();
    // array era = original layout ["", seq, payload]; one batch with seq >= 1
    assert.equal(replies.length, 2);
    assert.equal(replies[0].length, 3);
    assert.equal(replies[0][0].length, 0);
    assert.equal(replies[0][1].readBigUInt64BE(0), 1n);
    const batch = msgpack.decode(replies[0][2], { useBigInt64: true });
    assert.equal(batch[1][0][0], 'BlockStored');
    assert.equal(replies[1][2].length, 0);
  } finally {
    await emu.stop();
  }
});

test('BlockStored is published when the prefill is scheduled, before its first token', async () => {
  // a 100-token prefill takes 1 + 100 * 3 ms = ~301 ms
  const emu = await startEmulator(['--kv-events', 'zmq', '--time-scale', '1', '--base-us', '1000',
    '--prefill-us-per-token', '3000', '--decode-us-per-seq', '0']);
  const sub = new Sub(emu.eventsPort);
  try {
    await sub.connected();
    const t0 = Date.now();
    const r = await postJson(emu.basePort, '/v1/completions', { prompt: tokens(8, 100), max_tokens: 1 });
    const tDone = Date.now() - t0;
    assert.equal(r.status, 200);
    await sub.waitFor(1);
    assert.ok(tDone >= 250, `response after ${tDone} ms`);
    // the subscriber recorded the message long before the response came
    assert.ok(sub.firstAt - t0 < tDone - 150, `event at ${sub.firstAt - t0} ms, response at ${tDone} ms`);
  } finally {
    sub.close();
    await emu.stop();
  }
});

test('replay in the map era (vLLM >= 0.26) carries the topic frame', async () => {
  const emu = await startEmulator(['--kv-events', 'zmq', '--time-scale', '50', '--events-format', 'map',
    '--events-topic', 'kv-events']);
  try {
    await postJson(emu.basePort, '/v1/completions', { prompt: tokens(5, 64), max_tokens: 1 });
    const d = new zmq.Dealer({ linger: 0, receiveTimeout: 3000 });
    d.connect(`tcp://127.0.0.1:${emu.replayPort}`);
    await d.send([Buffer.alloc(0), Buffer.alloc(8)]);
    const first = await d.receive();
    const end = await d.receive();
    d.close();
    assert.equal(first.length, 4);
    assert.equal(first[1].toString(), 'kv-events');
    assert.equal(first[2].readBigUInt64BE(0), 0n);
    assert.equal(msgpack.decode(first[3])[1][0].type, 'BlockStored');
    assert.equal(end.length, 4);
    assert.equal(end[1].length, 0, 'empty topic in the end marker');
    assert.ok(end[2].equals(Buffer.alloc(8, 0xff)));
  } finally {
    await emu.stop();
  }
});

test('forms behind options: CPU tier, report_mode=full, sliding-window group (vLLM, map era)', async () => {
  const emu = await startEmulator(['--kv-events', 'zmq', '--time-scale', '50',
    '--events-format', 'map', '--events-offload', '4', '--events-report-full',
    '--events-hybrid']);
  const sub = new Sub(emu.eventsPort);
  try {
    await sub.connected();
    const p1 = tokens(21, 100);                 // 6 blocks
    await postJson(emu.basePort, '/v1/completions', { prompt: p1, max_tokens: 1 });
    await sub.waitFor(1);
    await sleep(100);
    let evs = allEvents(sub.msgs);
    const gpu = evs.filter((e) => e.type === 'BlockStored' && e.medium === 'GPU' && e.group_idx === 0);
    assert.equal(gpu.length, 1);
    const chain = gpu[0].block_hashes.map(hkey);
    assert.equal(chain.length, 6);

    // the CPU tier: the same store, then its LRU of 4 removes 2
    const cpu = evs.filter((e) => e.medium === 'CPU');
    assert.equal(cpu[0].type, 'BlockStored');
    assert.deepEqual(cpu[0].block_hashes.map(hkey), chain);
    assert.equal(cpu[1].type, 'BlockRemoved');
    assert.deepEqual(cpu[1].block_hashes.map(hkey), chain.slice(0, 2));

    // the sliding-window group: the last block only
    const sw = evs.filter((e) => e.group_idx === 1);
    assert.equal(sw.length, 1);
    assert.equal(sw[0].kv_cache_spec_kind, 'sliding_window');
    assert.deepEqual(sw[0].block_hashes.map(hkey), [chain[5]]);

    // the prefix reused: re-announced from block 0, then the new blocks
    const before = sub.msgs.length;
    const p2 = p1.slice(0, 96).concat(tokens(22, 40));
    await postJson(emu.basePort, '/v1/completions', { prompt: p2, max_tokens: 1 });
    await sub.waitFor(before + 1);
    await sleep(100);
    evs = allEvents(sub.msgs.slice(before));
    const stores = evs.filter((e) => e.type === 'BlockStored' && e.medium === 'GPU'
      && e.group_idx === 0);
    assert.equal(stores.length, 2);
    assert.equal(stores[0].parent_block_hash, null, 're-announced from block 0');
    assert.deepEqual(stores[0].block_hashes.map(hkey), chain);
    assert.deepEqual(stores[0].token_ids.map(Number), p1.slice(0, 96));
    assert.equal(hkey(stores[1].parent_block_hash), chain[5]);
    assert.ok(!evs.some((e) => e.type === 'BlockRemoved' && e.medium === 'GPU'
      && e.group_idx === 0), 'no GPU removal pairs with the re-announcement');
    // the window moves on: the sliding-window group removes the old block
    const swr = evs.filter((e) => e.type === 'BlockRemoved' && e.group_idx === 1);
    assert.deepEqual(swr.map((e) => hkey(e.block_hashes[0])), [chain[5]]);
  } finally {
    sub.close();
    await emu.stop();
  }
});

test('forms behind options: SGLang EAGLE bigram token ids', async () => {
  const emu = await startEmulator(['--kv-events', 'zmq', '--time-scale', '50',
    '--flavour', 'sglang', '--events-format', 'map', '--events-bigram']);
  const sub = new Sub(emu.eventsPort);
  try {
    await sub.connected();
    const p = tokens(23, 40);
    await postJson(emu.basePort, '/v1/completions', { prompt: p, max_tokens: 1 });
    await sub.waitFor(1);
    const ev = decodeMsg(sub.msgs[0]).batch[1][0];
    assert.equal(ev.type, 'BlockStored');
    assert.equal(ev.token_ids.length, 32);
    ev.token_ids.forEach((pair, i) => {
      assert.equal(pair.length, 2);
      assert.equal(Number(pair[0]), p[i]);
      assert.equal(Number(pair[1]), i < 31 ? p[i + 1] : p[i]);
    });
  } finally {
    sub.close();
    await emu.stop();
  }
});

test('keys: cache_salt in the first block, a LoRA adapter in every block, images as (id, offset)', async () => {
  const emu = await startEmulator(['--kv-events', 'zmq', '--time-scale', '50',
    '--events-format', 'map', '--lora-modules', 'ad-a,ad-b', '--mm-tokens', '20']);
  const sub = new Sub(emu.eventsPort);
  const stored = async (body, path) => {
    const before = sub.msgs.length;
    const r = await postJson(emu.basePort, path || '/v1/completions', Object.assign({ max_tokens: 1 }, body));
    assert.equal(r.status, 200, r.body);
    await sub.waitFor(before + 1);
    await sleep(100);
    const evs = allEvents(sub.msgs.slice(before)).filter((e) => e.type === 'BlockStored');
    return { r, ev: evs[0] };
  };
  try {
    await sub.connected();
    const p = tokens(31, 48);                  // 3 blocks
    const plain = (await stored({ prompt: p })).ev;
    assert.deepEqual(plain.extra_keys, [null, null, null]);
    assert.equal(plain.lora_name, null);

    const salted = await stored({ prompt: p, cache_salt: 'tenant-1' });
    assert.equal(salted.r.json.usage.prompt_tokens_details.cached_tokens, 0, 'a salt never hits unsalted blocks');
    assert.deepEqual(salted.ev.extra_keys, [['tenant-1'], null, null]);
    assert.equal(salted.ev.parent_block_hash, null);
    // every block's hash differs (the chain starts from a salted block)
    const ph = plain.block_hashes.map(hkey);
    salted.ev.block_hashes.map(hkey).forEach((h, i) => assert.notEqual(h, ph[i]));
    const again = await stored({ prompt: p.concat(tokens(32, 16)), cache_salt: 'tenant-1' });
    assert.equal(again.r.json.usage.prompt_tokens_details.cached_tokens, 48, 'the same salt hits');

    const lora = await stored({ prompt: p, model: 'ad-b' });
    assert.equal(lora.r.json.usage.prompt_tokens_details.cached_tokens, 0);
    assert.equal(lora.ev.lora_name, 'ad-b');
    assert.equal(Number(lora.ev.lora_id), 2);
    assert.deepEqual(lora.ev.extra_keys, [['ad-b'], ['ad-b'], ['ad-b']]);
    // an unknown model name is the base model (the emulator is lenient)
    const base = await stored({ prompt: p.concat(tokens(33, 16)), model: 'other' });
    assert.equal(base.r.json.usage.prompt_tokens_details.cached_tokens, 48);

    // a chat with an image: 20 pad tokens where the image is; the blocks it
    // overlaps name it with its offset, the blocks before it do not
    const sys = 'word '.repeat(60);
    const chat = (url) => ({ messages: [{ role: 'system', content: sys },
      { role: 'user', content: [{ type: 'text', text: 'what is this?' },
        { type: 'image_url', image_url: { url } }] }] });
    const img1 = await stored(chat('http://x/1.png'), '/v1/chat/completions');
    const keyed = img1.ev.extra_keys.map((k, i) => [i, k]).filter(([, k]) => k !== null);
    assert.ok(keyed.length >= 2, 'the image spans blocks: ' + JSON.stringify(img1.ev.extra_keys));
    const [i0, k0] = keyed[0];
    assert.equal(k0.length, 1);
    assert.equal(k0[0].length, 2);
    assert.match(k0[0][0], /^[0-9a-f]{64}$/);
    const start = i0 * BS + Number(k0[0][1]);
    assert.ok(Number(k0[0][1]) >= 0 && Number(k0[0][1]) < BS);
    for (const [i, k] of keyed) assert.equal(Number(k[0][1]), start - i * BS);
    assert.ok(i0 > 0, 'the system prompt\'s blocks carry no key');
    const img2 = await stored(chat('http://x/2.png'), '/v1/chat/completions');
    assert.equal(img2.r.json.usage.prompt_tokens_details.cached_tokens, i0 * BS,
      'another image hits the blocks before it, not after');
    const img1b = await postJson(emu.basePort, '/v1/chat/completions', Object.assign({ max_tokens: 1 }, chat('http://x/1.png')));
    assert.ok(img1b.json.usage.prompt_tokens_details.cached_tokens > i0 * BS, 'the same image hits past it');
  } finally {
    sub.close();
    await emu.stop();
  }
});

test('images refused without --mm-tokens; a bad cache_salt is a 400', async () => {
  const emu = await startEmulator(['--time-scale', '50']);
  try {
    const r = await postJson(emu.basePort, '/v1/chat/completions', { max_tokens: 1, messages: [{ role: 'user',
      content: [{ type: 'image_url', image_url: { url: 'http://x/1.png' } }] }] });
    assert.equal(r.status, 400);
    const s = await postJson(emu.basePort, '/v1/completions', { max_tokens: 1, prompt: tokens(1, 20), cache_salt: '' });
    assert.equal(s.status, 400);
    assert.match(s.json.message, /cache_salt/);
  } finally {
    await emu.stop();
  }
});

test('forms behind options: a partial block announced at the prompt\'s end, removed when it fills', async () => {
  const emu = await startEmulator(['--kv-events', 'zmq', '--time-scale', '50',
    '--events-format', 'map', '--events-partial']);
  const sub = new Sub(emu.eventsPort);
  try {
    await sub.connected();
    const p = tokens(41, 40);                  // 2 blocks + 8 tokens
    await postJson(emu.basePort, '/v1/completions', { prompt: p, max_tokens: 10 });
    await sub.waitFor(2);
    await sleep(150);
    const evs = allEvents(sub.msgs);
    const stores = evs.filter((e) => e.type === 'BlockStored');
    assert.equal(stores[0].block_hashes.length, 2);
    const part = stores[1];
    assert.equal(part.block_hashes.length, 1);
    assert.equal(Number(part.block_size), 8);
    assert.deepEqual(part.token_ids.map(Number), p.slice(32));
    assert.equal(hkey(part.parent_block_hash), hkey(stores[0].block_hashes[1]));
    // 8 + 10 tokens fill block 2: the partial hash goes, the full one comes
    const ph = hkey(part.block_hashes[0]);
    const gone = evs.findIndex((e) => e.type === 'BlockRemoved' && e.block_hashes.map(hkey).includes(ph));
    const full = evs.findIndex((e, i) => i > 1 && e.type === 'BlockStored' && Number(e.block_size) === BS);
    assert.ok(gone > 1 && full > gone, JSON.stringify(evs.map((e) => e.type)));
  } finally {
    sub.close();
    await emu.stop();
  }
});

test('gap I N: the next N batches are lost on the PUB socket, kept for replay', async () => {
  const emu = await startEmulator(['--kv-events', 'zmq', '--time-scale', '50']);
  const sub = new Sub(emu.eventsPort);
  try {
    await sub.connected();
    await postJson(emu.basePort, '/v1/completions', { prompt: tokens(51, 20), max_tokens: 1 });
    await sub.waitFor(1);
    emu.proc.stdin.write('gap 0 1\n');
    await sleep(100);
    await postJson(emu.basePort, '/v1/completions', { prompt: tokens(52, 20), max_tokens: 1 });
    await postJson(emu.basePort, '/v1/completions', { prompt: tokens(53, 20), max_tokens: 1 });
    await sub.waitFor(2);
    await sleep(100);
    const seqs = sub.msgs.map(decodeMsg).map((m) => Number(m.seq));
    assert.equal(seqs[0], 0);
    assert.ok(seqs.length >= 2 && seqs[1] === 2, 'batch 1 lost: ' + seqs.join(','));
    // the replay socket still has it
    const dealer = new zmq.Dealer({ linger: 0 });
    dealer.connect(`tcp://127.0.0.1:${emu.replayPort}`);
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(1n);
    await dealer.send([Buffer.alloc(0), b]);
    const [, s] = await dealer.receive();
    assert.equal(Number(s.readBigUInt64BE(0)), 1);
    dealer.close();
  } finally {
    sub.close();
    await emu.stop();
  }
});
