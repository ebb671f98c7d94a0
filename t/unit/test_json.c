/*
 * Copyright (C) kvroute developers
 *
 * kvr_json: grammar tables (valid and invalid, with the error class), the
 * node layout, accessors, truncation at every offset, depth and node
 * bounds, and a randomized differential test against jansson.
 *
 * Known deliberate differences from jansson (json_loadb with
 * JSON_DECODE_ANY | JSON_ALLOW_NUL), left out of the differential test:
 * - "\u0000" inside an object key is accepted (jansson refuses it);
 * - a raw nul byte outside strings is an error (jansson 2.14 accepts one
 *   right after a number or literal: "1\0", "[1\0]", "true\0"), so
 *   inputs holding a raw nul are not compared;
 * - error classes may differ on garbage (jansson reads a whole UTF-8
 *   sequence before looking at grammar), so only the verdict is compared.
 */

#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "kvr_json.h"
#include "tap.h"


#define OK        KVR_JSON_OK
#define SYNTAX    KVR_JSON_ERR_SYNTAX
#define UTF8      KVR_JSON_ERR_UTF8
#define DEPTH     KVR_JSON_ERR_DEPTH
#define TOO_BIG   KVR_JSON_ERR_TOO_BIG
#define NUMBER    KVR_JSON_ERR_NUMBER
#define RANGE     KVR_JSON_NUMBER_RANGE


typedef struct {
    const char          *text;
    kvr_json_status_e    want;
    unsigned             flags;
} grammar_case_t;


static uint64_t  rng_state = 0x9e3779b97f4a7c15ull;


static uint32_t
rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;

    return (uint32_t) (rng_state >> 11);
}


/* parses an exact-size private copy, so overreads are visible to tools */
static kvr_json_status_e
parse_n(const char *text, size_t len, unsigned flags)
{
    char               *copy;
    kvr_json_doc_t     *doc;
    kvr_json_status_e   rc;

    copy = malloc(len ? len : 1);
    if (copy == NULL) {
        return KVR_JSON_ERR_NO_MEMORY;
    }

    if (len > 0) {
        memcpy(copy, text, len);
    }

    doc = kvr_json_parse(copy, len, flags);
    rc = doc ? doc->status : KVR_JSON_ERR_NO_MEMORY;
    kvr_json_free(doc);
    free(copy);

    return rc;
}


/* a test name: bytes outside printable ASCII as \xNN, at most 60 */
static const char *
printable(const char *text)
{
    char           *p;
    size_t          i;
    unsigned char   c;
    static char     buf[256];

    p = buf;

    for (i = 0; text[i] != '\0' && i < 60; i++) {
        c = (unsigned char) text[i];

        if (c >= 0x20 && c < 0x7f) {
            *p++ = (char) c;

        } else {
            p += sprintf(p, "\\x%02x", c);
        }
    }

    *p = '\0';

    return buf;
}


static void
test_grammar(void)
{
    size_t             i;
    kvr_json_status_e  rc;

    static const grammar_case_t  cases[] = {
        /* scalars and containers */
        { "0", OK, 0 }, { "-0", OK, 0 }, { "7", OK, 0 }, { "-12", OK, 0 },
        { "1.5", OK, 0 }, { "-0.0", OK, 0 }, { "1e5", OK, 0 },
        { "1E+5", OK, 0 }, { "1e-5", OK, 0 }, { "0.0e-0", OK, 0 },
        { "123.456e789", OK, 0 }, { "true", OK, 0 }, { "false", OK, 0 },
        { "null", OK, 0 }, { "\"\"", OK, 0 }, { "\"a\"", OK, 0 },
        { "[]", OK, 0 }, { "{}", OK, 0 }, { "[[]]", OK, 0 },
        { "[1,\"a\",true,false,null,{},[]]", OK, 0 },
        { "{\"a\":{\"b\":[1,{\"c\":null}]},\"d\":-1}", OK, 0 },
        { " \t\r\n[ 1 ,\n2\t]\r\n ", OK, 0 },
        { "{ \"a\" : 1 , \"b\" : [ ] }", OK, 0 },
        { "{\"a\":1,\"a\":2}", OK, 0 },
        { "{\"\":0}", OK, 0 },

        /* escapes */
        { "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", OK, 0 },
        { "\"\\u0000\"", OK, 0 }, { "\"\\u00e9\\u00E9\"", OK, 0 },
        { "\"\\ud83d\\ude00\"", OK, 0 }, { "\"\\uDBFF\\uDFFF\"", OK, 0 },
        { "\"\\uffff\"", OK, 0 }, { "{\"\\u0000\":1}", OK, 0 },

        /* UTF-8 at the edges of every length class */
        { "\"\xc2\x80\"", OK, 0 }, { "\"\xdf\xbf\"", OK, 0 },
        { "\"\xe0\xa0\x80\"", OK, 0 }, { "\"\xed\x9f\xbf\"", OK, 0 },
        { "\"\xee\x80\x80\"", OK, 0 }, { "\"\xef\xbf\xbf\"", OK, 0 },
        { "\"\xf0\x90\x80\x80\"", OK, 0 },
        { "\"\xf4\x8f\xbf\xbf\"", OK, 0 },
        { "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", OK, 0 },
        { "\"\x7f\"", OK, 0 },
        { "{\"k\xc3\xa9y\":\"v\"}", OK, 0 },

        /* numbers against jansson's types */
        { "9223372036854775807", OK, RANGE },
        { "-9223372036854775808", OK, RANGE },
        { "9223372036854775808", NUMBER, RANGE },
        { "-9223372036854775809", NUMBER, RANGE },
        { "99999999999999999999999", NUMBER, RANGE },
        { "99999999999999999999999", OK, 0 },
        { "1.7976931348623157e308", OK, RANGE },
        { "1.7976931348623159e308", NUMBER, RANGE },
        { "179769313486231570e291", OK, RANGE },
        { "18e307", NUMBER, RANGE },
        { "0.18e309", NUMBER, RANGE },
        { "0.17e309", OK, RANGE },
        { "1e400", NUMBER, RANGE }, { "-1e400", NUMBER, RANGE },
        { "1e400", OK, 0 }, { "1e-400", OK, RANGE },
        { "0e99999999999", OK, RANGE }, { "0.000e400", OK, RANGE },
        { "[1e308,2e308]", NUMBER, RANGE },

        /* grammar errors */
        { "", SYNTAX, 0 }, { " \n", SYNTAX, 0 }, { "01", SYNTAX, 0 },
        { "-01", SYNTAX, 0 }, { "00", SYNTAX, 0 }, { "1.", SYNTAX, 0 },
        { ".5", SYNTAX, 0 }, { "1.e5", SYNTAX, 0 }, { "1e", SYNTAX, 0 },
        { "1e+", SYNTAX, 0 }, { "+1", SYNTAX, 0 }, { "-", SYNTAX, 0 },
        { "- 1", SYNTAX, 0 }, { "0x10", SYNTAX, 0 },
        { "Infinity", SYNTAX, 0 }, { "NaN", SYNTAX, 0 },
        { "[1,]", SYNTAX, 0 }, { "[,1]", SYNTAX, 0 }, { "[,]", SYNTAX, 0 },
        { "{\"a\" 1}", SYNTAX, 0 }, { "{\"a\":1,}", SYNTAX, 0 },
        { "{a:1}", SYNTAX, 0 }, { "{'a':1}", SYNTAX, 0 },
        { "'a'", SYNTAX, 0 }, { "[1 2]", SYNTAX, 0 },
        { "{\"a\":1 \"b\":2}", SYNTAX, 0 }, { "{\"a\"}", SYNTAX, 0 },
        { "{\"a\":}", SYNTAX, 0 }, { "{1:2}", SYNTAX, 0 },
        { "{\"a\"::1}", SYNTAX, 0 }, { "[1]]", SYNTAX, 0 },
        { "[[1]", SYNTAX, 0 }, { "{\"a\":1}}", SYNTAX, 0 },
        { "[}", SYNTAX, 0 }, { "{]", SYNTAX, 0 },
        { "tru", SYNTAX, 0 }, { "truex", SYNTAX, 0 }, { "nul", SYNTAX, 0 },
        { "True", SYNTAX, 0 }, { "\"abc", SYNTAX, 0 }, { "\"", SYNTAX, 0 },
        { "1 2", SYNTAX, 0 }, { "{} x", SYNTAX, 0 }, { "[1]\x0b", SYNTAX, 0 },
        { "\xef\xbb\xbf[1]", SYNTAX, 0 }, { "/**/1", SYNTAX, 0 },
        { "[1,\xc3\xa9]", SYNTAX, 0 },

        /* bad escapes and lone surrogates, as jansson */
        { "\"\\x\"", SYNTAX, 0 }, { "\"\\u12\"", SYNTAX, 0 },
        { "\"\\u12g4\"", SYNTAX, 0 }, { "\"\\U0041\"", SYNTAX, 0 },
        { "\"\\", SYNTAX, 0 }, { "\"\\'\"", SYNTAX, 0 },
        { "\"\\ud800\"", SYNTAX, 0 }, { "\"\\udc00\"", SYNTAX, 0 },
        { "\"\\udfff\\ud800\"", SYNTAX, 0 },
        { "\"\\ud800\\u0041\"", SYNTAX, 0 }, { "\"\\ud800x\"", SYNTAX, 0 },
        { "\"\\ud800\\ud800\"", SYNTAX, 0 }, { "\"\\ud800\\\"", SYNTAX, 0 },

        /* raw control characters inside strings */
        { "\"a\x01\"", SYNTAX, 0 }, { "\"a\x1f\"", SYNTAX, 0 },
        { "\"a\tb\"", SYNTAX, 0 }, { "\"a\nb\"", SYNTAX, 0 },

        /* invalid UTF-8, every class */
        { "\"\x80\"", UTF8, 0 }, { "\"\xbf\"", UTF8, 0 },
        { "\"\xc0\xaf\"", UTF8, 0 }, { "\"\xc1\xbf\"", UTF8, 0 },
        { "\"\xe0\x80\xaf\"", UTF8, 0 }, { "\"\xe0\x9f\xbf\"", UTF8, 0 },
        { "\"\xf0\x80\x80\xaf\"", UTF8, 0 },
        { "\"\xf0\x8f\xbf\xbf\"", UTF8, 0 },
        { "\"\xed\xa0\x80\"", UTF8, 0 }, { "\"\xed\xbf\xbf\"", UTF8, 0 },
        { "\"\xf4\x90\x80\x80\"", UTF8, 0 },
        { "\"\xf5\x80\x80\x80\"", UTF8, 0 }, { "\"\xf8\x88\x80\x80\x80\"",
                                              UTF8, 0 },
        { "\"\xfe\"", UTF8, 0 }, { "\"\xff\"", UTF8, 0 },
        { "\"\xc3x\"", UTF8, 0 }, { "\"\xc3\"", UTF8, 0 },
        { "\"\xe2\x82x\"", UTF8, 0 }, { "\"\xf0\x9f\x98x\"", UTF8, 0 },
        { "\"\xe2\x82\xac\xe2\x82\"", UTF8, 0 },
        { "\"0123456789abcdef\x80\"", UTF8, 0 },
        { "[1,\xff]", UTF8, 0 }, { "{\"a\":1}\xfe", UTF8, 0 },
        { "{\"\xc0\x80\":1}", UTF8, 0 },

        /* sequences cut by the end of the input are truncation */
        { "\"\xc3", SYNTAX, 0 }, { "\"\xe2\x82", SYNTAX, 0 },
        { "\"\xf0\x9f\x98", SYNTAX, 0 }, { "[1]\xc3", SYNTAX, 0 },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rc = parse_n(cases[i].text, strlen(cases[i].text), cases[i].flags);
        tap_ok(rc == cases[i].want, "grammar %zu: %s -> %s", i,
               printable(cases[i].text), kvr_json_status_name(cases[i].want));

        if (rc != cases[i].want) {
            printf("#   got %s\n", kvr_json_status_name(rc));
        }
    }

    /* raw nul bytes: inside a string, and after a value */
    tap_is(parse_n("\"a\0b\"", 5, 0), SYNTAX, "grammar: raw nul in string");
    tap_is(parse_n("[1]\0", 4, 0), SYNTAX, "grammar: nul after value");
    tap_is(parse_n(NULL, 0, 0), SYNTAX, "grammar: NULL input");
}


/*
 * n nested arrays (or objects, each holding key "a"), with the byte
 * scalar in the middle when it is not 0 (an object gets "[]" otherwise)
 */
static kvr_json_status_e
parse_nested(size_t n, char scalar, int object)
{
    char               *text, *p;
    size_t              i;
    kvr_json_status_e   rc;

    text = malloc(n * 6 + 4);
    if (text == NULL) {
        return KVR_JSON_ERR_NO_MEMORY;
    }

    p = text;

    for (i = 0; i < n; i++) {
        if (object) {
            memcpy(p, "{\"a\":", 5);
            p += 5;

        } else {
            *p++ = '[';
        }
    }

    if (scalar) {
        *p++ = scalar;

    } else if (object) {
        /* the innermost object must hold a value: use an empty array */
        *p++ = '[';
        *p++ = ']';
    }

    for (i = 0; i < n; i++) {
        *p++ = object ? '}' : ']';
    }

    rc = parse_n(text, p - text, 0);
    free(text);

    return rc;
}


static void
test_depth(void)
{
    tap_is(parse_nested(2048, 0, 0), OK, "depth: 2048 arrays");
    tap_is(parse_nested(2049, 0, 0), DEPTH, "depth: 2049 arrays");
    tap_is(parse_nested(2047, '1', 0), OK,
           "depth: scalar inside 2047 arrays (value depth 2048)");
    tap_is(parse_nested(2048, '1', 0), DEPTH,
           "depth: scalar inside 2048 arrays (value depth 2049)");
    tap_is(parse_nested(2048, '@', 0), SYNTAX,
           "depth: a bad token too deep is a syntax error, as jansson");
    tap_is(parse_nested(2047, '1', 1), OK, "depth: scalar in 2047 objects");
    tap_is(parse_nested(2048, '1', 1), DEPTH,
           "depth: scalar in 2048 objects");
    tap_is(parse_nested(2046, 0, 1), OK,
           "depth: [] inside 2046 objects");
    tap_is(parse_nested(2048, 0, 1), DEPTH,
           "depth: [] inside 2048 objects");
    tap_is(parse_nested(100000, 0, 0), DEPTH, "depth: 100000 arrays");
}


static void
test_nodes(void)
{
    char               *text;
    size_t              i, n, len;
    kvr_json_doc_t      doc, *d;
    kvr_json_node_t     arena[4];
    kvr_json_status_e   rc;

    rc = kvr_json_parse_into(&doc, "[1,2]", 5, arena, 3, 0);
    tap_ok(rc == OK && doc.n_nodes == 3, "nodes: exactly the cap");

    rc = kvr_json_parse_into(&doc, "[1,2,3]", 7, arena, 3, 0);
    tap_is(rc, TOO_BIG, "nodes: one over a caller cap");

    rc = kvr_json_parse_into(&doc, "{\"a\":1}", 7, arena, 2, 0);
    tap_is(rc, TOO_BIG, "nodes: a key counts as a node");

    /* the densest documents fit the len / 2 + 2 arena */
    n = 200001;
    text = malloc(2 * n + 16);
    if (text == NULL) {
        tap_ok(0, "nodes: malloc");
        return;
    }

    text[0] = '[';
    for (i = 0; i < n; i++) {
        text[2 * i + 1] = '0';
        text[2 * i + 2] = (i + 1 < n) ? ',' : ']';
    }

    len = 2 * n + 1;
    d = kvr_json_parse(text, len, 0);
    tap_ok(d != NULL && d->status == OK && d->n_nodes == n + 1
           && kvr_json_count(d, 0) == n,
           "nodes: array of 200001 one-digit numbers");
    kvr_json_free(d);

    memset(text, '[', 2000);
    memset(text + 2000, ']', 2000);
    d = kvr_json_parse(text, 4000, 0);
    tap_ok(d != NULL && d->status == OK && d->n_nodes == 2000
           && d->nodes[0].end == 2000 && d->nodes[1999].end == 2000,
           "nodes: 2000 nested arrays");
    kvr_json_free(d);

    memcpy(text, "{\"\":0,\"\":0}", 11);
    d = kvr_json_parse(text, 11, 0);
    tap_ok(d != NULL && d->status == OK && d->n_nodes == 5,
           "nodes: dense object");
    kvr_json_free(d);

    /*
     * an invalid document may outgrow len / 2 + 2 nodes: its own error
     * is still found ("[" * 2049 + "]" * 900 is too deep, not too big)
     */
    memset(text, '[', 2049);
    memset(text + 2049, ']', 900);
    tap_is(parse_n(text, 2949, 0), DEPTH,
           "nodes: unbalanced and too deep is too deep");
    memcpy(text + 1500, "\"\xff\"", 3);
    tap_is(parse_n(text, 1503, 0), UTF8,
           "nodes: unbalanced, then bad UTF-8, is bad UTF-8");
    memset(text + 1500, '!', 1);
    tap_is(parse_n(text, 2949, 0), SYNTAX,
           "nodes: unbalanced, then a bad byte, is syntax");

    free(text);

    /* over the global cap of 1 << 20 nodes */
    n = (1u << 20) + 10;
    text = malloc(2 * n + 16);
    if (text == NULL) {
        tap_ok(0, "nodes: malloc big");
        return;
    }

    text[0] = '[';
    for (i = 0; i < n; i++) {
        text[2 * i + 1] = '0';
        text[2 * i + 2] = (i + 1 < n) ? ',' : ']';
    }

    tap_is(parse_n(text, 2 * n + 1, 0), TOO_BIG,
           "nodes: more than 1 << 20 nodes");
    free(text);
}


/* the layout of a small document, worked out by hand */
static void
test_layout(void)
{
    size_t           len;
    uint32_t         i, seen[8], n;
    const char      *raw;
    kvr_json_doc_t  *d;

    static const char  text[] = "{\"a\":[1,{\"b\":null}],\"c\":\"x\"}";

    d = kvr_json_parse(text, sizeof(text) - 1, 0);
    if (d == NULL || d->status != OK) {
        tap_ok(0, "layout: parse");
        kvr_json_free(d);
        return;
    }

    /*
     * 0 {..} end 9 count 2   1 "a"   2 [..] end 7 count 2   3 1
     * 4 {..} end 7 count 1   5 "b"   6 null   7 "c"   8 "x"
     */
    tap_is(d->n_nodes, 9, "layout: 9 nodes");
    tap_ok(kvr_json_type(d, 0) == KVR_JSON_OBJECT && d->nodes[0].end == 9
           && kvr_json_count(d, 0) == 2 && d->nodes[0].off == 0
           && d->nodes[0].len == sizeof(text) - 1,
           "layout: root object");
    tap_ok(kvr_json_type(d, 1) == KVR_JSON_STRING && d->nodes[1].off == 1
           && d->nodes[1].len == 3 && d->nodes[1].end == 2,
           "layout: key a");
    raw = kvr_json_raw(d, 2, &len);
    tap_ok(kvr_json_type(d, 2) == KVR_JSON_ARRAY && d->nodes[2].end == 7
           && kvr_json_count(d, 2) == 2 && len == 14
           && memcmp(raw, "[1,{\"b\":null}]", 14) == 0,
           "layout: array and its raw span");
    tap_ok(kvr_json_type(d, 3) == KVR_JSON_NUMBER && d->nodes[3].off == 6
           && d->nodes[3].len == 1, "layout: number");
    tap_ok(kvr_json_type(d, 4) == KVR_JSON_OBJECT && d->nodes[4].end == 7
           && kvr_json_count(d, 4) == 1, "layout: inner object");
    tap_ok(kvr_json_type(d, 6) == KVR_JSON_NULL
           && kvr_json_type(d, 7) == KVR_JSON_STRING
           && kvr_json_type(d, 8) == KVR_JSON_STRING
           && d->nodes[8].off == 24 && d->nodes[8].len == 3,
           "layout: null, key c, string x");

    n = 0;
    for (i = kvr_json_first(d, 0); i; i = kvr_json_next(d, 0, i)) {
        seen[n++] = i;
    }

    tap_ok(n == 2 && seen[0] == 1 && seen[1] == 7,
           "layout: object iteration yields keys 1 and 7");

    n = 0;
    for (i = kvr_json_first(d, 2); i; i = kvr_json_next(d, 2, i)) {
        seen[n++] = i;
    }

    tap_ok(n == 2 && seen[0] == 3 && seen[1] == 4,
           "layout: array iteration yields 3 and 4");

    tap_is(kvr_json_first(d, 3), 0, "layout: a scalar has no children");

    kvr_json_free(d);

    d = kvr_json_parse("[]", 2, 0);
    tap_ok(d != NULL && d->status == OK && kvr_json_first(d, 0) == 0
           && kvr_json_count(d, 0) == 0, "layout: empty array");
    kvr_json_free(d);
}


static void
test_accessors(void)
{
    char             buf[64];
    size_t           n;
    uint32_t         v, u;
    kvr_json_doc_t  *d;

    static const char  dup[] =
        "{\"a\":1,\"b\":2,\"a\":3,\"\\u0061\":4,\"m\\u00e9\":5,"
        "\"x\":[],\"b\":6}";
    static const char  esc[] =
        "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20ac"
        "\\ud83d\\ude00\\u0000z\",\"plain\",\"\"]";
    static const char  nums[] =
        "[0,4294967295,4294967296,-0,-1,1.0,1e2,\"1\",12345678901]";

    d = kvr_json_parse(dup, sizeof(dup) - 1, 0);
    if (d == NULL || d->status != OK) {
        tap_ok(0, "find: parse");
        kvr_json_free(d);
        return;
    }

    v = kvr_json_find(d, 0, "a", 1);
    tap_ok(v != 0 && d->input[d->nodes[v].off] == '4',
           "find: the last of \"a\", \"a\", \"\\u0061\" wins");
    v = kvr_json_find(d, 0, "b", 1);
    tap_ok(v != 0 && d->input[d->nodes[v].off] == '6',
           "find: the last duplicate wins");
    v = kvr_json_find(d, 0, "m\xc3\xa9", 3);
    tap_ok(v != 0 && d->input[d->nodes[v].off] == '5',
           "find: key with an escape compared decoded");
    tap_is(kvr_json_find(d, 0, "m\\u00e9", 7), 0,
           "find: raw escape text is not the key");
    tap_is(kvr_json_find(d, 0, "c", 1), 0, "find: absent key");
    tap_is(kvr_json_find(d, 0, "", 0), 0, "find: empty key absent");
    tap_is(kvr_json_find(d, kvr_json_find(d, 0, "x", 1), "a", 1), 0,
           "find: not an object");
    /* keys: 1 "a", 3 "b", 5 "a", 7 "\u0061", 9 "m\u00e9", 11 "x" */
    tap_ok(kvr_json_string_cmp(d, 1, 3) < 0 && kvr_json_string_cmp(d, 3, 1) > 0
           && kvr_json_string_cmp(d, 1, 5) == 0
           && kvr_json_string_cmp(d, 1, 7) == 0
           && kvr_json_string_cmp(d, 7, 3) < 0
           && kvr_json_string_cmp(d, 9, 11) < 0
           && kvr_json_string_cmp(d, 11, 9) > 0,
           "cmp: decoded order of keys");
    kvr_json_free(d);

    d = kvr_json_parse(esc, sizeof(esc) - 1, 0);
    if (d == NULL || d->status != OK) {
        tap_ok(0, "decode: parse");
        kvr_json_free(d);
        return;
    }

#define DECODED  "\"\\/\b\f\n\r\tA\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"

    n = kvr_json_string_decode(d, 1, buf, sizeof(buf));
    tap_ok(n == sizeof(DECODED) + 1
           && memcmp(buf, DECODED "\0z", n) == 0,
           "decode: every escape, surrogate pair, \\u0000");
    tap_ok(d->nodes[1].info & KVR_JSON_ESCAPED, "decode: escaped flag set");
    tap_ok(!(d->nodes[2].info & KVR_JSON_ESCAPED),
           "decode: escaped flag clear on plain text");
    tap_is(kvr_json_string_decode(d, 1, buf, sizeof(DECODED) + 1),
           sizeof(DECODED) + 1, "decode: exact room");
    tap_is(kvr_json_string_decode(d, 1, buf, sizeof(DECODED)), (size_t) -1,
           "decode: one byte short");
    tap_is(kvr_json_string_decode(d, 1, buf, 12), (size_t) -1,
           "decode: short inside a multi-byte character");
    tap_is(kvr_json_string_decode(d, 2, buf, 5), 5, "decode: plain");
    tap_is(kvr_json_string_decode(d, 2, buf, 4), (size_t) -1,
           "decode: plain, short");
    tap_is(kvr_json_string_decode(d, 3, buf, 0), 0, "decode: empty");
    tap_ok(kvr_json_string_eq(d, 1, DECODED "\0z", sizeof(DECODED) + 1)
           && !kvr_json_string_eq(d, 1, DECODED "\0", sizeof(DECODED))
           && kvr_json_string_eq(d, 2, "plain", 5)
           && !kvr_json_string_eq(d, 2, "plai", 4)
           && !kvr_json_string_eq(d, 0, "", 0),
           "eq: decoded, plain, prefix, non-string");

#undef DECODED

    kvr_json_free(d);

    d = kvr_json_parse(nums, sizeof(nums) - 1, 0);
    if (d == NULL || d->status != OK) {
        tap_ok(0, "uint32: parse");
        kvr_json_free(d);
        return;
    }

    u = 7;
    tap_ok(kvr_json_uint32(d, 1, &u) == 0 && u == 0, "uint32: 0");
    tap_ok(kvr_json_uint32(d, 2, &u) == 0 && u == 4294967295u,
           "uint32: 2^32 - 1");
    tap_is(kvr_json_uint32(d, 3, &u), -1, "uint32: 2^32");
    u = 7;
    tap_ok(kvr_json_uint32(d, 4, &u) == 0 && u == 0, "uint32: -0 is 0");
    tap_is(kvr_json_uint32(d, 5, &u), -1, "uint32: -1");
    tap_is(kvr_json_uint32(d, 6, &u), -1, "uint32: 1.0");
    tap_is(kvr_json_uint32(d, 7, &u), -1, "uint32: 1e2");
    tap_is(kvr_json_uint32(d, 8, &u), -1, "uint32: a string");
    tap_is(kvr_json_uint32(d, 9, &u), -1, "uint32: 11 digits");
    tap_ok(kvr_json_type(d, 5) == KVR_JSON_NUMBER
           && !(d->nodes[5].info & KVR_JSON_REAL)
           && (d->nodes[6].info & KVR_JSON_REAL)
           && (d->nodes[7].info & KVR_JSON_REAL), "number: real flag");
    kvr_json_free(d);
}


/* every proper prefix of an object document is a syntax error */
static void
test_truncation(void)
{
    size_t              cut, len, bad;
    kvr_json_status_e   rc;

    static const char  *text =
        "{\"model\":\"m\",\"n\":[-1.5e3,0,12,true,false,null],"
        "\"s\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \\u00e9"
        "\\ud83d\\ude00\\n\\\"\",\"o\":{\"a\":{},\"b\":[]},"
        "\"long\":\"0123456789abcdefghijklmnopqrstuvwxyz\"} \n";

    len = strlen(text);
    tap_is(parse_n(text, len, RANGE), OK, "trunc: whole document");

    bad = 0;

    /* the last two bytes are whitespace: cuts there are valid */
    for (cut = 0; cut < len - 2; cut++) {
        rc = parse_n(text, cut, RANGE);

        if (rc != SYNTAX) {
            bad++;
            printf("#   cut %zu: %s\n", cut, kvr_json_status_name(rc));
        }
    }

    tap_is(bad, 0, "trunc: every cut is a syntax error");
    tap_is(parse_n(text, len - 1, RANGE), OK, "trunc: trailing space cut");
}


/* appends random valid JSON at depth d */
static void
gen_value(char **pp, char *end, int d)
{
    char      *p;
    uint32_t   i, n, k;

    static const char  *strs[] = {
        "", "a", "hello world", "caf\xc3\xa9", "\xe2\x82\xac",
        "\xf0\x9f\x98\x80", "\\n", "\\\"q\\\"", "\\u00e9", "\\u0000",
        "\\ud83d\\ude00", "\\\\", "\\/", "\\t\\b\\f\\r", "\\uFFFF",
        "0123456789abcdefghij", "\xc2\x80\xdf\xbf", "\xef\xbf\xbf",
        "\xf4\x8f\xbf\xbf", "\x7f"
    };
    static const char  *keys[] = {
        "a", "b", "a", "role", "\\u0061", "k\xc3\xa9y", "", "x\\ny"
    };
    static const char  *nums[] = {
        "0", "-0", "1", "-1", "42", "1.5", "-0.25", "1e3", "2E-3", "1.5e+2",
        "9223372036854775807", "-9223372036854775808", "123456789",
        "0.000001", "1e308", "4294967295"
    };
    static const char  *ws[] = { "", "", "", " ", "\n", "\t", "\r\n  " };

    p = *pp;

    if (end - p < 512) {
        *p++ = '0';
        *pp = p;
        return;
    }

    p += sprintf(p, "%s", ws[rng() % 7]);

    k = (d > 6) ? rng() % 4 : rng() % 7;

    switch (k) {

    case 0:
        p += sprintf(p, "\"%s%s\"", strs[rng() % 20], strs[rng() % 20]);
        break;

    case 1:
        p += sprintf(p, "%s", nums[rng() % 16]);
        break;

    case 2:
        p += sprintf(p, "%s", (rng() % 3 == 0) ? "true"
                              : (rng() % 2) ? "false" : "null");
        break;

    case 3:
        p += sprintf(p, "\"%s\"", strs[rng() % 20]);
        break;

    case 4:
    case 5:
        n = rng() % 5;
        *p++ = '[';

        for (i = 0; i < n; i++) {
            if (i > 0) {
                *p++ = ',';
            }

            gen_value(&p, end, d + 1);
        }

        p += sprintf(p, "%s]", ws[rng() % 7]);
        break;

    default:
        n = rng() % 5;
        *p++ = '{';

        for (i = 0; i < n; i++) {
            p += sprintf(p, "%s%s\"%s\"%s:", i ? "," : "", ws[rng() % 7],
                         keys[rng() % 8], ws[rng() % 7]);
            gen_value(&p, end, d + 1);
        }

        p += sprintf(p, "%s}", ws[rng() % 7]);
        break;
    }

    p += sprintf(p, "%s", ws[rng() % 7]);
    *pp = p;
}


/* whether a kvr_json subtree and a jansson value hold the same data */
static int
same_value(const kvr_json_doc_t *d, uint32_t i, json_t *j)
{
    char        buf[4096];
    size_t      n, len;
    uint32_t    k, v, distinct;
    json_t     *jv;
    const char *raw;

    if (j == NULL) {
        return 0;
    }

    switch (kvr_json_type(d, i)) {

    case KVR_JSON_OBJECT:
        if (!json_is_object(j)) {
            return 0;
        }

        distinct = 0;

        for (k = kvr_json_first(d, i); k; k = kvr_json_next(d, i, k)) {
            n = kvr_json_string_decode(d, k, buf, sizeof(buf));
            if (n == (size_t) -1) {
                return 0;
            }

            v = kvr_json_find(d, i, buf, n);

            if (v == k + 1) {
                distinct++;
            }

            jv = json_object_getn(j, buf, n);

            if (!same_value(d, v, jv)) {
                return 0;
            }
        }

        return distinct == json_object_size(j);

    case KVR_JSON_ARRAY:
        if (!json_is_array(j) || json_array_size(j) != kvr_json_count(d, i))
        {
            return 0;
        }

        n = 0;

        for (v = kvr_json_first(d, i); v; v = kvr_json_next(d, i, v)) {
            if (!same_value(d, v, json_array_get(j, n++))) {
                return 0;
            }
        }

        return 1;

    case KVR_JSON_STRING:
        if (!json_is_string(j)) {
            return 0;
        }

        n = kvr_json_string_decode(d, i, buf, sizeof(buf));

        return n == json_string_length(j)
               && memcmp(buf, json_string_value(j), n) == 0;

    case KVR_JSON_NUMBER:
        raw = kvr_json_raw(d, i, &len);
        if (len >= sizeof(buf)) {
            return 0;
        }

        memcpy(buf, raw, len);
        buf[len] = '\0';

        if (d->nodes[i].info & KVR_JSON_REAL) {
            return json_is_real(j) && json_real_value(j) == strtod(buf, NULL);
        }

        return json_is_integer(j)
               && json_integer_value(j) == strtoll(buf, NULL, 10);

    case KVR_JSON_TRUE:
        return json_is_true(j);

    case KVR_JSON_FALSE:
        return json_is_false(j);

    case KVR_JSON_NULL:
        return json_is_null(j);
    }

    return 0;
}


/* 0 agree, 1 verdicts differ, 2 data differs, -1 skipped */
static int
differ(const char *text, size_t len)
{
    int              rc;
    char            *copy;
    json_t          *root;
    json_error_t     err;
    kvr_json_doc_t  *d;

    if (memchr(text, '\0', len) != NULL) {
        return -1;
    }

    copy = malloc(len ? len : 1);
    if (copy == NULL) {
        return -1;
    }

    if (len > 0) {
        memcpy(copy, text, len);
    }

    root = json_loadb(copy, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    d = kvr_json_parse(copy, len, KVR_JSON_NUMBER_RANGE);

    if (d == NULL
        || (root == NULL
            && json_error_code(&err) == json_error_null_byte_in_key))
    {
        rc = -1;

    } else if ((root != NULL) != (d->status == OK)) {
        rc = 1;

    } else if (root != NULL && !same_value(d, 0, root)) {
        rc = 2;

    } else {
        rc = 0;
    }

    json_decref(root);
    kvr_json_free(d);
    free(copy);

    return rc;
}


static void
test_differential(void)
{
    char        *text, *mut, *p;
    size_t       i, j, len, mlen, pos, n_docs, n_muts, n_valid;
    size_t       bad_verdict, bad_data;
    int          rc;

    static const char  bytes[] = "\"\\{}[],:0-.eE+ tfnu\x80\xc3\xed\xf0\x01";

    text = malloc(65536);
    mut = malloc(65536 + 64);
    if (text == NULL || mut == NULL) {
        tap_ok(0, "diff: malloc");
        free(text);
        free(mut);
        return;
    }

    n_docs = 20000;
    n_muts = 0;
    n_valid = 0;
    bad_verdict = 0;
    bad_data = 0;

    for (i = 0; i < n_docs; i++) {
        p = text;
        gen_value(&p, text + 65536, 0);
        len = p - text;

        rc = differ(text, len);

        if (rc != 0) {
            if (rc == 1) {
                bad_verdict++;
            } else if (rc == 2) {
                bad_data++;
            }

            printf("#   generated doc differs (%d): %.*s\n", rc,
                   (int) (len > 200 ? 200 : len), text);
        }

        for (j = 0; j < 8; j++) {
            memcpy(mut, text, len);
            mlen = len;
            pos = len ? rng() % len : 0;

            switch (rng() % 5) {

            case 0:
                mut[pos] = (char) rng();
                break;

            case 1:
                mut[pos] = bytes[rng() % (sizeof(bytes) - 1)];
                break;

            case 2:
                memmove(mut + pos + 1, mut + pos, mlen - pos);
                mut[pos] = bytes[rng() % (sizeof(bytes) - 1)];
                mlen++;
                break;

            case 3:
                if (mlen > 0) {
                    memmove(mut + pos, mut + pos + 1, mlen - pos - 1);
                    mlen--;
                }

                break;

            default:
                mlen = pos;
                break;
            }

            rc = differ(mut, mlen);
            n_muts++;

            if (rc == 0 && parse_n(mut, mlen, RANGE) == OK) {
                n_valid++;
            }

            if (rc == 1 || rc == 2) {
                if (rc == 1) {
                    bad_verdict++;
                } else {
                    bad_data++;
                }

                printf("#   mutation differs (%d): %.*s\n", rc,
                       (int) (mlen > 200 ? 200 : mlen), mut);
            }
        }
    }

    printf("# %zu documents, %zu mutations (%zu still valid)\n", n_docs,
           n_muts, n_valid);
    tap_is(bad_verdict, 0, "diff: same verdict as jansson");
    tap_is(bad_data, 0, "diff: same values and strings as jansson");
    tap_ok(n_valid > n_muts / 20 && n_valid < n_muts,
           "diff: mutations hit both valid and invalid inputs");

    free(text);
    free(mut);
}


/*
 * Long strings, scanned many bytes at a time: a special byte at every
 * position of windows of 16, 32 and 64 bytes, with room after the string
 * so that the widest loop covers all of it.  Expectations come from how
 * each string is built: a quote ends it, an escape flags it, a control
 * byte is a syntax error, a bad byte a UTF-8 error, "\xc3\xa9" is plain.
 */
static void
test_long_strings(void)
{
    int                  bad;
    char                *text, *p;
    size_t               len, k, kind, n;
    uint32_t             info;
    kvr_json_doc_t      *doc;
    kvr_json_status_e    want;

    bad = 0;
    n = 0;
    text = malloc(512);

    if (text == NULL) {
        tap_ok(0, "long strings: malloc");
        return;
    }

    for (len = 60; len <= 200; len += 7) {
        for (k = 0; k + 2 <= len; k++) {
            for (kind = 0; kind < 5; kind++) {
                if (kind == 0 && k + 3 > len) {
                    continue;
                }

                p = text;
                *p++ = '[';
                *p++ = '"';
                memset(p, 'a', len);

                switch (kind) {
                case 0:
                    /* ends here: ["a..a","a..a"] */
                    p[k] = '"';
                    p[k + 1] = ',';
                    p[k + 2] = '"';
                    break;
                case 1:
                    p[k] = '\\';
                    p[k + 1] = 'n';
                    break;
                case 2:
                    p[k] = '\x01';
                    break;
                case 3:
                    p[k] = (char) 0xff;
                    break;
                default:
                    p[k] = (char) 0xc3;
                    p[k + 1] = (char) 0xa9;
                    break;
                }

                p += len;
                *p++ = '"';
                *p++ = ']';
                memset(p, ' ', 100);
                p += 100;

                doc = kvr_json_parse(text, p - text, 0);
                if (doc == NULL) {
                    bad++;
                    continue;
                }

                want = (kind == 2) ? SYNTAX : (kind == 3) ? UTF8 : OK;

                info = (doc->status == OK && doc->n_nodes > 1)
                       ? doc->nodes[1].info : 0;

                if (doc->status != want
                    || (want == OK && kind == 0
                        && doc->nodes[1].len != k + 2)
                    || (want == OK && kind != 0
                        && doc->nodes[1].len != len + 2)
                    || (want == OK
                        && !!(info & KVR_JSON_ESCAPED) != (kind == 1)))
                {
                    if (bad++ < 5) {
                        printf("# len %zu at %zu kind %zu: %s\n", len, k,
                               kind, kvr_json_status_name(doc->status));
                    }
                }

                n++;
                kvr_json_free(doc);
            }
        }
    }

    free(text);

    tap_ok(bad == 0 && n > 5000,
           "long strings: a special byte at every position (%zu cases)", n);
}


int
main(void)
{
    test_grammar();
    test_depth();
    test_nodes();
    test_layout();
    test_accessors();
    test_truncation();
    test_differential();
    test_long_strings();

    return tap_done();
}
