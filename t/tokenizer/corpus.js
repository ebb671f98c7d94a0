// Seeded generator of tokenizer test strings (docs/tokenizer.md 10): random
// strings of 1-12 fragments drawn from pools of the hard cases, plus long
// single pieces.  Deterministic for a given seed.

'use strict';

function mulberry32(seed) {
  let a = seed >>> 0;
  return function () {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const cp = (...c) => String.fromCodePoint(...c);

const SPACES = [' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', '\r', ' \n ',
  '\u00a0', '\u2003', '\u3000', '\u0085', '\u180e', '\u200b', '\u2028',
  '\u2029', '\u000b', '\u000c', '\ufeff', '\u1680', '\u202f', '\u205f',
  '\u2000', '\u200a', ' \u00a0 ', '\t\t', '\n\t', '    ', '\u3000\u3000',
  '\n \n', ' \r\n'];

const WORDS = ['hello', 'world', 'The', 'quick', 'brown', 'fox', 'tokenizer',
  'ILLUSTRATION', 'naïve', 'Café', 'über', 'straße', 'İstanbul', 'ſa',
  'ﬁne', 'résumé', 'x', 'a', 'I', 'ılmış', 'çalışıyorum', 'Ελληνικά',
  'Привет', 'мир', 'שלום', 'مرحبا', 'नमस्ते', 'สวัสดี', 'こんにちは',
  'カタカナ', '你好', '世界', '今天天气很好', '한국어', 'Tiếng Việt', 'ǅemal',
  'Ⅻ', 'ﾊﾝｶｸ', 'ｆｕｌｌ', '𝔘𝔫𝔦', '𝒳', 'ᏣᎳᎩ', 'ꯃꯤꯇꯩ', 'ᠮᠣᠩᠭᠣᠯ'];

const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S",
  "'T", "'RE", "'VE", "'M", "'LL", "'D", "'Re", "'vE", "'ſ", "n't", "N'T",
  "it's", "IT'S", "we'VE", "they'Re", "I'm", "'", "''", "'x", "' s",
  "don't", "DON'T", "y'all", "'ll've"];

const DIGITS = ['0', '7', '42', '123', '1234', '12345678', '3.14159',
  '1,000,000', '١٢٣', '٤٥٦٧', '۱۲۳', '१२३४', '๑๒๓', '①②③', '½', '²', '³',
  'Ⅻ', '𝟙𝟚𝟛', '０１２', '𑁦𑁧', '፩፪', '〡〢', '2024-06-01', '0x1F', '1e-7'];

const PUNCT = ['.', ',', '!', '?', ';', ':', '...', '—', '–', '-', '(', ')',
  '[', ']', '{', '}', '<', '>', '"', '“', '”', '‘', '’', '«', '»', '、', '。',
  '，', '！', '？', '@', '#', '$', '%', '^', '&', '*', '+', '=', '|', '\\',
  '/', '~', '`', '_', '§', '¶', '•', '→', '∑', '∞', '≠', '©', '®', '™',
  '\u00ad', '\u007f', '\u0000', '\u0001', '\u001f'];

const EMOJI = ['😀', '👍', '👍🏽', '👍🏿', '🇺🇸', '🇯🇵', '🏳️‍🌈',
  '👨‍👩‍👧', '👨‍👩‍👧‍👦', '🧑🏽‍💻', '❤️', '✌️', '🔥', '🤖', '🙏🏻', '🏴󠁧󠁢󠁳󠁣󠁴󠁿',
  '#️⃣', '1️⃣', '☕', '⚡', '🫠', '🪿'];

const COMBINING = ['e\u0301', 'a\u0308', 'A\u030a', 'o\u0302\u0323',
  'n\u0303', 'c\u0327', 'e\u0323\u0302', 'q\u0307\u0323', '\u0301',
  '\u0323\u0301', 'Å', 'Ω', 'ẛ̣', '\u1100\u1161\u11a8', '각',
  'ক\u09bc\u09be', 'अ\u093c', 'ड़', '\u0958', 'a\u0338', '\u2adc',
  'ä\u0304', 'x\u20dd', 'g\u0300\u0301', 'Z\u0334', 'e\u1dfa\u0323',
  'a\u07fd\u0301', '\u{11935}\u{11930}', '\u{11938}', 'b\u0c3c\u0301',
  'i\u0307\u0301', 'ﬀ', '\u0344', '\u0f73', 'א\u05b7'];

const URLS = ['https://example.com/path?q=1&r=2#frag',
  'http://localhost:8080/v1/chat/completions', 'user@example.org',
  'ftp://files.example.net/pub/file.tar.gz', 'www.Example.COM',
  'https://ja.wikipedia.org/wiki/東京', '/usr/local/bin/python3'];

const CODE = ['def f(x):\n    return x * 2\n', 'int main(void) { return 0; }',
  'for (i = 0; i < n; i++) {', '    if x == None:', '\t\tfoo();\n',
  'const a = [1, 2, 3];', '#include <stdio.h>', '    # comment\n',
  '{"key": "value", "n": 12}', 'SELECT * FROM t WHERE id=1;', '</div>',
  '<a href="x">', '$ ls -la | grep "\\.c$"', 'x+=1', 'a->b', '::', '!==',
  'λx.x', '        ', '\n\n\n\n', 'print("héllo")'];

function pick(rng, list) {
  return list[Math.floor(rng() * list.length)];
}

// a code point anywhere in Unicode, surrogates excluded
function anyCodePoint(rng) {
  for (;;) {
    const r = rng();
    let c;
    if (r < 0.4) {
      c = Math.floor(rng() * 0x3000);
    } else if (r < 0.7) {
      c = Math.floor(rng() * 0x10000);
    } else if (r < 0.9) {
      c = 0x10000 + Math.floor(rng() * 0x30000);
    } else {
      c = Math.floor(rng() * 0x110000);
    }
    if (c < 0xd800 || c > 0xdfff) {
      return c;
    }
  }
}

// code points from the edge tables: Unicode 15-16 letters and numbers,
// NFC pass-through marks, White_Space and U+180E
const EDGE = [0x1c89, 0xa7cb, 0xa7dc, 0x105c0, 0x10d4a, 0x10ec2, 0x11380,
  0x113b7, 0x11bc0, 0x11f02, 0x13460, 0x143fa, 0x16100, 0x16d40, 0x18cff,
  0x1b132, 0x1df25, 0x1e030, 0x1e4d0, 0x1e5d0, 0x2b739, 0x2ebf0, 0x31350,
  0x323af, 0x10d40, 0x116d0, 0x11bf0, 0x11f50, 0x16130, 0x16d70, 0x1ccf0,
  0x1d2c0, 0x1e4f0, 0x1e5f1, 0x07fd, 0x0898, 0x08ca, 0x09fe, 0x0c3c, 0x0d3b,
  0x0eba, 0x1715, 0x1abf, 0x1dfa, 0xa82c, 0x10d24, 0x10eab, 0x10efd,
  0x10f46, 0x10f82, 0x11070, 0x1133b, 0x1145e, 0x11839, 0x11930, 0x11935,
  0x11938, 0x1193d, 0x11943, 0x119e0, 0x11a34, 0x11a47, 0x11a99, 0x11d42,
  0x11d97, 0x11f41, 0x16ff0, 0x1e08f, 0x1e130, 0x1e2ae, 0x1e2ec, 0x1e4ec,
  0x180e, 0x0085, 0x1680, 0x2028, 0x17f, 0x212a, 0x130, 0x131, 0xfb01];

function specialPieces(tokens) {
  const out = [];
  for (const t of tokens) {
    out.push(t);
    if (t.length > 3) {
      out.push(t.slice(0, -1), t.slice(1), t.slice(0, t.length >> 1));
    }
  }
  return out;
}

function longPiece(rng) {
  const n = 100 + Math.floor(rng() * 3000);
  switch (Math.floor(rng() * 9)) {
    case 0: return 'a'.repeat(n);
    case 1: return 'ab'.repeat(n >> 1);
    case 2: return pick(rng, WORDS).repeat(1 + (n >> 4));
    case 3: return '你好世界天气'.repeat(1 + (n >> 4));
    case 4: {
      const b64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
      let s = '';
      for (let i = 0; i < n; i++) s += b64[Math.floor(rng() * 64)];
      return s;
    }
    case 5: return ' '.repeat(n) + pick(rng, WORDS);
    case 6: return '1234567890'.repeat(1 + (n >> 4));
    case 7: return '!@#$%^&*()'.repeat(1 + (n >> 4));
    default: return '\n'.repeat(n >> 3) + ' \n'.repeat(n >> 3);
  }
}

function fragment(rng, specials) {
  const r = Math.floor(rng() * 14);
  switch (r) {
    case 0: return pick(rng, SPACES);
    case 1: return pick(rng, WORDS);
    case 2: return pick(rng, CONTRACTIONS);
    case 3: return pick(rng, DIGITS);
    case 4: return pick(rng, PUNCT);
    case 5: return pick(rng, EMOJI);
    case 6: return pick(rng, COMBINING);
    case 7: return pick(rng, URLS);
    case 8: return pick(rng, CODE);
    case 9: return specials.length ? pick(rng, specials) : '<|x|>';
    case 10: {
      let s = '';
      const n = 1 + Math.floor(rng() * 4);
      for (let i = 0; i < n; i++) s += cp(anyCodePoint(rng));
      return s;
    }
    case 11: return cp(pick(rng, EDGE));
    case 12: return pick(rng, WORDS) + pick(rng, CONTRACTIONS);
    default: return pick(rng, WORDS).toUpperCase();
  }
}

// returns [{text}|{prompt}] objects; about 1 in 10 is a prompt
function generate(seed, count, specialTokens) {
  const rng = mulberry32(seed);
  const specials = specialPieces(specialTokens);
  const out = [];
  for (let i = 0; i < count; i++) {
    let s = '';
    if (rng() < 0.01) {
      s = longPiece(rng);
    } else {
      const n = 1 + Math.floor(rng() * 12);
      for (let j = 0; j < n; j++) {
        s += fragment(rng, specials);
        if (rng() < 0.2) s += ' ';
      }
    }
    out.push(rng() < 0.1 ? { prompt: s } : { text: s });
  }
  return out;
}

module.exports = { generate, mulberry32 };
