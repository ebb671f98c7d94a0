#!/usr/bin/env node
'use strict';
// Issue #18's robustness set as one table: for each scenario, each
// router's steady figures as medians over its seeds, and its requests/s
// and TTFT p99 against a reference router's (Dynamo) seed by seed.
//
//   node bench/robustness_table.js [--reference dynamo] [--out FILE.md]
//       ROWS.jsonl...
//
// A row is {scenario, router, seed, row}, row being kvbench run --json's
// output (its steady figures: the first --skip requests not counted).
// A run whose emulator clock did not hold (step lateness over its bound)
// is counted, and marked in the table.

const fs = require('node:fs');
const { parseArgs } = require('node:util');

const SCENARIOS = [
  ['zipf', 'skewed popularity (`--prefixes 24 --zipf 1.1`)'],
  ['burst', 'a burst of a new prefix (`--prefixes 24 --burst 0.4:144`)'],
  ['engine-down', 'engine 2 away for 15 s (`--prefixes 24 --engine-down 2@0.3:15000`)'],
  ['turns', 'conversations (`--prefixes 12 --turns 4`)'],
  ['engine-scale', 'unequal engines (`--prefixes 12 --engine-scale 1,1,1,1,0.5,0.5`)'],
];

const { median } = require('./floor_tables');

function fmt(x, digits) {
  return x === null || x === undefined ? '' : x.toFixed(digits);
}

// each run's steady figures, keyed scenario -> router -> seed
function collect(files) {
  const runs = new Map();
  for (const f of files) {
    for (const line of fs.readFileSync(f, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const x = JSON.parse(line);
      const s = x.row && x.row.steady;
      if (!s || !x.scenario || !x.router) continue;
      if (!runs.has(x.scenario)) runs.set(x.scenario, new Map());
      const byRouter = runs.get(x.scenario);
      if (!byRouter.has(x.router)) byRouter.set(x.router, new Map());
      byRouter.get(x.router).set(x.seed, {
        hit: s.request_hit_rate,
        p50: s.ttft_p50_ms,
        p99: s.ttft_p99_ms,
        rps: s.requests_per_s,
        errors: x.row.errors || 0,
        late: x.row.emulator && x.row.emulator.clock_ok === false,
        // the in-flight weight each frontend ended with (ttft_decode=auto)
        decode: Array.isArray(x.row.ttft_decode)
          ? x.row.ttft_decode.map((d) => d.tokens).join('+') : null,
      });
    }
  }
  return runs;
}

function table(runs, reference) {
  const out = [
    '| scenario | router | hit rate | TTFT p50 / p99 ms | req/s | req/s vs ' + reference +
      ' | p99 vs ' + reference + ' | p99 vs ' + reference + ', seed by seed | errors | late runs | in-flight weight at the end, seed by seed |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const order = SCENARIOS.map(([k]) => k).concat([...runs.keys()].filter((k) => !SCENARIOS.some(([s]) => s === k)));
  for (const key of order) {
    const byRouter = runs.get(key);
    if (!byRouter) continue;
    const label = (SCENARIOS.find(([k]) => k === key) || [key, key])[1];
    const ref = byRouter.get(reference);
    const routers = [...byRouter.keys()].sort((a, b) => (a === reference ? -1 : b === reference ? 1 : a.localeCompare(b)));
    routers.forEach((router, i) => {
      const seeds = byRouter.get(router);
      const rs = [...seeds.values()];
      const m = (f) => median(rs.map((r) => r[f]));
      let vsRps = '', vsP99 = '', bySeed = '';
      if (ref && router !== reference) {
        const refRps = median([...ref.values()].map((r) => r.rps));
        const refP99 = median([...ref.values()].map((r) => r.p99));
        vsRps = refRps ? fmt(m('rps') / refRps, 2) + 'x' : '';
        vsP99 = refP99 ? fmt(m('p99') / refP99, 2) : '';
        bySeed = [...seeds.keys()].sort().map((seed) => {
          const a = seeds.get(seed), b = ref.get(seed);
          return a && b && b.p99 ? fmt(a.p99 / b.p99, 2) : '-';
        }).join(' / ');
      }
      out.push(`| ${i === 0 ? label : ''} | ${router} | ${fmt(100 * m('hit'), 1)}% | ` +
        `${fmt(m('p50'), 0)} / ${fmt(m('p99'), 0)} | ${fmt(m('rps'), 2)} | ${vsRps} | ${vsP99} | ${bySeed} | ` +
        `${rs.reduce((a, r) => a + r.errors, 0)} | ${rs.filter((r) => r.late).length} of ${rs.length} | ` +
        `${rs.some((r) => r.decode) ? [...seeds.keys()].sort().map((seed) => seeds.get(seed).decode || '-').join(' / ') : ''} |`);
    });
  }
  return out.join('\n') + '\n';
}

function main() {
  const { values, positionals } = parseArgs({
    options: { reference: { type: 'string', default: 'dynamo' }, out: { type: 'string', default: '' } },
    allowPositionals: true,
  });
  if (!positionals.length) {
    process.stderr.write('usage: robustness_table.js [--reference R] [--out FILE.md] ROWS.jsonl...\n');
    process.exit(2);
  }
  const text = '<!-- written by bench/robustness_table.js; medians over seeds, steady figures -->\n\n' +
    table(collect(positionals), values.reference);
  if (values.out) fs.writeFileSync(values.out, text);
  process.stdout.write(text);
}

if (require.main === module) main();

module.exports = { collect, table };
