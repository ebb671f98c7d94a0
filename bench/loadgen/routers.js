'use strict';
// The routers kvbench can put in front of the engines, as nginx upstream
// configurations. Adding a router = adding one entry:
//   upstream:   directive(s) placed first inside `upstream kvbench_engines {}`
//               (this and http/location may also be a function of
//               {enginePorts, eventsPorts, port} returning the list, e.g. to
//               point a KV-event subscriber at tcp://127.0.0.1:eventsPorts[i])
//   modules:    paths of dynamic modules to load_module (checked to exist)
//   http:       extra directives at http{} level (optional)
//   location:   extra directives inside `location /` (optional)
//   emulatorArgs: emulator options the router needs (e.g. ['--kv-events', 'zmq'])
// `top` is the repository root and `build` its build directory.
//
// The load generator sends the prefix type of every request in the header
// X-Kvbench-Prefix; `$kvbench_prefix` holds it (for the hash router, an
// oracle-ish baseline that pins each prefix type to one engine).

const path = require('node:path');

// opts: capacityBlocks and blockSize of the emulated engines, which kvroute
// is told as an operator would tell it (capacity= is vLLM's "# GPU blocks").
function routerTable(top, build, opts = {}) {
  const kvrouteSo = path.join(build, 'ngx_http_kvroute_module.so');
  const cap = opts.capacityBlocks || 585;
  const bs = opts.blockSize || 16;
  const kv = (args, emulatorArgs) => ({ modules: [kvrouteSo],
    upstream: [`kvroute ${args} capacity=${cap} block_size=${bs}`
               + `${opts.kvrouteArgs ? ' ' + opts.kvrouteArgs : ''};`],
    emulatorArgs });
  // engine i publishes KV events on events-base-port + i, HTTP on base-port + i
  const offset = (opts.eventsBasePort || 20081) - (opts.basePort || 18001);
  // and answers replay requests on replay-base-port + i (kvbench: events
  // base + 100), so kvroute's helper, which subscribes after the warm-up,
  // rebuilds each engine's index from 0 instead of marking it stale
  const sign = (x) => `${x >= 0 ? '+' : ''}${x}`;
  const replay = opts.replayBasePort ? ` replay_port=${sign(opts.replayBasePort - (opts.basePort || 18001))}` : '';
  const events = `mode=kv events_port=${sign(offset)}${replay}`;
  return {
    round_robin: { upstream: [] },
    random: { upstream: ['random;'] },
    // the seed's baseline, a Kubernetes Service: a random engine per client
    // connection (each kvbench client keeps one, and names itself with a
    // random X-Kvbench-Client a run)
    random_conn: { upstream: ['hash $http_x_kvbench_client;'] },
    // NVIDIA Dynamo's KV router on the engines' KV events, run by the load
    // generator itself (loadgen/dynamo.js; no nginx): the seed's "KV routing"
    dynamo: { bench: 'dynamo', upstream: [], emulatorArgs: ['--kv-events', 'zmq'] },
    // the other peers' published policies, also in the load generator
    // (loadgen/peers.js): llm-d's precise prefix-cache scorer on events and
    // /metrics, SGLang's cache_aware on its own tree, and the partition
    // oracle (each prefix type pinned to its own engines)
    llmd: { bench: 'llmd', upstream: [], emulatorArgs: ['--kv-events', 'zmq'] },
    sglang: { bench: 'sglang', upstream: [] },
    partition: { bench: 'partition', upstream: [] },
    hash: { upstream: ['hash $kvbench_prefix consistent;'] },
    // kvroute, approximate mode (predicts from its own routing decisions):
    // its default policy (ttft since 2026-12-02), its rule-based policy
    // (policy=kvroute, the default before 2026-11-30 evening), NVIDIA
    // Dynamo's default cost, and policy=cost (the default until 2026-12-02)
    'kvroute-approx': kv('mode=approx'),
    // and with the engines' load and speeds from their /metrics, as
    // metrics=on gives them (issue #18 floor 4 with the one configuration)
    // (ttft_decode 600: the default with the speeds until 2026-12-05; the
    // name keeps its configuration)
    'kvroute-approx-metrics': kv('mode=approx metrics=on ttft_decode=600'),
    // and with today's default, ttft_decode 300 (BENCHMARKS §2.40)
    'kvroute-approx-metrics-dec300': kv('mode=approx metrics=on ttft_decode=300'),
    // and with the weight learned from the requests as they end, as
    // metrics=on gives it since 2026-12-06 (BENCHMARKS §2.46-§2.48)
    'kvroute-approx-metrics-decauto': kv('mode=approx metrics=on metrics_speed=on ttft_decode=auto ttft_own=50'),
    'kvroute-rules': kv('mode=approx policy=kvroute'),
    'kvroute-dynamo': kv('mode=approx policy=dynamo'),
    'kvroute-cost': kv('mode=approx policy=cost'),
    'kvroute-kv-cost': kv(`${events} policy=cost`, ['--kv-events', 'zmq']),
    'kvroute-kv-rules': kv(`${events} policy=kvroute`, ['--kv-events', 'zmq']),
    // kv mode: the index follows the emulated engines' KV events
    'kvroute-kv': kv(events, ['--kv-events', 'zmq']),
    'kvroute-kv-dynamo': kv(`${events} policy=dynamo`, ['--kv-events', 'zmq']),
    // and with the engines' /metrics: their load, and their step speed
    // from the inter-token latency (metrics_speed, on with metrics=on); a
    // request in flight as 1,200 prompt tokens, the default with speeds
    // until 2026-12-03 (since then 600: kvroute-kv-speed600)
    'kvroute-kv-metrics': kv(`${events} metrics=on metrics_speed=on ttft_decode=1200`, ['--kv-events', 'zmq']),
    'kvroute-kv-metrics-nospeed': kv(`${events} metrics=on metrics_speed=off`, ['--kv-events', 'zmq']),
    // the speeds with a request in flight weighed as 600 prompt tokens of
    // prefill (ttft_decode; the default with speeds since 2026-12-03):
    // the policy simulator's best on the seed grid with speeds (BENCHMARKS
    // §2.26); and the speeds alone, the engines' load not taken
    // (metrics_load=off)
    // (ttft_own=0: the default with speeds until 2026-12-04, §2.31)
    'kvroute-kv-speed600': kv(`${events} metrics=on metrics_speed=on ttft_decode=600 ttft_own=0`, ['--kv-events', 'zmq']),
    // and this request's own output weighed at each engine's speed, 50
    // prompt tokens of prefill a token (ttft_own; BENCHMARKS §2.31): what
    // metrics=on gives since 2026-12-04
    'kvroute-kv-own50': kv(`${events} metrics=on metrics_speed=on ttft_decode=600 ttft_own=50`, ['--kv-events', 'zmq']),
    // and a request in flight weighed as 300 prompt tokens instead of 600
    // (ttft_decode; BENCHMARKS §2.40): what metrics=on gives since
    // 2026-12-05
    'kvroute-kv-own50-dec300': kv(`${events} metrics=on metrics_speed=on ttft_decode=300 ttft_own=50`, ['--kv-events', 'zmq']),
    // the same with a request in flight weighed as 1200 prompt tokens:
    // for engines whose every decoding request slows a step by a fifth or
    // more (BENCHMARKS §2.45)
    'kvroute-kv-own50-dec1200': kv(`${events} metrics=on metrics_speed=on ttft_decode=1200 ttft_own=50`, ['--kv-events', 'zmq']),
    // the same with the weight learned from the requests as they end
    // (ttft_decode=auto; BENCHMARKS §2.46)
    'kvroute-kv-own50-decauto': kv(`${events} metrics=on metrics_speed=on ttft_decode=auto ttft_own=50`, ['--kv-events', 'zmq']),
    'kvroute-kv-speedonly': kv(`${events} metrics=on metrics_speed=on metrics_load=off ttft_decode=1200`, ['--kv-events', 'zmq']),
    'kvroute-kv-speedonly600': kv(`${events} metrics=on metrics_speed=on metrics_load=off ttft_decode=600`, ['--kv-events', 'zmq']),
    // kv mode with a miss on a full cache weighed as 4 prompts instead of
    // 2 (ttft_evict): keeps prefixes home longer under a queue (§2.23)
    'kvroute-kv-evict4': kv(`${events} ttft_evict=4`, ['--kv-events', 'zmq']),
    // policy=ttft (prefill ahead, load, KV room), in both modes
    'kvroute-kv-ttft': kv(`${events} policy=ttft`, ['--kv-events', 'zmq']),
    'kvroute-approx-ttft': kv('mode=approx policy=ttft'),
    // the baselines through kvroute itself (bodies read and parsed alike)
    'kvroute-rr': kv('mode=round_robin'),
    // data parallelism (kvbench --dp-ranks R: each engine fronts R ranks,
    // rank r of engine i publishing on events-base-port + i x R + r): the
    // index a slot per rank, the rank sent in X-data-parallel-rank; and the
    // same index without the header (the engine balances its ranks itself)
    'kvroute-kv-dp': dp(true),
    'kvroute-kv-dp-nohdr': dp(false),
  };

  function dp(header) {
    const R = opts.dpRanks || 1;
    const E = opts.eventsBasePort || 20081;
    const P = opts.replayBasePort || 0;
    return {
      modules: [kvrouteSo],
      upstream: ({ enginePorts }) => [`kvroute mode=kv events_ranks=${R} capacity=${cap} block_size=${bs}`
        + `${opts.kvrouteArgs ? ' ' + opts.kvrouteArgs : ''};`].concat(enginePorts.map((port, i) =>
        `kvroute_events 127.0.0.1:${port} tcp://127.0.0.1:${E + i * R}`
        + (P ? ` replay=tcp://127.0.0.1:${P + i * R};` : ';'))),
      location: header ? ['proxy_set_header X-data-parallel-rank $kvroute_dp_rank;'] : [],
      emulatorArgs: ['--kv-events', 'zmq'],
    };
  }
}

// What a router is, in one line for result rows: its upstream directives
// (the exact kvroute line), or which of the load generator's own routers.
function describeRouter(entry) {
  if (!entry) return null;
  if (entry.bench) return `(the load generator's ${entry.bench} router, loadgen/peers.js or dynamo.js)`;
  const up = typeof entry.upstream === 'function'
    ? entry.upstream({ enginePorts: [], eventsPorts: [], port: 0 }) : entry.upstream;
  return up.join(' ') || '(nginx round robin)';
}

module.exports = { routerTable, describeRouter };
