'use strict';
// One benchmark point: start the emulator (W engines) and nginx with the
// router under test, drive the workload through nginx, summarise.

const path = require('node:path');
const { spawn } = require('node:child_process');
const { routerTable } = require('./routers');
const { startNginx } = require('./nginx');
const { singleTokenWords, buildWorkload, arrivalSeed, PREFIX_TOKENS, TAIL_TOKENS } = require('./workload');
const { runLoad, runOpenLoop, sendOne } = require('./client');
const http = require('node:http');
const { summarise, summarisePhases, summariseBurst } = require('./stats');

const EMULATOR = path.join(__dirname, '..', 'emulator', 'main.js');

function startEmulator(args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [EMULATOR, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    proc.stdin.on('error', () => {});
    let out = '';
    // engine state changes the emulator reports ("engine I down|up"), timed
    const changes = [];
    let seen = 0;
    let err = '';
    proc.stderr.on('data', (d) => { err += d; });
    proc.stdout.on('data', (d) => {
      out += d;
      let nl;
      while ((nl = out.indexOf('\n', seen)) >= 0) {
        const m = /^engine (\d+) (\S+)/.exec(out.slice(seen, nl));
        if (m) changes.push({ engine: Number(m[1]), state: m[2], at: process.hrtime.bigint() });
        seen = nl + 1;
      }
      if (out.includes('ready\n') && !proc.readyReported) {
        proc.readyReported = true;
        resolve({
          proc,
          changes,
          command: (line) => proc.stdin.write(line + '\n'),
          stderr: () => err,
          stop: () => new Promise((res) => {
            if (proc.exitCode !== null || proc.signalCode !== null) return res();
            proc.once('exit', () => res());
            proc.kill('SIGTERM');
          }),
        });
      }
    });
    proc.once('exit', (code) => reject(new Error(`emulator exited (${code}) before ready: ${err}`)));
  });
}

// Children started by the current point, stopped on SIGINT/SIGTERM too.
const live = new Set();

async function stopAll() {
  const all = Array.from(live);
  live.clear();
  await Promise.allSettled(all.map((c) => c.stop()));
}

// o: router, workers, prefixes, concurrency, requests, seed, maxTokens,
//    promptForm, timeScale, capacityBlocks, blockSize, port, basePort,
//    eventsBasePort, nginx, nginxWorkers, emulatorArgs[], dpRanks (engines
//    of that many data-parallel ranks), top, build, log(msg),
//    frontends (nginx instances, on port, port + 1, ...), split
async function runPoint(o, words) {
  o = Object.assign({ replayBasePort: o.eventsBasePort + 100 }, o);
  const table = routerTable(o.top, o.build, o);
  const router = table[o.router];
  if (!router) throw new Error(`unknown router ${o.router}; known: ${Object.keys(table).join(', ')}`);
  const wl = buildWorkload(words, { seed: o.seed, prefixes: o.prefixes, requests: o.requests,
    zipf: o.zipf || 0, turns: o.turns || 1, keys: o.keys || null, burst: o.burst || null });
  const emuArgs = ['--engines', String(o.workers), '--base-port', String(o.basePort),
    '--capacity-blocks', String(o.capacityBlocks), '--block-size', String(o.blockSize),
    '--time-scale', String(o.timeScale), '--events-base-port', String(o.eventsBasePort),
    '--replay-base-port', String(o.replayBasePort), '--gpus', o.gpus || '', '--placement', String(o.placement || 0),
    ...(o.frontendUs === null || o.frontendUs === undefined ? [] : ['--frontend-us', String(o.frontendUs)]),
    '--processes', String(o.emulatorProcesses || 1),
    ...(o.dpRanks > 1 ? ['--dp-ranks', String(o.dpRanks)] : []),
    ...(process.env.KVBENCH_TRACE ? ['--trace'] : []),
    ...(o.keys && o.keys.lora ? ['--lora-modules', Array.from({ length: o.keys.lora }, (_, k) => `ad-${k + 1}`).join(',')] : []),
  ].concat(router.emulatorArgs || [], o.emulatorArgs || [],
    o.engineScale && o.engineScale.length ? [`--engine-scale=${o.engineScale.join(',')}`] : []);
  const emu = await startEmulator(emuArgs);
  live.add(emu);
  try {
    const ports = Array.from({ length: o.workers }, (_, i) => o.basePort + i);
    if (o.warmup) await warmup(ports, words, o);
    const eventsPorts = ports.map((_, i) => o.eventsBasePort + i);
    if (router.bench) {
      const own = benchRouter(router.bench, { eventsPorts, enginePorts: ports, engines: o.workers,
        prefixes: o.prefixes, blockSize: o.blockSize, hashSeed: '0', timeScale: o.timeScale });
      await own.start();
      try {
        return await drive(o, wl, emu, ports, { route: (q) => own.route(q), enginePorts: ports });
      } finally {
        await own.stop();
      }
    }
    // --frontends F: F nginx instances, each its own master, zone and
    // events helper, on port, port + 1, ...; the same engines behind all
    const frontends = o.frontends || 1;
    const ngxs = [];
    try {
      for (let f = 0; f < frontends; f++) {
        const ngx = await startNginx({ router, port: o.port + f, enginePorts: ports, eventsPorts,
          binary: o.nginx, engineScale: o.engineScale, capacityBlocks: o.capacityBlocks,
          engineDown: o.engineDown, workers: o.nginxWorkers });
        live.add(ngx);
        ngxs.push(ngx);
      }
      const stale = await waitFresh(ngxs.map((_, f) => o.port + f), router, o);
      const res = await drive(o, wl, emu, ports, { ports: ngxs.map((_, f) => o.port + f) });
      res.stale_at_start = stale;
      // policy=ttft: each frontend's weight of a request in flight at the
      // end, and whether it was learned (ttft_decode=auto) or configured
      const decode = (await Promise.all(ngxs.map((_, f) => kvrouteStatus(o.port + f)))).map(ttftDecode);
      if (decode.some((d) => d)) res.ttft_decode = decode;
      return res;
    } finally {
      for (const ngx of ngxs) {
        live.delete(ngx);
        await ngx.stop();
      }
    }
  } finally {
    live.delete(emu);
    await emu.stop();
  }
}

// kvroute's status page of the nginx on port: each server's
// kvroute_events_stale (1: its index missed events no replay gave back)
function kvrouteStatus(port) {
  return new Promise((resolve) => {
    http.get({ host: '127.0.0.1', port, path: '/kvroute_status' }, (res) => {
      let b = '';
      res.on('data', (d) => { b += d; });
      res.on('end', () => resolve(res.statusCode === 200 ? b : ''));
    }).on('error', () => resolve(''));
  });
}

// the status page's kvroute_ttft_decode_tokens: { tokens, source }, or
// null (not policy=ttft, or no page)
function ttftDecode(text) {
  const m = /^kvroute_ttft_decode_tokens\{[^}]*source="(\w+)"\} (\d+)$/m.exec(text || '');
  if (!m) return null;
  const fits = /^kvroute_ttft_decode_fits_total\{[^}]*\} (\d+)$/m.exec(text);
  return Object.assign({ tokens: Number(m[2]), source: m[1] }, fits ? { fits: Number(fits[1]) } : {});
}

function staleServers(text) {
  const out = [];
  for (const m of text.matchAll(/^kvroute_events_stale\{([^}]*)\} (\d+)$/gm)) {
    if (m[2] !== '0') out.push((/server="([^"]*)"/.exec(m[1]) || [])[1] || m[1]);
  }
  return out;
}

// In kv mode no server may be stale when the measurement starts: each
// helper asks every engine's replay for its events from 0 when it
// connects, which takes a moment.  Waits up to 5 s (real time), then
// returns the stale servers as "port/server" (empty: none), and says so
// loudly; kvbench flags the row.
async function waitFresh(ports, router, o) {
  const kv = (router.emulatorArgs || []).includes('zmq') && (router.modules || []).length;
  if (!kv) return [];
  const start = Date.now();
  const deadline = start + 5000;
  let first = null;
  for (;;) {
    const texts = await Promise.all(ports.map(kvrouteStatus));
    const stale = [];
    texts.forEach((t, f) => {
      if (!/kvroute_events_stale\{/.test(t)) stale.push(`${ports[f]}/no status`);
      for (const s of staleServers(t)) stale.push(`${ports[f]}/${s}`);
    });
    if (first === null) first = stale.length;
    if (stale.length === 0) {
      if (first) o.log(`${first} server(s) stale after nginx started, none after ${Date.now() - start} ms`);
      return [];
    }
    if (Date.now() > deadline) {
      o.log(`WARNING: ${stale.length} server(s) stale at the start of the measurement: ${stale.join(', ')}`);
      return stale;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Which frontend request i of client c goes to (--split): in turn per
// request, at random per request (seeded), or one fixed per client.
function splitter(split, frontends, seed, run) {
  if (frontends <= 1) return null;
  if (split === 'alternate') return (i) => i % frontends;
  if (split === 'client') return (i, client) => client % frontends;
  if (split === 'random') {
    const { rng } = require('./workload');
    const draws = new Map();
    const r = rng(0xf207 + seed * 53 + run * 11);
    // drawn in request order, so the same requests go the same way
    return (i) => {
      if (!draws.has(i)) draws.set(i, Math.floor(r() * frontends));
      return draws.get(i);
    };
  }
  throw new Error(`--split: alternate, random or client, not ${split}`);
}

// The load generator's own routers (no nginx): the peers' policies
function benchRouter(name, o) {
  const { DynamoRouter } = require('./dynamo');
  const { LlmdRouter, SglangRouter, PartitionRouter } = require('./peers');
  const made = { dynamo: DynamoRouter, llmd: LlmdRouter, sglang: SglangRouter, partition: PartitionRouter }[name];
  if (!made) throw new Error(`no bench router ${name}`);
  return new made(o);
}

// The load through the router (nginx on o.port, or a router of the load
// generator's own: extra.route), and the point's summary.
async function drive(o, wl, emu, ports, extra) {
  o.log(`running ${o.requests} requests, router ${o.router}, ${o.workers} workers, ` +
    `${o.prefixes} prefix types, concurrency ${o.concurrency}`);
  // --engine-down: engine E goes away when the given share of the
  // requests has been sent, for the given time
  const down = o.engineDown;
  const downAt = down ? Math.floor(down.at * wl.requests.length) : -1;
  if (down && down.engine >= o.workers) throw new Error(`--engine-down: no engine ${down.engine}`);
  // --rate: open loop, Poisson arrivals at o.rate a second of model time
  // (a model second lasts 1/timeScale real seconds)
  const load = o.rate ? runOpenLoop : runLoad;
  // --events-gap: every engine's publisher loses one batch when the given
  // share of the requests has been sent
  const gapAt = o.eventsGap === null || o.eventsGap === undefined ? -1
    : Math.floor(o.eventsGap * wl.requests.length);
  const { records, wallMs, t0 } = await load(wl.requests, {
    port: o.port, concurrency: o.concurrency, maxTokens: o.maxTokens,
    clientIds: clientIds(o.concurrency, o.seed, o.run || 0),
    promptForm: o.promptForm, model: 'Qwen/Qwen3-0.6B', route: extra.route,
    enginePorts: extra.enginePorts,
    ports: extra.ports,
    frontend: splitter(o.split || 'alternate', extra.ports ? extra.ports.length : 1, o.seed, o.run || 0),
    rate: o.rate ? o.rate * (o.timeScale || 1) : 0,
    arrivalSeed: arrivalSeed(o.seed, o.run),
    onSend: (i) => {
      if (i === downAt) emu.command(`down ${down.engine} ${down.ms}`);
      if (i === gapAt) for (let e = 0; e < o.workers; e++) emu.command(`gap ${e} ${o.eventsGapBatches === undefined ? 1 : o.eventsGapBatches}`);
    } });
  // the figures in model time: what the emulated engines' clock says
  // (nginx's own real time is scaled with it, a small error at the time
  // scales the fidelity table uses)
  const ts = o.timeScale || 1;
  for (const r of records) {
    if (!r) continue;
    for (const k of ['ttftMs', 'totalMs', 'sentMs']) if (typeof r[k] === 'number') r[k] *= ts;
  }
  const rel = (t) => Number(t - t0) / 1e6 * ts;
  const downMs = emu.changes.filter((c) => c.state === 'down').map((c) => rel(c.at))[0];
  const upMs = emu.changes.filter((c) => c.state === 'up').map((c) => rel(c.at))[0];
  if (process.env.KVBENCH_TRACE) {
    // one line a request, in send order: for looking into a policy
    require('node:fs').writeFileSync(process.env.KVBENCH_TRACE, records.map((r) =>
      JSON.stringify({ prefix: r.prefixId, engine: r.engine, cached: r.cachedTokens, frontend: r.frontend, overlap: r.overlap, reason: r.reason,
        ttft: r.ttftMs, total: r.totalMs, sent: r.sentMs, emulator: r.emulatorTrace })).join('\n') + '\n');
  }
  const res = summarise(records, wallMs * ts, {
    router: o.router, workers: o.workers, prefixes: o.prefixes, concurrency: o.concurrency,
    capacityTokens: o.capacityBlocks * o.blockSize, promptTokens: PREFIX_TOKENS + TAIL_TOKENS,
    skip: o.skip || 0, frontends: extra.ports ? extra.ports.length : 1 });
  if (extra.ports && extra.ports.length > 1) res.split = o.split || 'alternate';
  if (o.rate) res.offered_rate = o.rate;
  res.emulator = await emulatorHealth(ports, o.timeScale);
  if (down) {
    if (downMs === undefined || upMs === undefined) {
      throw new Error(`--engine-down: the emulator reported ${JSON.stringify(emu.changes.map((c) => c.state))}`);
    }
    res.engine_down = { engine: down.engine, down_at_ms: Math.round(downMs), up_at_ms: Math.round(upMs),
      phases: summarisePhases(records, downMs, upMs, `engine-${down.engine}`) };
  }
  // the load generator's own routers try another engine when one is away
  if (extra.route) res.retried = records.filter((r) => r && r.tries > 1).length;
  if (o.burst) {
    const from = Math.floor(o.burst.at * wl.requests.length);
    res.burst = Object.assign({ from, count: o.burst.count }, summariseBurst(records, from, from + o.burst.count));
  }
  if (gapAt >= 0) {
    const gapMs = emu.changes.filter((c) => c.state === 'gap').map((c) => rel(c.at))[0];
    if (gapMs === undefined) throw new Error('--events-gap: the emulator reported no gap');
    res.events_gap = { at_ms: Math.round(gapMs), batches_lost: o.eventsGapBatches === undefined ? 1 : o.eventsGapBatches,
      phases: summariseGap(records, gapMs) };
  }
  return res;
}

// A run whose engines each lost a batch of events (--events-gap): the
// requests sent in the 10 s (model time) before it and in the 10 s after.
function summariseGap(records, gapMs) {
  const out = {};
  for (const [name, within] of [['before_10s', (t) => t >= gapMs - 10000 && t < gapMs],
    ['after_10s', (t) => t >= gapMs && t < gapMs + 10000]]) {
    const ok = records.filter((r) => r && r.ok && within(r.sentMs));
    out[name] = {
      requests: ok.length,
      request_hit_rate: ok.length ? Math.round(ok.filter((r) => r.cachedTokens > 0).length / ok.length * 1e4) / 1e4 : null,
      cached_token_ratio: ok.length ? Math.round(ok.reduce((a, r) => a + r.cachedTokens, 0) /
        ok.reduce((a, r) => a + r.promptTokens, 0) * 1e4) / 1e4 : null,
      false_hits: ok.filter((r) => r.overlap > 0 && !(r.cachedTokens > 0)).length,
    };
  }
  return out;
}

// A random name per client and run: which engine a client's connection
// lands on under random_conn changes from run to run, as the seed's
// connections did.
function clientIds(n, seed, run) {
  const { rng } = require('./workload');
  const r = rng(0x0c11e47 + seed * 1009 + run * 7);
  return Array.from({ length: n }, () => Math.floor(r() * 0x7fffffff).toString(36));
}

// Lateness above which a run's times are not the model's: a quarter of
// the seed's smallest TTFT (34 ms), so even the 99th percentile of late
// token emissions stays inside the tightest tolerance (TTFT p50 +-25 %).
const LATENESS_LIMIT_MS = 8.5;

// The emulator's own clock and the engines' preemptions, from /metrics:
// step-end lateness in model ms (the worst engine), preemptions summed.
async function emulatorHealth(ports, timeScale) {
  const get = (port) => new Promise((resolve) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
      let b = '';
      res.on('data', (d) => { b += d; });
      res.on('end', () => resolve(b));
    }).on('error', () => resolve(''));
  });
  const val = (text, name) => {
    const m = new RegExp(`^${name}\\{[^}]*\\} ([0-9.eE+-]+)$`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  };
  const texts = await Promise.all(ports.map(get));
  const max = (name) => Math.max(0, ...texts.map((t) => val(t, name) || 0));
  const sum = (name) => texts.reduce((a, t) => a + (val(t, name) || 0), 0);
  const h = {
    time_scale: timeScale,
    lateness_p50_ms: max('kvemu_step_lateness_p50_ms'),
    lateness_p99_ms: max('kvemu_step_lateness_p99_ms'),
    lateness_max_ms: max('kvemu_step_lateness_max_ms'),
    preemptions: sum('vllm:num_preemptions_total'),
  };
  h.clock_ok = h.lateness_p99_ms <= LATENESS_LIMIT_MS;
  return h;
}

// Warm every engine directly (not through the router, so a round robin's
// position is untouched): one long request each, twice, to get the JIT and
// the tokenizer threads going, then empty the prefix caches again.
async function warmup(ports, words, o) {
  const agent = new http.Agent({ keepAlive: false });
  const wl = buildWorkload(words, { seed: 0x5eed + o.seed, prefixes: 1, requests: 2 * ports.length });
  for (let round = 0; round < 2; round++) {
    await Promise.all(ports.map(async (port, i) => {
      const q = wl.requests[round * ports.length + i];
      const body = { prompt: o.promptForm === 'tokens' ? q.ids : q.text, max_tokens: 2, stream: true,
        stream_options: { include_usage: true } };
      const rec = await sendOne(agent, port, body, {});
      if (!rec.ok) throw new Error(`warm-up request to port ${port} failed: ${rec.error}`);
    }));
  }
  await Promise.all(ports.map((port) => new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/reset_prefix_cache', agent },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve()
          : reject(new Error(`reset_prefix_cache on port ${port}: HTTP ${res.statusCode}`))));
      });
    req.on('error', reject);
    req.end();
  })));
  agent.destroy();
}

function median(xs) {
  const s = xs.filter((x) => typeof x === 'number').sort((a, b) => a - b);
  if (s.length === 0) return null;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

// Several runs of one point: the median of every numeric field.
function medianOf(results) {
  if (results.length === 1) return results[0];
  const out = Object.assign({}, results[0]);
  for (const k of Object.keys(out)) {
    if (typeof out[k] === 'number' && !['workers', 'prefixes', 'concurrency', 'requests', 'frontends'].includes(k)) {
      out[k] = median(results.map((r) => r[k]));
    }
  }
  if (results[0].emulator) {
    // the clock of every run must have held, not the median one
    out.emulator = Object.assign({}, results[0].emulator, {
      lateness_p99_ms: Math.max(...results.map((r) => r.emulator.lateness_p99_ms)),
      lateness_max_ms: Math.max(...results.map((r) => r.emulator.lateness_max_ms)),
      preemptions: median(results.map((r) => r.emulator.preemptions)),
      clock_ok: results.every((r) => r.emulator.clock_ok),
    });
  }
  if (results[0].steady) {
    out.steady = Object.assign({}, results[0].steady);
    for (const k of Object.keys(out.steady)) {
      out.steady[k] = median(results.map((r) => (r.steady ? r.steady[k] : null)));
    }
  }
  if (results[0].per_frontend) {
    out.per_frontend = results[0].per_frontend.map((pf, f) => {
      const m = Object.assign({}, pf);
      for (const k of Object.keys(m)) {
        if (typeof m[k] === 'number' && k !== 'frontend') {
          m[k] = median(results.map((r) => (r.per_frontend ? r.per_frontend[f][k] : null)));
        }
      }
      return m;
    });
  }
  if (results[0].events_gap) {
    out.events_gap = { at_ms: median(results.map((r) => r.events_gap.at_ms)),
      batches_lost: results[0].events_gap.batches_lost, phases: {} };
    for (const [k, p] of Object.entries(results[0].events_gap.phases)) {
      out.events_gap.phases[k] = {};
      for (const f of Object.keys(p)) out.events_gap.phases[k][f] = median(results.map((r) => r.events_gap.phases[k][f]));
    }
  }
  // a server stale in any run flags the point
  out.stale_at_start = [].concat(...results.map((r) => r.stale_at_start || []));
  out.each_run = results.map((r) => { const c = Object.assign({}, r); delete c.each_run; return c; });
  out.errors = results.reduce((a, r) => a + r.errors, 0);
  out.runs = results.length;
  return out;
}

module.exports = { LATENESS_LIMIT_MS, runPoint, medianOf, stopAll, singleTokenWords, staleServers, ttftDecode, splitter };
