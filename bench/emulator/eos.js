'use strict';
// Where the emulated model ends its answer on its own (its end-of-sequence
// token). A real model's answers differ in length; one length for every
// request leaves out the long answers that hold an engine's blocks and
// slots while others wait (BENCHMARKS §3.5).
//
// The natural length is a function of the prompt alone, uniform over
// [lo, hi], so every router sends the same request to a model that answers
// it at the same length, as a seeded model would. The client's max_tokens
// cuts it, as vLLM's does (finish_reason 'length' rather than 'stop').

// FNV-1a over the prompt's token ids, mapped to [0, 1)
function promptFraction(ids) {
  let h = 0x811c9dc5;
  for (let i = 0; i < ids.length; i++) {
    let x = ids[i] >>> 0;
    for (let b = 0; b < 4; b++) {
      h ^= x & 0xff;
      h = Math.imul(h, 0x01000193) >>> 0;
      x >>>= 8;
    }
  }
  return h / 4294967296;
}

// range: { lo, hi } or null (no end of its own: every answer runs to
// max_tokens)
function outputLength(promptIds, maxTokens, range) {
  if (!range) return maxTokens;
  const natural = range.lo + Math.floor(promptFraction(promptIds) * (range.hi - range.lo + 1));
  return Math.min(maxTokens, natural);
}

// "lo-hi" (--eos-tokens) as a range; '' is none
function parseRange(s) {
  if (!s) return null;
  const m = /^(\d+)-(\d+)$/.exec(s);
  if (!m || Number(m[1]) < 1 || Number(m[2]) < Number(m[1])) {
    throw new Error(`--eos-tokens: expected LO-HI with 1 <= LO <= HI, got ${JSON.stringify(s)}`);
  }
  return { lo: Number(m[1]), hi: Number(m[2]) };
}

// The fit's pair (fit.js): the client's max_tokens m, and how far below it
// the model's answers reach, s in [0, 1]: lengths uniform over
// [m - floor(s (m - 1)), m]. s = 0 is every answer m long.
function rangeOfSpread(maxTokens, spread) {
  if (!spread) return null;
  return { lo: maxTokens - Math.floor(Math.min(1, spread) * (maxTokens - 1)), hi: maxTokens };
}

// rangeOfSpread's inverse for a range whose top is max_tokens (0 for none):
// the middle of the spreads that make it, clear of the floor's rounding
function spreadOfRange(range) {
  if (!range || range.hi <= 1) return 0;
  return Math.min(1, (range.hi - range.lo + 0.5) / (range.hi - 1));
}

module.exports = { outputLength, promptFraction, parseRange, rangeOfSpread, spreadOfRange };
