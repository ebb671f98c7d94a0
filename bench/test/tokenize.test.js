'use strict';
// Tokenization parity with the Hugging Face tokenizer for Qwen3: the ids
// and the chat render listed in shared/docs/tokenizer.md sections 10-11.

const test = require('node:test');
const assert = require('node:assert/strict');
const { TextTokenizer } = require('../emulator/tokenize');

const tk = new TextTokenizer({});

const SAMPLES = [
  ['Hello world', [9707, 1879]],
  ["I'm here, you're there; he'll go. She'D, THEY'RE, we'VE",
    [40, 2776, 1588, 11, 498, 2299, 1052, 26, 566, 3278, 728, 13, 2932, 27705, 11, 62493, 94153, 11, 582, 6, 4491]],
  ['你好，世界！今天天气很好。', [108386, 3837, 99489, 6313, 100644, 104307, 101243, 1773]],
  ['emoji: 😀👍🏽 🇺🇸 👨‍👩‍👧',
    [37523, 25, 90316, 144349, 145375, 11162, 229, 118, 145383, 61804, 101, 378, 235, 145233, 378, 235, 145665]],
  ['a  b   c    d\n\n\ne\t\tf \n g   ', [64, 220, 293, 256, 272, 262, 294, 1406, 68, 197, 1166, 715, 342, 262]],
  ['<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n', [151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198]],
  ['Café naïve e\u0301 Å', [34, 2577, 963, 94880, 586, 3958, 79252]],
];

test('Qwen3 ids equal the tokenizer.md sample table', async () => {
  for (const [text, ids] of SAMPLES) {
    assert.deepEqual(Array.from(await tk.encode(text, true)), ids, JSON.stringify(text));
  }
});

test('digits are one token each', async () => {
  const ids = Array.from(await tk.encode('numbers 1234567 and 3.14159', true));
  const run = [220, 16, 17, 18, 19, 20, 21, 22];
  const at = ids.indexOf(220);
  assert.deepEqual(ids.slice(at, at + run.length), run);
});

test('Qwen3 adds no special tokens with add_special_tokens true', async () => {
  assert.deepEqual(Array.from(await tk.encode('Hello world', true)),
    Array.from(await tk.encode('Hello world', false)));
});

const CONV = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: "Hello! What's 2+2?" },
];
const CONV_IDS = [151644, 8948, 198, 2610, 525, 264, 10950, 17847, 13, 151645, 198, 151644, 872, 198,
  9707, 0, 3555, 594, 220, 17, 10, 17, 30, 151645, 198, 151644, 77091, 198];

test('chat: Qwen3 template render and ids', async () => {
  assert.equal(tk.renderChat({ messages: CONV }),
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello! What's 2+2?" +
    '<|im_end|>\n<|im_start|>assistant\n');
  assert.deepEqual(Array.from(await tk.encodeChat({ messages: CONV })), CONV_IDS);
});

test('chat: chat_template_kwargs enable_thinking=false adds the empty think block', async () => {
  const ids = Array.from(await tk.encodeChat({ messages: CONV, chat_template_kwargs: { enable_thinking: false } }));
  assert.deepEqual(ids, CONV_IDS.concat([151667, 271, 151668, 271]));
});

test('chat: text parts are joined with a newline, null content is empty', async () => {
  const parts = { messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }] };
  const joined = { messages: [{ role: 'user', content: 'a\nb' }] };
  assert.equal(tk.renderChat(parts), tk.renderChat(joined));
  assert.equal(tk.renderChat({ messages: [{ role: 'user', content: null }] }),
    '<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n');
  assert.throws(() => tk.renderChat({ messages: [] }), /non-empty/);
  assert.throws(() => tk.renderChat({ messages: [{ role: 'user', content: [{ type: 'image_url' }] }] }),
    /not supported/);
});

test('add_generation_prompt false leaves the assistant header out', () => {
  const r = tk.renderChat({ messages: CONV, add_generation_prompt: false });
  assert.ok(!r.endsWith('<|im_start|>assistant\n'));
});
