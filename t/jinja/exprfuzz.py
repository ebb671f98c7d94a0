#!/usr/bin/env python3
"""Random small templates: kvr_jinja against Python Jinja2.

Generates seeded random expressions (literals, variables, operators,
filters, tests, str/dict methods, subscripts, slices, conditionals) inside
{{ }}, {% if %}, {% for %} and {% set %}, renders each with Jinja2 set up
like transformers (oracle.py) and with the C CLI (one template per line),
and compares:
  - both render: the texts must be equal;
  - Python raises: C must fail (any status);
  - C refuses (compile error, unsupported, limit) what Python renders:
    a fallback, allowed;
  - C reports a python error (status -1 or -2) where Python renders: a
    mismatch.

usage: exprfuzz.py --cli BUILD/kvr-render-test --config tokenizer_config.json
                   [--count N] [--seed S]
"""

import argparse
import copy
import json
import warnings
import random
import subprocess
import sys
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle                                       # noqa: E402


VARS = {"s": "Ab c,d ", "t": "\n x\u00e9 \n", "n": 7, "m": -3, "f": 2.5,
        "g": 1e-7, "l": [3, "a", None, 1.5], "k": ["b", "a", "c"],
        "d": {"k": 1, "items": "x", "z": [1, 2]}, "e": "", "z": None,
        "b": True, "c": False, "w": ["x y", "z"]}

LITERALS = ["0", "1", "2", "-1", "10", "0.5", "1.0", "2.5", "1e-7", "1e20",
            "''", "'a'", "'ab c'", "' x '", "'\u00e9'", "'\\n'", "'a,b'",
            "none", "true", "false", "[]", "[1, 2]", "['b', 'a']",
            "{'k': 1}", "{}", "(1, 'a')", "range(3)", "'A'", "3.0"]

NAMES = list(VARS) + ["u", "loop"]

BINOPS = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">", "<=",
          ">=", "in", "not in", "and", "or", "**"]

FILTERS = ["length", "count", "trim", "upper", "lower", "title",
           "capitalize", "string", "first", "last", "list", "join",
           "join(', ')", "reverse", "sort", "sort(reverse=true)",
           "default('dv')", "default('dv', true)", "int", "float", "abs",
           "tojson", "tojson(indent=2)", "tojson(sort_keys=true)", "items",
           "sum", "map('string')|list", "select|list", "reject|list",
           "replace('a', 'X')", "indent(2)", "trim('x ')", "dictsort",
           "selectattr('k')|list", "map(attribute='k')|list",
           "reject('none')|list", "select('string')|list", "list|length"]

TESTS = ["defined", "undefined", "none", "string", "number", "integer",
         "float", "mapping", "iterable", "sequence", "true", "false", "odd",
         "even", "divisibleby 2", "eq 1", "in [1, 2, 'a']", "lower",
         "upper", "boolean", "sameas none", "gt 0", "callable"]

METHODS = ["strip()", "lstrip('A')", "rstrip()", "split()", "split(',')",
           "startswith('A')", "endswith(' ')", "replace('b', 'B')",
           "upper()", "lower()", "title()", "find('c')", "count('b')",
           "join(k)", "get('k')", "get('q', 5)", "items()|list",
           "keys()|list", "values()|list", "strip('\\n ')", "rfind('c')",
           "splitlines()", "rsplit(',')", "isdigit()", "capitalize()",
           "removeprefix('A')", "index(1)"]


def expr(rng, depth):
    r = rng.random()
    if depth <= 0 or r < 0.25:
        return rng.choice(LITERALS) if rng.random() < 0.5 \
            else rng.choice(NAMES)
    if r < 0.45:
        return "%s %s %s" % (expr(rng, depth - 1), rng.choice(BINOPS),
                             expr(rng, depth - 1))
    if r < 0.55:
        return "%s|%s" % (atom(rng, depth - 1), rng.choice(FILTERS))
    if r < 0.62:
        return "%s is %s%s" % (atom(rng, depth - 1),
                               rng.choice(["", "not "]), rng.choice(TESTS))
    if r < 0.72:
        return "%s.%s" % (atom(rng, depth - 1), rng.choice(METHODS))
    if r < 0.8:
        return "%s[%s]" % (atom(rng, depth - 1),
                           rng.choice(["0", "-1", "1", "'k'", "'items'",
                                       "5", "n"]))
    if r < 0.86:
        return "%s[%s]" % (atom(rng, depth - 1),
                           rng.choice(["1:", ":2", "::-1", "-2:", "1:3",
                                       "::2", ":-1", "5:"]))
    if r < 0.92:
        return "%s if %s else %s" % (expr(rng, depth - 1),
                                     expr(rng, depth - 1),
                                     expr(rng, depth - 1))
    if r < 0.96:
        return "not %s" % expr(rng, depth - 1)
    return "-%s" % atom(rng, depth - 1)


def atom(rng, depth):
    e = expr(rng, depth)
    if " " in e or e.startswith("-"):
        return "(%s)" % e
    return e


TEXT = [" ", "  ", "\t", "\n", "\n\n", " \n ", "a", "b c", "\r\n", "\r",
        "\u3000", "\u00a0\n", "x\n  "]


def ws_tag(rng, body):
    """a block tag with random whitespace modifiers around body"""
    left = rng.choice(["", "-", "+"])
    right = rng.choice(["", "-", "+"])
    return "{%" + left + " " + body + " " + right + "%}"


def ws_piece(rng, depth):
    r = rng.random()
    if depth <= 0 or r < 0.35:
        return rng.choice(TEXT)
    if r < 0.45:
        return "{{%s 'v' %s}}" % (rng.choice(["", "-"]), rng.choice(["", "-"]))
    if r < 0.55:
        return "{#%s c %s#}" % (rng.choice(["", "-", "+"]),
                               rng.choice(["", "-", "+"]))
    if r < 0.65:
        return ws_tag(rng, "set q = 1")
    inner = "".join(ws_piece(rng, depth - 1) for _ in range(rng.randint(0, 4)))
    if r < 0.8:
        return (ws_tag(rng, "if true") + inner + ws_tag(rng, "else")
                + rng.choice(TEXT) + ws_tag(rng, "endif"))
    return (ws_tag(rng, "for i in [1, 2]") + inner
            + ws_tag(rng, "endfor"))


STATEMENTS = [
    "{% set ns = namespace(a=0, l=[]) %}{% for x in E %}{% set ns.a = ns.a"
    " + 1 %}{% set ns.l = ns.l + [x] %}{% endfor %}{{ ns.a }}{{ ns.l }}",
    "{% set v = 1 %}{% for x in E %}{{ v }}{% set v = x %}{{ v }}"
    "{% endfor %}{{ v }}",
    "{% for x in E %}{% for y in E %}{{ loop.index }}{{ loop.first }}"
    "{{ loop.last }}{% if loop.previtem is defined %}p{{ loop.previtem }}"
    "{% endif %}{% endfor %}|{{ loop.revindex }}{{ loop.cycle(1, 2) }}"
    "{% endfor %}",
    "{% for x in E %}{% if x is string %}{% continue %}{% endif %}{{ x }}"
    "{% if loop.index > 2 %}{% break %}{% endif %}{% else %}none"
    "{% endfor %}",
    "{% macro mm(a, b=E) %}<{{ a }}|{{ b }}>{% endmacro %}{{ mm(E) }}"
    "{{ mm(1, b=E) }}{{ mm(E)|length }}",
    "{% set a, b = E %}{{ a }}/{{ b }}",
    "{% set blk %}{% for x in E %}{{ x }},{% endfor %}{% endset %}"
    "{{ blk|trim(',') }}{{ blk|length }}",
    "{% for k, v in E|items %}{{ k }}={{ v }};{% endfor %}",
    "{% for x in E if x %}{{ loop.length }}{{ x }}{% endfor %}",
]


def template(rng):
    if rng.random() < 0.15:
        stmt = rng.choice(STATEMENTS)
        while "E" in stmt:
            stmt = stmt.replace("E", atom(rng, rng.randint(0, 2)), 1)
        return stmt
    if rng.random() < 0.3:
        return "".join(ws_piece(rng, 3) for _ in range(rng.randint(1, 6)))
    e = expr(rng, rng.randint(1, 3))
    r = rng.random()
    if r < 0.6:
        return "{{ %s }}" % e
    if r < 0.75:
        return "{%% if %s %%}y{%% else %%}n{%% endif %%}" % e
    if r < 0.9:
        return ("{%% for x in %s %%}{{ loop.index }}{{ x }};{%% endfor %%}"
                % e)
    return "{%% set v = %s %%}[{{ v }}]" % e


def main():
    warnings.simplefilter("ignore")
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    templates = [template(rng) for _ in range(args.count)]
    request = {"messages": [], "chat_template_kwargs": VARS}

    lines = [json.dumps({"template": t, "request": request})
             for t in templates]
    proc = subprocess.run([args.cli, args.config],
                          input="\n".join(lines) + "\n",
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit("exprfuzz: CLI failed: %s" % proc.stderr)
    results = [json.loads(x) for x in proc.stdout.split("\n") if x]
    if len(results) != len(templates):
        sys.exit("exprfuzz: %d results for %d templates"
                 % (len(results), len(templates)))

    with open(args.config) as f:
        specials = oracle.special_tokens(json.load(f))
    variables = dict(specials)
    variables.update({"messages": [], "tools": None, "documents": None,
                      "add_generation_prompt": True})
    variables.update(VARS)

    same = both_fail = fallback = mismatch = 0
    for t, c in zip(templates, results):
        try:
            # a fresh copy: jinja's indent filter extends a list in place
            py = ("ok", oracle.compile_template(t).render(
                **copy.deepcopy(variables)))
        except Exception as e:
            py = ("error", "%s: %s" % (type(e).__name__, e))
        if py[0] == "ok" and c["ok"]:
            if py[1] == c["text"]:
                same += 1
                continue
            what = "texts differ"
        elif py[0] == "ok":
            if c["status"] in (-1, -2):
                what = "C raised %s" % c["err"]
            else:
                fallback += 1
                continue
        elif c["ok"]:
            what = "python raised %s" % py[1]
        else:
            both_fail += 1
            continue
        mismatch += 1
        if mismatch <= 10:
            print("  mismatch (%s): %s" % (what, t))
            if py[0] == "ok":
                print("    python: %r" % py[1][:200])
            if c["ok"]:
                print("    C:      %r" % c["text"][:200])

    print("exprfuzz %d templates: %d equal, %d both raised, %d C fallbacks, "
          "%d mismatches" % (len(templates), same, both_fail, fallback,
                             mismatch))
    sys.exit(1 if mismatch else 0)


if __name__ == "__main__":
    main()
