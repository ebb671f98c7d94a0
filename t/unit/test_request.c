/*
 * Copyright (C) kvroute developers
 *
 * Request understanding: every prompt form, every error class, the chat
 * rendering (expected strings written out by hand from the format in
 * kvr_request.c), bounds and endpoint paths.
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_request.h"
#include "tap.h"


#define COMPL   KVR_ENDPOINT_COMPLETIONS
#define CHAT    KVR_ENDPOINT_CHAT
#define BIG     (1024 * 1024)


/* what a sink was given */
typedef struct {
    char          *data;
    size_t         len;
    size_t         cap;
    size_t         pieces;
    const char    *body;          /* pieces inside [body, body + body_len) */
    size_t         body_len;
    size_t         in_body;       /* bytes given in place */
} collect_t;


/* every body parsed is parsed again with a sink, and compared */
static size_t  sink_checked;
static size_t  sink_mismatched;


static void
collect(void *data, const char *p, size_t len)
{
    char       *grown;
    size_t      cap;
    collect_t  *c = data;

    c->pieces++;

    if (p >= c->body && p < c->body + c->body_len) {
        c->in_body += len;
    }

    if (c->len + len > c->cap) {
        cap = (c->len + len) * 2;
        grown = realloc(c->data, cap);

        if (grown == NULL) {
            abort();
        }

        c->data = grown;
        c->cap = cap;
    }

    memcpy(c->data + c->len, p, len);
    c->len += len;
}


/* the sink path: the same status, and the rendered text in pieces */
static void
sink_compare(kvr_endpoint_e ep, const char *body, size_t len, size_t max,
    kvr_parse_status_e want_rc, kvr_request_t *want)
{
    int                  same;
    collect_t            c;
    kvr_request_t        req;
    kvr_parse_status_e   rc;

    memset(&c, 0, sizeof(collect_t));
    c.body = body;
    c.body_len = len;

    rc = kvr_request_parse_body(&req, body, len);

    if (rc == KVR_PARSE_OK) {
        rc = kvr_request_prompt(&req, ep, max, collect, &c);
    }

    same = (rc == want_rc);

    if (same && rc == KVR_PARSE_OK) {
        same = req.text == NULL && req.stream == want->stream
               && req.model_len == want->model_len
               && req.cache_salt_len == want->cache_salt_len;

        if (want->ids) {
            same = same && c.len == 0 && req.n_ids == want->n_ids
                   && memcmp(req.ids, want->ids,
                             req.n_ids * sizeof(uint32_t)) == 0;

        } else {
            same = same && req.ids == NULL && c.len == want->text_len
                   && req.text_len == want->text_len
                   && memcmp(c.data, want->text, c.len) == 0;
        }
    }

    sink_checked++;

    if (!same) {
        sink_mismatched++;
        printf("#   sink: status %s (want %s), %zu bytes in %zu pieces "
               "(want %zu)\n", kvr_parse_status_name(rc),
               kvr_parse_status_name(want_rc), c.len, c.pieces,
               want->text_len);
    }

    kvr_request_free(&req);
    free(c.data);
}


/* parses a private exact-size copy, so overreads are visible to tools */
static kvr_parse_status_e
parse_n(kvr_request_t *req, kvr_endpoint_e ep, const char *body, size_t len,
    size_t max)
{
    char                *copy;
    kvr_parse_status_e   rc;

    copy = malloc(len ? len : 1);
    if (copy == NULL) {
        return KVR_PARSE_NO_MEMORY;
    }

    memcpy(copy, body, len);
    rc = kvr_request_parse(req, ep, copy, len, max);
    sink_compare(ep, copy, len, max, rc, req);
    free(copy);

    return rc;
}


static kvr_parse_status_e
parse(kvr_request_t *req, kvr_endpoint_e ep, const char *body, size_t max)
{
    return parse_n(req, ep, body, strlen(body), max);
}


static int
text_is(kvr_request_t *req, const char *want, size_t len)
{
    return req->text != NULL && req->ids == NULL && req->text_len == len
           && memcmp(req->text, want, len) == 0 && req->text[len] == '\0';
}


/* status and text in one test line; frees the request */
static void
check_text(kvr_endpoint_e ep, const char *body, const char *want,
    const char *name)
{
    kvr_request_t        req;
    kvr_parse_status_e   rc;

    rc = parse(&req, ep, body, BIG);
    tap_ok(rc == KVR_PARSE_OK && text_is(&req, want, strlen(want)),
           "%s", name);

    if (rc != KVR_PARSE_OK || !text_is(&req, want, strlen(want))) {
        printf("#   status %s, text [%.*s]\n", kvr_parse_status_name(rc),
               (int) req.text_len, req.text ? req.text : "");
    }

    kvr_request_free(&req);
}


static void
check_status(kvr_endpoint_e ep, const char *body, size_t max,
    kvr_parse_status_e want, const char *name)
{
    kvr_request_t        req;
    kvr_parse_status_e   rc;

    rc = parse(&req, ep, body, max);
    tap_ok(rc == want, "%s", name);

    if (rc != want) {
        printf("#   got %s, want %s\n", kvr_parse_status_name(rc),
               kvr_parse_status_name(want));
    }

    kvr_request_free(&req);
}


static void
test_completions(void)
{
    kvr_request_t        req;
    kvr_parse_status_e   rc;

    check_text(COMPL, "{\"prompt\":\"hello\"}", "hello", "compl: string");
    check_text(COMPL, "{\"prompt\":[\"first\",\"second\"]}", "first",
               "compl: batch of strings -> first");
    check_text(COMPL, "{\"prompt\":\"caf\\u00e9\\n\\\"q\\\"\"}",
               "caf\xc3\xa9\n\"q\"", "compl: escapes decoded");

    rc = parse(&req, COMPL, "{\"prompt\":\"a\\u0000b\"}", BIG);
    tap_ok(rc == KVR_PARSE_OK && text_is(&req, "a\0b", 3),
           "compl: \\u0000 kept, length 3");
    kvr_request_free(&req);

    rc = parse(&req, COMPL, "{\"prompt\":[1,2,4294967295,0]}", BIG);
    tap_ok(rc == KVR_PARSE_OK && req.text == NULL && req.n_ids == 4
           && req.ids[0] == 1 && req.ids[1] == 2
           && req.ids[2] == 4294967295u && req.ids[3] == 0,
           "compl: token ids");
    kvr_request_free(&req);

    rc = parse(&req, COMPL, "{\"prompt\":[[5,6],[7],\"x\"]}", BIG);
    tap_ok(rc == KVR_PARSE_OK && req.text == NULL && req.n_ids == 2
           && req.ids[0] == 5 && req.ids[1] == 6,
           "compl: batch of id lists -> first");
    kvr_request_free(&req);

    check_status(COMPL, "{\"prompt\":\"\"}", BIG, KVR_PARSE_EMPTY_PROMPT,
                 "compl: empty string");
    check_status(COMPL, "{\"prompt\":[]}", BIG, KVR_PARSE_EMPTY_PROMPT,
                 "compl: empty list");
    check_status(COMPL, "{\"prompt\":[[]]}", BIG, KVR_PARSE_EMPTY_PROMPT,
                 "compl: empty first id list");
    check_status(COMPL, "{\"prompt\":[\"\",\"x\"]}", BIG,
                 KVR_PARSE_EMPTY_PROMPT, "compl: empty first string");

    check_status(COMPL, "{\"model\":\"m\"}", BIG, KVR_PARSE_NO_PROMPT,
                 "compl: missing prompt");
    check_status(COMPL, "{\"prompt\":null}", BIG, KVR_PARSE_NO_PROMPT,
                 "compl: null prompt");
    check_status(COMPL, "{\"prompt\":42}", BIG, KVR_PARSE_NO_PROMPT,
                 "compl: number prompt");
    check_status(COMPL, "{\"prompt\":{\"text\":\"x\"}}", BIG,
                 KVR_PARSE_NO_PROMPT, "compl: object prompt");
    check_status(COMPL, "{\"prompt\":[1,-1]}", BIG, KVR_PARSE_NO_PROMPT,
                 "compl: negative id");
    check_status(COMPL, "{\"prompt\":[4294967296]}", BIG,
                 KVR_PARSE_NO_PROMPT, "compl: id 2^32");
    check_status(COMPL, "{\"prompt\":[1,\"a\"]}", BIG, KVR_PARSE_NO_PROMPT,
                 "compl: mixed ids and strings");
    check_status(COMPL, "{\"prompt\":[1.5]}", BIG, KVR_PARSE_NO_PROMPT,
                 "compl: real id");
    check_status(COMPL, "{\"prompt\":[true]}", BIG, KVR_PARSE_NO_PROMPT,
                 "compl: boolean id");
    check_status(COMPL, "{\"prompt\":[[1,null]]}", BIG, KVR_PARSE_NO_PROMPT,
                 "compl: null inside first id list");
    check_status(COMPL, "{\"prompt\":[{}]}", BIG, KVR_PARSE_NO_PROMPT,
                 "compl: list of objects");
    check_status(COMPL, "{\"prompt\":\"x\"}", BIG, KVR_PARSE_OK,
                 "compl: one byte");

    /* bounds: text len == max passes, one more fails; ids count 4 each */
    check_status(COMPL, "{\"prompt\":\"abcde\"}", 5, KVR_PARSE_OK,
                 "compl: text at max_prompt");
    check_status(COMPL, "{\"prompt\":\"abcdef\"}", 5, KVR_PARSE_TOO_LARGE,
                 "compl: text over max_prompt");
    check_status(COMPL, "{\"prompt\":[1,2,3]}", 12, KVR_PARSE_OK,
                 "compl: 3 ids in 12 bytes");
    check_status(COMPL, "{\"prompt\":[1,2,3,4]}", 15, KVR_PARSE_TOO_LARGE,
                 "compl: 4 ids over 15 bytes");
    check_status(COMPL, "{\"prompt\":[[1,2,3,4]]}", 15,
                 KVR_PARSE_TOO_LARGE, "compl: nested ids over bound");
    check_status(COMPL, "{\"prompt\":[\"abcdef\"]}", 5, KVR_PARSE_TOO_LARGE,
                 "compl: batch string over bound");
}


static void
test_chat(void)
{
    check_text(CHAT,
               "{\"messages\":[{\"role\":\"system\",\"content\":\"S\"},"
               "{\"role\":\"user\",\"content\":\"U\"}]}",
               "<|im_start|>system\nS<|im_end|>\n"
               "<|im_start|>user\nU<|im_end|>\n",
               "chat: two messages");

    check_text(CHAT,
               "{\"messages\":[{\"content\":\"a\"},{\"role\":7,"
               "\"content\":\"b\"}]}",
               "<|im_start|>user\na<|im_end|>\n"
               "<|im_start|>user\nb<|im_end|>\n",
               "chat: missing or non-string role -> user");

    check_text(CHAT,
               "{\"messages\":[{\"role\":\"assistant\",\"content\":null},"
               "{\"role\":\"user\"},{\"role\":\"user\",\"content\":5}]}",
               "<|im_start|>assistant\n<|im_end|>\n"
               "<|im_start|>user\n<|im_end|>\n"
               "<|im_start|>user\n<|im_end|>\n",
               "chat: null, missing, numeric content -> empty");

    check_text(CHAT,
               "{\"messages\":[{\"role\":\"user\",\"content\":["
               "{\"type\":\"text\",\"text\":\"a\"},"
               "{\"type\":\"image_url\",\"image_url\":{\"url\":\"u\"}},"
               "{\"type\":\"input_text\",\"text\":\"b\"},"
               "{\"type\":\"refusal\",\"refusal\":\"c\"},"
               "{\"type\":\"thinking\",\"thinking\":\"d\"},"
               "{\"type\":\"output_text\",\"text\":\"e\"},"
               "{\"type\":\"input_audio\",\"text\":\"no\"},"
               "{\"type\":\"text\"},"
               "{\"type\":\"text\",\"text\":5},"
               "{\"type\":\"refusal\",\"text\":\"no\"},"
               "\"bare\",7,"
               "{\"type\":\"text\",\"text\":\"\"}"
               "]}]}",
               "<|im_start|>user\na\nb\nc\nd\ne\n<|im_end|>\n",
               "chat: text parts joined, others skipped");

    check_text(CHAT,
               "{\"messages\":[{\"role\":\"user\",\"content\":["
               "{\"type\":\"image_url\",\"image_url\":{\"url\":\"u\"}}]}]}",
               "<|im_start|>user\n<|im_end|>\n",
               "chat: image-only content -> empty content");

    check_text(CHAT,
               "{\"messages\":[{\"role\":\"assistant\",\"content\":null,"
               "\"tool_calls\":[{\"type\":\"function\",\"id\":\"c1\","
               "\"function\":{\"name\":\"f\","
               "\"arguments\":\"{\\\"x\\\": 1}\"}}]},"
               "{\"role\":\"tool\",\"content\":\"r\",\"tool_calls\":[]}]}",
               "<|im_start|>assistant\n"
               "[{\"function\":{\"arguments\":\"{\\\"x\\\": 1}\","
               "\"name\":\"f\"},\"id\":\"c1\",\"type\":\"function\"}]"
               "<|im_end|>\n"
               "<|im_start|>tool\nr<|im_end|>\n",
               "chat: tool_calls dumped compact and sorted");

    check_text(CHAT,
               "{\"tools\":[{\"type\":\"function\",\"function\":"
               "{\"name\":\"g\",\"parameters\":{\"b\":1,\"a\":[true,null]}}}],"
               "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
               "<|tools|>[{\"function\":{\"name\":\"g\",\"parameters\":"
               "{\"a\":[true,null],\"b\":1}},\"type\":\"function\"}]\n"
               "<|im_start|>user\nhi<|im_end|>\n",
               "chat: tools first, compact and sorted");

    check_text(CHAT,
               "{\"tools\":[],\"messages\":[{\"role\":\"user\","
               "\"content\":\"hi\"}]}",
               "<|im_start|>user\nhi<|im_end|>\n",
               "chat: empty tools list renders nothing");

    check_text(CHAT,
               "{\"tools\":{\"x\":1},\"messages\":[{\"role\":\"user\","
               "\"content\":\"hi\"}]}",
               "<|im_start|>user\nhi<|im_end|>\n",
               "chat: non-array tools ignored");

    check_status(CHAT, "{\"model\":\"m\"}", BIG, KVR_PARSE_NO_PROMPT,
                 "chat: missing messages");
    check_status(CHAT, "{\"messages\":\"hi\"}", BIG, KVR_PARSE_NO_PROMPT,
                 "chat: string messages");
    check_status(CHAT, "{\"messages\":{\"role\":\"user\"}}", BIG,
                 KVR_PARSE_NO_PROMPT, "chat: object messages");
    check_status(CHAT, "{\"messages\":[]}", BIG, KVR_PARSE_EMPTY_PROMPT,
                 "chat: empty messages");
    check_status(CHAT, "{\"messages\":[1]}", BIG, KVR_PARSE_NO_PROMPT,
                 "chat: non-object message");
    check_status(CHAT,
                 "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},"
                 "\"x\"]}", BIG, KVR_PARSE_NO_PROMPT,
                 "chat: non-object later message");
    check_status(CHAT, "{\"prompt\":\"x\"}", BIG, KVR_PARSE_NO_PROMPT,
                 "chat: completions body on chat endpoint");
    check_status(COMPL, "{\"messages\":[{\"content\":\"x\"}]}", BIG,
                 KVR_PARSE_NO_PROMPT, "compl: chat body on completions");
}


static void
test_tool_calls_differ(void)
{
    kvr_request_t  a, b;

    parse(&a, CHAT,
          "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":"
          "[{\"function\":{\"name\":\"f\",\"arguments\":\"1\"}}]}]}", BIG);
    parse(&b, CHAT,
          "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":"
          "[{\"function\":{\"name\":\"f\",\"arguments\":\"2\"}}]}]}", BIG);

    tap_ok(a.text != NULL && b.text != NULL
           && (a.text_len != b.text_len
               || memcmp(a.text, b.text, a.text_len) != 0),
           "chat: different tool calls render differently");

    kvr_request_free(&a);
    kvr_request_free(&b);
}


static void
test_chat_prefix(void)
{
    kvr_request_t        a, b, c;
    kvr_parse_status_e   ra, rb, rc;

#define CONV                                                               \
    "{\"model\":\"m\",\"tools\":[{\"type\":\"function\",\"function\":"     \
    "{\"name\":\"t\"}}],\"messages\":["                                    \
    "{\"role\":\"system\",\"content\":\"You are terse.\"},"                \
    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"q1\"},"  \
    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}}]},"            \
    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":"    \
    "\"1\",\"function\":{\"name\":\"t\",\"arguments\":\"{}\"}}]},"         \
    "{\"role\":\"tool\",\"content\":\"42\"}"

    ra = parse(&a, CHAT, CONV "]}", BIG);
    rb = parse(&b, CHAT, CONV ",{\"role\":\"user\",\"content\":\"q2\"}]}",
               BIG);
    rc = parse(&c, CHAT, CONV ",{\"role\":\"user\",\"content\":\"q3\"}]}",
               BIG);

#undef CONV

    tap_ok(ra == KVR_PARSE_OK && rb == KVR_PARSE_OK && rc == KVR_PARSE_OK,
           "prefix: three conversations parse");

    if (ra != KVR_PARSE_OK || rb != KVR_PARSE_OK || rc != KVR_PARSE_OK) {
        goto done;
    }

    tap_ok(a.text_len < b.text_len
           && memcmp(a.text, b.text, a.text_len) == 0,
           "prefix: conversation is a prefix of itself plus a message");

    tap_ok(b.text_len == c.text_len
           && memcmp(b.text, c.text, a.text_len) == 0
           && memcmp(b.text, c.text, b.text_len) != 0,
           "prefix: different last messages share the earlier rendering");

    tap_ok(b.text_len - a.text_len
           == strlen("<|im_start|>user\nq2<|im_end|>\n")
           && memcmp(b.text + a.text_len,
                     "<|im_start|>user\nq2<|im_end|>\n",
                     b.text_len - a.text_len) == 0,
           "prefix: the extra message renders as its own block");

done:

    kvr_request_free(&a);
    kvr_request_free(&b);
    kvr_request_free(&c);
}


static void
test_common_fields(void)
{
    kvr_request_t        req;
    kvr_parse_status_e   rc;

    rc = parse(&req, COMPL,
               "{\"model\":\"qwen3-8b\",\"cache_salt\":\"tenant-\\u00e9\","
               "\"stream\":true,\"unknown\":{\"deep\":[1,{\"x\":null}]},"
               "\"prompt\":\"p\",\"max_tokens\":5}", BIG);

    tap_ok(rc == KVR_PARSE_OK, "fields: body with unknown fields parses");
    tap_ok(req.model != NULL && req.model_len == 8
           && memcmp(req.model, "qwen3-8b", 9) == 0,
           "fields: model and length, nul-terminated");
    tap_ok(req.cache_salt != NULL && req.cache_salt_len == 9
           && memcmp(req.cache_salt, "tenant-\xc3\xa9", 10) == 0,
           "fields: cache_salt decoded");
    /* parse() has freed its copy of the body: the field must be owned */
    tap_ok(req.model == req.fields && req.root != NULL,
           "fields: model owned by the request, body kept parsed");
    tap_is(req.stream, 1, "fields: stream true");
    tap_is(req.max_tokens, 5, "fields: max_tokens");
    kvr_request_free(&req);

    rc = parse(&req, CHAT,
               "{\"max_completion_tokens\":300,\"messages\":"
               "[{\"content\":\"x\"}]}", BIG);
    tap_ok(rc == KVR_PARSE_OK && req.max_tokens == 300,
           "fields: max_completion_tokens when max_tokens is absent");
    kvr_request_free(&req);

    rc = parse(&req, COMPL,
               "{\"max_tokens\":-3,\"prompt\":\"p\"}", BIG);
    tap_ok(rc == KVR_PARSE_OK && req.max_tokens == 0,
           "fields: a negative max_tokens is absent");
    kvr_request_free(&req);

    /* fields longer than the request's own room are allocated */
    {
        char    body[600], *p;
        size_t  i;

        p = body + sprintf(body, "{\"model\":\"");

        for (i = 0; i < 300; i++) {
            *p++ = (char) ('a' + i % 26);
        }

        sprintf(p, "\",\"cache_salt\":\"s\",\"prompt\":\"p\"}");

        rc = parse(&req, COMPL, body, BIG);
        tap_ok(rc == KVR_PARSE_OK && req.model_len == 300
               && memcmp(req.model, body + 10, 300) == 0
               && req.model[300] == '\0' && req.cache_salt_len == 1
               && req.cache_salt[0] == 's' && req.cache_salt[1] == '\0',
               "fields: a 300-byte model and a salt after it");
        kvr_request_free(&req);
    }

    rc = parse(&req, COMPL,
               "{\"model\":5,\"cache_salt\":[\"s\"],\"stream\":\"true\","
               "\"prompt\":\"p\"}", BIG);
    tap_ok(rc == KVR_PARSE_OK && req.model == NULL && req.model_len == 0
           && req.cache_salt == NULL && req.stream == 0,
           "fields: wrong types treated as absent");
    kvr_request_free(&req);

    rc = parse(&req, CHAT,
               "{\"stream\":false,\"cache_salt\":\"\",\"messages\":"
               "[{\"content\":\"x\"}]}", BIG);
    tap_ok(rc == KVR_PARSE_OK && req.stream == 0 && req.model == NULL
           && req.cache_salt != NULL && req.cache_salt_len == 0,
           "fields: stream false, empty salt present, no model");
    kvr_request_free(&req);

    /* fields are filled even when the prompt is unusable */
    rc = parse(&req, COMPL, "{\"model\":\"m\",\"prompt\":7}", BIG);
    tap_ok(rc == KVR_PARSE_NO_PROMPT && req.model != NULL
           && req.text == NULL && req.ids == NULL,
           "fields: model set on no-prompt, no prompt output");
    kvr_request_free(&req);

    /* duplicates: the last value wins, as in python's json.loads */
    check_text(COMPL, "{\"prompt\":\"a\",\"prompt\":\"b\"}", "b",
               "fields: duplicate key keeps the last value");
}


static void
test_errors(void)
{
    size_t               i, depth;
    char                *deep;
    kvr_request_t        req;
    kvr_parse_status_e   rc;

    check_status(COMPL, "", BIG, KVR_PARSE_NOT_JSON, "err: empty body");
    check_status(COMPL, "not json", BIG, KVR_PARSE_NOT_JSON,
                 "err: plain text");
    check_status(COMPL, "{\"prompt\":\"x\"} x", BIG, KVR_PARSE_NOT_JSON,
                 "err: trailing garbage");
    check_status(COMPL, "{\"prompt\":\"x\",}", BIG, KVR_PARSE_NOT_JSON,
                 "err: trailing comma");
    check_status(COMPL, "{'prompt':'x'}", BIG, KVR_PARSE_NOT_JSON,
                 "err: single quotes");
    check_status(COMPL, "{\"prompt\":[99999999999999999999999]}", BIG,
                 KVR_PARSE_NOT_JSON, "err: integer beyond 64 bits");
    check_status(COMPL, "[1,2]", BIG, KVR_PARSE_NOT_OBJECT,
                 "err: top-level array");
    check_status(COMPL, "\"prompt\"", BIG, KVR_PARSE_NOT_OBJECT,
                 "err: top-level string");
    check_status(COMPL, "null", BIG, KVR_PARSE_NOT_OBJECT,
                 "err: top-level null");

    rc = parse_n(&req, COMPL, "{\"prompt\":\"a\0b\"}", 15, BIG);
    tap_is(rc, KVR_PARSE_NOT_JSON, "err: raw nul byte in body");
    kvr_request_free(&req);

    rc = kvr_request_parse(&req, COMPL, NULL, 0, BIG);
    tap_is(rc, KVR_PARSE_NOT_JSON, "err: NULL body");
    kvr_request_free(&req);

    check_status(COMPL, "{\"prompt\":\"a\xff" "b\"}", BIG,
                 KVR_PARSE_INVALID_UTF8, "utf8: 0xff in string");
    check_status(COMPL, "{\"prompt\":\"\xc0\xaf\"}", BIG,
                 KVR_PARSE_INVALID_UTF8, "utf8: overlong");
    check_status(COMPL, "{\"prompt\":\"\xed\xa0\x80\"}", BIG,
                 KVR_PARSE_INVALID_UTF8, "utf8: encoded surrogate");
    check_status(COMPL, "{\"prompt\":\"\xe2\x82\"}", BIG,
                 KVR_PARSE_INVALID_UTF8, "utf8: short sequence mid-body");
    check_status(COMPL, "{\"prompt\":\"x\",\"\xfe\":1}", BIG,
                 KVR_PARSE_INVALID_UTF8, "utf8: bad byte in a key");
    check_status(CHAT, "{\"messages\":[{\"content\":\"\x80\"}]}", BIG,
                 KVR_PARSE_INVALID_UTF8, "utf8: lone continuation byte");

    depth = 100000;
    deep = malloc(2 * depth + 32);
    if (deep == NULL) {
        tap_ok(0, "deep: malloc");
        return;
    }

    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    rc = parse_n(&req, COMPL, deep, 2 * depth, BIG);
    tap_is(rc, KVR_PARSE_NOT_JSON, "deep: 100000 nested arrays");
    kvr_request_free(&req);

    memcpy(deep, "{\"prompt\":", 10);
    memset(deep + 10, '[', depth);
    memset(deep + 10 + depth, ']', depth);
    deep[10 + 2 * depth] = '}';
    rc = parse_n(&req, COMPL, deep, 11 + 2 * depth, BIG);
    tap_is(rc, KVR_PARSE_NOT_JSON, "deep: 100000 nested in prompt");
    kvr_request_free(&req);

    /* 2000 levels is within jansson's 2048: rendered through the dump */
    depth = 2000;
    i = 0;
    memcpy(deep, "{\"tools\":", 9);
    i += 9;
    memset(deep + i, '[', depth);
    i += depth;
    memset(deep + i, ']', depth);
    i += depth;
    memcpy(deep + i, ",\"messages\":[{}]}", 17);
    i += 17;

    rc = parse_n(&req, CHAT, deep, i, BIG);
    tap_ok(rc == KVR_PARSE_OK
           && req.text_len == 9 + 2 * depth + 1 + 28
           && req.text[9] == '[' && req.text[9 + 2 * depth - 1] == ']',
           "deep: 2000-level tools dumped");
    kvr_request_free(&req);

    rc = parse_n(&req, CHAT, deep, i, 9 + depth);
    tap_is(rc, KVR_PARSE_TOO_LARGE, "deep: tools dump bounded");
    kvr_request_free(&req);

    free(deep);
}


/* every proper prefix of a valid body is a truncated body */
static void
test_truncation(void)
{
    size_t               cut, len, bad_json, bad_crash;
    kvr_request_t        req;
    kvr_parse_status_e   rc;

    static const char  *body =
        "{\"model\":\"m\",\"stream\":true,\"cache_salt\":\"s\","
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
        "\"parameters\":{\"n\":-1.5e3,\"ok\":false,\"z\":null}}}],"
        "\"messages\":[{\"role\":\"system\",\"content\":\"caf\xc3\xa9 "
        "\xe2\x82\xac \xf0\x9f\x98\x80 \\u00e9\\ud83d\\ude00\\n\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
        "\"q\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"u\"}}]},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":"
        "\"1\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}]}";

    len = strlen(body);

    rc = parse(&req, CHAT, body, BIG);
    tap_is(rc, KVR_PARSE_OK, "trunc: the whole body parses");
    kvr_request_free(&req);

    bad_json = 0;
    bad_crash = 0;

    for (cut = 0; cut < len; cut++) {
        rc = parse_n(&req, CHAT, body, cut, BIG);

        if (rc != KVR_PARSE_NOT_JSON) {
            bad_json++;
            printf("#   cut %zu: %s\n", cut, kvr_parse_status_name(rc));
        }

        if (req.text != NULL || req.ids != NULL) {
            bad_crash++;
        }

        kvr_request_free(&req);

        rc = parse_n(&req, COMPL, body, cut, BIG);
        if (rc != KVR_PARSE_NOT_JSON) {
            bad_json++;
        }

        kvr_request_free(&req);
    }

    tap_is(bad_json, 0, "trunc: every cut point is not-json");
    tap_is(bad_crash, 0, "trunc: no output on a cut body");
}


static void
test_large(void)
{
    size_t               i, n, len, per;
    char                *body, *p;
    kvr_request_t        req;
    kvr_parse_status_e   rc;

    /* 200 user messages of 1000 'a': each renders to 28 + 1000 bytes */
    n = 200;
    per = 1000;
    body = malloc(64 + n * (per + 32));
    if (body == NULL) {
        tap_ok(0, "large: malloc");
        return;
    }

    p = body;
    p += sprintf(p, "{\"messages\":[");

    for (i = 0; i < n; i++) {
        p += sprintf(p, "%s{\"content\":\"", i ? "," : "");
        memset(p, 'a', per);
        p += per;
        p += sprintf(p, "\"}");
    }

    p += sprintf(p, "]}");
    len = p - body;

    rc = parse_n(&req, CHAT, body, len, BIG);
    tap_ok(rc == KVR_PARSE_OK && req.text_len == n * (28 + per),
           "large: 200 messages render to 200 * 1028 bytes");
    kvr_request_free(&req);

    rc = parse_n(&req, CHAT, body, len, n * (28 + per));
    tap_is(rc, KVR_PARSE_OK, "large: exactly max_prompt passes");
    kvr_request_free(&req);

    rc = parse_n(&req, CHAT, body, len, n * (28 + per) - 1);
    tap_ok(rc == KVR_PARSE_TOO_LARGE && req.text == NULL,
           "large: one byte over max_prompt");
    kvr_request_free(&req);

    rc = parse_n(&req, CHAT, body, len, 100000);
    tap_is(rc, KVR_PARSE_TOO_LARGE, "large: far over max_prompt");
    kvr_request_free(&req);

    rc = parse_n(&req, CHAT, body, len, 0);
    tap_is(rc, KVR_PARSE_TOO_LARGE, "large: max_prompt 0");
    kvr_request_free(&req);

    free(body);

    /* 300000 ids = 1.2 MB of ids over a 1 MB bound */
    n = 300000;
    body = malloc(32 + n * 2);
    if (body == NULL) {
        tap_ok(0, "large: malloc ids");
        return;
    }

    p = body;
    p += sprintf(p, "{\"prompt\":[");

    for (i = 0; i < n; i++) {
        *p++ = '7';
        *p++ = (i + 1 < n) ? ',' : ']';
    }

    *p++ = '}';
    len = p - body;

    rc = parse_n(&req, COMPL, body, len, BIG);
    tap_ok(rc == KVR_PARSE_TOO_LARGE && req.ids == NULL,
           "large: 300000 ids over 1 MB");
    kvr_request_free(&req);

    rc = parse_n(&req, COMPL, body, len, 4 * n);
    tap_ok(rc == KVR_PARSE_OK && req.n_ids == n && req.ids[n - 1] == 7,
           "large: 300000 ids within 1.2 MB");
    kvr_request_free(&req);

    free(body);
}


static void
test_free_and_names(void)
{
    kvr_request_t  req;

    memset(&req, 0, sizeof(req));
    kvr_request_free(&req);
    tap_ok(req.root == NULL && req.text == NULL, "free: zeroed struct");

    parse(&req, COMPL, "{\"prompt\":[1,2]}", BIG);
    kvr_request_free(&req);
    kvr_request_free(&req);
    tap_ok(req.root == NULL && req.ids == NULL && req.n_ids == 0,
           "free: twice is safe and zeroes");

    tap_ok(strcmp(kvr_parse_status_name(KVR_PARSE_OK), "ok") == 0
           && strcmp(kvr_parse_status_name(KVR_PARSE_NOT_JSON),
                     "not-json") == 0
           && strcmp(kvr_parse_status_name(KVR_PARSE_INVALID_UTF8),
                     "invalid-utf8") == 0
           && strcmp(kvr_parse_status_name(KVR_PARSE_NOT_OBJECT),
                     "not-object") == 0
           && strcmp(kvr_parse_status_name(KVR_PARSE_NO_PROMPT),
                     "no-prompt") == 0
           && strcmp(kvr_parse_status_name(KVR_PARSE_EMPTY_PROMPT),
                     "empty-prompt") == 0
           && strcmp(kvr_parse_status_name(KVR_PARSE_TOO_LARGE),
                     "too-large") == 0
           && strcmp(kvr_parse_status_name(KVR_PARSE_NO_MEMORY),
                     "no-memory") == 0,
           "names: every status");

    check_status((kvr_endpoint_e) 9, "{\"prompt\":\"x\"}", BIG,
                 KVR_PARSE_NO_PROMPT, "unknown endpoint value");
}


static void
test_paths(void)
{
    size_t  i;

    static const struct {
        const char  *path;
        int          want;
    } cases[] = {
        { "/v1/completions", KVR_ENDPOINT_COMPLETIONS },
        { "/v1/chat/completions", KVR_ENDPOINT_CHAT },
        { "/api/v1/completions", KVR_ENDPOINT_COMPLETIONS },
        { "/tenant/a/v1/chat/completions", KVR_ENDPOINT_CHAT },
        { "/v1/completions?x=1", KVR_ENDPOINT_COMPLETIONS },
        { "/v1/chat/completions?", KVR_ENDPOINT_CHAT },
        { "/v1/chat/completions?r=/v1/completions", KVR_ENDPOINT_CHAT },
        { "/v1/models?p=/v1/completions", -1 },
        { "/v1/models", -1 },
        { "/v1/embeddings", -1 },
        { "/v1/completions/", -1 },
        { "/v1/completionsx", -1 },
        { "/v2/completions", -1 },
        { "/chat/completions", -1 },
        { "/completions", -1 },
        { "v1/completions", -1 },
        { "", -1 },
        { "?/v1/completions", -1 },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tap_is(kvr_endpoint_from_path(cases[i].path, strlen(cases[i].path)),
               cases[i].want, cases[i].path);
    }

    /* the length bounds the path; bytes after it do not count */
    tap_is(kvr_endpoint_from_path("/v1/completionsXYZ", 15),
           KVR_ENDPOINT_COMPLETIONS, "path: length bounds the path");
    tap_is(kvr_endpoint_from_path("/v1/completions", 14), -1,
           "path: one byte short");
    tap_is(kvr_endpoint_from_path(NULL, 0), -1, "path: NULL");
}


/*
 * tools / tool_calls since kvr_json: keys sorted, whitespace outside
 * strings dropped, repeated keys reduced to the last, scalars raw
 */
static void
test_tools_rendering(void)
{
    char                 body[1024], want[1024], *p, *w;
    int                  c;
    kvr_request_t        a, b;
    kvr_parse_status_e   ra, rb;

    check_text(CHAT,
               "{\"tools\": [ {\"b\" : 1 ,\n\t\"a\" : \"x y\" } , [ ] ],"
               "\"messages\":[{\"content\":\"hi\"}]}",
               "<|tools|>[{\"a\":\"x y\",\"b\":1},[]]\n"
               "<|im_start|>user\nhi<|im_end|>\n",
               "tools: whitespace outside strings dropped, keys sorted");

    check_text(CHAT,
               "{\"tools\":[{\"a\":1,\"c\":{},\"a\":[2]}],"
               "\"messages\":[{\"content\":\"hi\"}]}",
               "<|tools|>[{\"a\":[2],\"c\":{}}]\n"
               "<|im_start|>user\nhi<|im_end|>\n",
               "tools: a repeated key keeps its last value");

    check_text(CHAT,
               "{\"tools\":[{\"d\":\"\\u00e9\",\"n\":1.50E+1}],"
               "\"messages\":[{\"content\":\"hi\"}]}",
               "<|tools|>[{\"d\":\"\\u00e9\",\"n\":1.50E+1}]\n"
               "<|im_start|>user\nhi<|im_end|>\n",
               "tools: strings and numbers as the client wrote them");

    check_text(CHAT,
               "{\"tools\":[{\"\\u0062\":1,\"a\":2}],"
               "\"messages\":[{\"content\":\"hi\"}]}",
               "<|tools|>[{\"a\":2,\"\\u0062\":1}]\n"
               "<|im_start|>user\nhi<|im_end|>\n",
               "tools: an escaped key sorts by its decoded text");

    /* 20 keys "t".."a" in reverse: the merge sort path */
    p = body;
    w = want;
    p += sprintf(p, "{\"tools\":[{");
    w += sprintf(w, "<|tools|>[{");

    for (c = 't'; c >= 'a'; c--) {
        p += sprintf(p, "%s\"%c\":%d", c == 't' ? "" : ",", c, c);
    }

    for (c = 'a'; c <= 't'; c++) {
        w += sprintf(w, "%s\"%c\":%d", c == 'a' ? "" : ",", c, c);
    }

    sprintf(p, "}],\"messages\":[{\"content\":\"hi\"}]}");
    sprintf(w, "}]\n<|im_start|>user\nhi<|im_end|>\n");
    check_text(CHAT, body, want, "tools: 20 keys sorted");

    ra = parse(&a, CHAT,
               "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":"
               "[{\"id\":\"1\",\"function\":{\"name\":\"f\","
               "\"arguments\":\"{}\"}}]}]}", BIG);
    rb = parse(&b, CHAT,
               "{\"messages\":[{\"tool_calls\":[{\"function\":"
               "{\"arguments\" : \"{}\", \"name\":\"f\"}, \"id\":\"1\"}],"
               "\"role\":\"assistant\"}]}", BIG);
    tap_ok(ra == KVR_PARSE_OK && rb == KVR_PARSE_OK
           && a.text_len == b.text_len
           && memcmp(a.text, b.text, a.text_len) == 0,
           "tool_calls: key order and spacing do not change the text");
    kvr_request_free(&a);
    kvr_request_free(&b);
}


static void
test_escapes_and_keys(void)
{
    /* "<|im_start|>user\n" + 4 bytes + "<|im_end|>\n": 12 + 5 + 4 + 11 */
    check_text(CHAT,
               "{\"messages\":[{\"content\":\"\\u00e9\\u00e9\"}]}",
               "<|im_start|>user\n\xc3\xa9\xc3\xa9<|im_end|>\n",
               "escapes: content decoded in the rendering");
    check_status(CHAT, "{\"messages\":[{\"content\":\"\\u00e9\\u00e9\"}]}",
                 32, KVR_PARSE_OK, "escapes: decoded length at max_prompt");
    check_status(CHAT, "{\"messages\":[{\"content\":\"\\u00e9\\u00e9\"}]}",
                 31, KVR_PARSE_TOO_LARGE,
                 "escapes: decoded length over max_prompt");
    check_text(CHAT,
               "{\"messages\":[{\"role\":\"\\u0075ser\",\"con\\u0074ent\":"
               "\"a\\nb\\ud83d\\ude00\"}]}",
               "<|im_start|>user\na\nb\xf0\x9f\x98\x80<|im_end|>\n",
               "escapes: escaped role and key, surrogate pair");
    check_text(COMPL, "{\"prompt\":\"\\u00e9\\u00e9\\u00e9\"}",
               "\xc3\xa9\xc3\xa9\xc3\xa9", "escapes: completions decoded");
    check_status(COMPL, "{\"prompt\":\"\\u00e9\\u00e9\\u00e9\"}", 6,
                 KVR_PARSE_OK, "escapes: decoded prompt at max_prompt");
    check_status(COMPL, "{\"prompt\":\"\\u00e9\\u00e9\\u00e9\"}", 5,
                 KVR_PARSE_TOO_LARGE, "escapes: decoded prompt over max");

    /* python accepts "\u0000" in keys; jansson did not */
    check_text(COMPL, "{\"a\\u0000\":1,\"prompt\":\"x\"}", "x",
               "keys: \\u0000 inside a key accepted");
    check_status(COMPL, "{\"t\":1e400,\"prompt\":\"x\"}", BIG,
                 KVR_PARSE_NOT_JSON, "numbers: 1e400 is not-json as before");
    check_status(COMPL, "{\"prompt\":\"\\ud800\"}", BIG, KVR_PARSE_NOT_JSON,
                 "escapes: lone surrogate is not-json");
    check_status(COMPL, "{\"prompt\":\"x\"}\xff", BIG,
                 KVR_PARSE_INVALID_UTF8, "utf8: bad byte after the body");
    check_status(COMPL, "{\"prompt\":\"x\"}\xc3\xa9", BIG,
                 KVR_PARSE_NOT_JSON, "utf8: valid character after the body");
}


/*
 * The sink: long plain strings in place, long escaped ones and many short
 * ones through its buffer (handed on as it fills), the bound on the whole
 * rendering, and the text rendered again after a sink (the fallback).
 */
static void
test_sink(void)
{
    char                *body, *p;
    size_t               i, len, text_len;
    collect_t            c;
    kvr_request_t        req;
    kvr_parse_status_e   rc;

    body = malloc(64 * 1024);
    if (body == NULL) {
        tap_ok(0, "sink: malloc");
        return;
    }

    /* a long plain system prompt, then a short user message */
    p = body + sprintf(body, "{\"model\":\"m\",\"messages\":["
                             "{\"role\":\"system\",\"content\":\"");

    for (i = 0; i < 5000; i++) {
        *p++ = "abcdefghij klmnop"[i % 17];
    }

    p += sprintf(p, "\"},{\"role\":\"user\",\"content\":\"hi\"}]}");
    len = p - body;

    memset(&c, 0, sizeof(collect_t));
    c.body = body;
    c.body_len = len;

    rc = kvr_request_parse_body(&req, body, len);
    if (rc == KVR_PARSE_OK) {
        rc = kvr_request_prompt(&req, CHAT, BIG, collect, &c);
    }

    tap_ok(rc == KVR_PARSE_OK && req.text == NULL && c.in_body == 5000
           && req.text_len == c.len,
           "sink: a long plain string is given in place, not copied");

    text_len = req.text_len;

    /* the fallback: the same request rendered as text after the sink */
    rc = kvr_request_prompt(&req, CHAT, BIG, NULL, NULL);
    tap_ok(rc == KVR_PARSE_OK && req.text != NULL && req.text_len == text_len
           && memcmp(req.text, c.data, text_len) == 0,
           "sink: the text rendered again afterwards is the same");

    kvr_request_free(&req);
    free(c.data);

    /* the bound on the whole rendering, across the in-place piece */
    check_status(CHAT, body, text_len, KVR_PARSE_OK,
                 "sink: rendering at max_prompt");
    check_status(CHAT, body, text_len - 1, KVR_PARSE_TOO_LARGE,
                 "sink: rendering one byte over max_prompt");

    /* an escaped content over the buffer's flush size */
    p = body + sprintf(body, "{\"messages\":[{\"content\":\"");

    for (i = 0; i < 20000; i++) {
        p += sprintf(p, (i % 3) ? "x" : "\\n");
    }

    p += sprintf(p, "\"}]}");
    *p = '\0';

    rc = parse(&req, CHAT, body, BIG);
    tap_ok(rc == KVR_PARSE_OK && req.text_len == 12 + 5 + 20000 + 11,
           "sink: a long escaped content");
    kvr_request_free(&req);

    /* many short messages: more markers than body */
    p = body + sprintf(body, "{\"messages\":[");

    for (i = 0; i < 3000; i++) {
        p += sprintf(p, "%s{}", i ? "," : "");
    }

    p += sprintf(p, "]}");

    rc = parse(&req, CHAT, body, BIG);
    tap_ok(rc == KVR_PARSE_OK && req.text_len == 3000 * (12 + 5 + 11),
           "sink: many empty messages");
    kvr_request_free(&req);

    check_status(CHAT, body, 3000 * (12 + 5 + 11) - 1, KVR_PARSE_TOO_LARGE,
                 "sink: many messages one byte over max_prompt");

    /* completions: a long plain prompt in place, ids untouched by a sink */
    p = body + sprintf(body, "{\"prompt\":\"");
    memset(p, 'q', 300);
    p += 300;
    p += sprintf(p, "\"}");

    memset(&c, 0, sizeof(collect_t));
    c.body = body;
    c.body_len = p - body;

    rc = kvr_request_parse_body(&req, body, p - body);
    if (rc == KVR_PARSE_OK) {
        rc = kvr_request_prompt(&req, COMPL, BIG, collect, &c);
    }

    tap_ok(rc == KVR_PARSE_OK && c.in_body == 300 && req.text_len == 300,
           "sink: a completions prompt given in place");
    kvr_request_free(&req);
    free(c.data);

    check_status(COMPL, body, 299, KVR_PARSE_TOO_LARGE,
                 "sink: completions prompt over max_prompt");
    check_status(COMPL, "{\"prompt\":[[1,2,3]]}", BIG, KVR_PARSE_OK,
                 "sink: token ids with a sink");

    free(body);
}


int
main(void)
{
    test_completions();
    test_chat();
    test_tool_calls_differ();
    test_chat_prefix();
    test_common_fields();
    test_errors();
    test_truncation();
    test_large();
    test_free_and_names();
    test_paths();
    test_tools_rendering();
    test_escapes_and_keys();
    test_sink();

    tap_ok(sink_mismatched == 0 && sink_checked > 100,
           "sink: the same status, text and ids as without, on all %zu "
           "bodies parsed", sink_checked);

    return tap_done();
}
