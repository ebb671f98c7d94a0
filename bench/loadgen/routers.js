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

function routerTable(top, build) {
  const kvrouteSo = path.join(build, 'ngx_http_kvroute_module.so');
  return {
    round_robin: { upstream: [] },
    random: { upstream: ['random;'] },
    hash: { upstream: ['hash $kvbench_prefix consistent;'] },
    // kvroute (approximate mode: predicts from its own routing decisions)
    'kvroute-approx': { modules: [kvrouteSo], upstream: ['kvroute mode=approx;'] },
  };
}

module.exports = { routerTable };
