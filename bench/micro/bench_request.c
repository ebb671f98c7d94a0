/*
 * Copyright (C) kvroute developers
 *
 * Micro-benchmark of kvr_request_parse() on a chat body of about 9.5 KB
 * (a system prompt of about 2,000 tokens of English plus one user
 * message).  Prints the median, p10 and p90 of many runs in microseconds
 * and the median throughput over the body, for the whole parse (kvr_json
 * and the rendering), for kvr_json_parse() alone, and side by side for
 * the jansson implementation it replaced (json_loadb alone, and that
 * kvr_request_parse() taken from git at 15960aa with renamed symbols),
 * then for the chained text keys of the rendering, and last new and old
 * on a short chat with 8 tools (the sorted JSON rendering).
 *
 * Not part of any make target; build and run by hand:
 *   mkdir -p build/bench_old
 *   git show 15960aa:src/keys/kvr_request.c > build/bench_old/kvr_request.c
 *   git show 15960aa:src/keys/kvr_request.h > build/bench_old/kvr_request.h
 *   cc -O2 -c -Ibuild/bench_old -Dkvr_request_parse=old_request_parse \
 *       -Dkvr_request_free=old_request_free \
 *       -Dkvr_parse_status_name=old_parse_status_name \
 *       -Dkvr_endpoint_from_path=old_endpoint_from_path \
 *       build/bench_old/kvr_request.c -o build/bench_old/old_request.o
 *   cc -O2 -Isrc/keys -Isrc/json bench/micro/bench_request.c src/keys/kvr_request.c \
 *       src/json/kvr_json.c src/keys/kvr_hash.c build/bench_old/old_request.o \
 *       -ljansson -lxxhash -o build/bench_request
 *   build/bench_request
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "kvr_hash.h"
#include "kvr_json.h"
#include "kvr_request.h"


#define RUNS  20000


/*
 * the jansson kvr_request_parse() of 15960aa; its request struct (a
 * json_t root and the same fields) fits in old_request_t
 */
kvr_parse_status_e old_request_parse(void *req, kvr_endpoint_e ep,
    const char *body, size_t len, size_t max_prompt);
void old_request_free(void *req);


typedef union {
    kvr_request_t        req;
    uint64_t             space[32];
} old_request_t;


static const char  *words[] = {
    "the", "model", "should", "answer", "questions", "about", "our",
    "products", "politely", "and", "with", "care", "never", "reveal",
    "internal", "policies", "customers", "may", "ask", "for", "refunds",
    "shipping", "times", "warranty", "terms", "or", "technical", "support",
    "when", "unsure", "say", "so", "clearly", "a", "in", "to", "of", "is"
};


static double
now_us(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}


static int
cmp_double(const void *a, const void *b)
{
    double  x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}


/* times in us; bytes > 0 adds the median throughput in MB/s */
static void
report(const char *name, double *t, size_t n, size_t bytes)
{
    qsort(t, n, sizeof(double), cmp_double);
    printf("%-28s median %8.2f us  p10 %8.2f  p90 %8.2f", name,
           t[n / 2], t[n / 10], t[n * 9 / 10]);

    if (bytes > 0) {
        printf("  %7.0f MB/s", bytes / t[n / 2]);
    }

    printf("\n");
}


/* a short chat with 8 function tools (about 4 KB of tools JSON) */
static void
bench_tools(double *t)
{
    char                *body, *p;
    size_t               i, len;
    double               t0;
    old_request_t        old;
    kvr_request_t        req;
    kvr_parse_status_e   rc;

    body = malloc(16384);
    if (body == NULL) {
        return;
    }

    p = body;
    p += sprintf(p, "{\"model\":\"qwen3-8b\",\"tools\":[");

    for (i = 0; i < 8; i++) {
        p += sprintf(p, "%s{\"type\":\"function\",\"function\":{"
                     "\"name\":\"tool_%zu\",\"description\":\"Looks up "
                     "the order, shipping or warranty record number %zu "
                     "for the customer and returns it.\",\"parameters\":{"
                     "\"type\":\"object\",\"properties\":{\"order_id\":{"
                     "\"type\":\"string\",\"description\":\"the id\"},"
                     "\"limit\":{\"type\":\"integer\",\"minimum\":1,"
                     "\"maximum\":100},\"fields\":{\"type\":\"array\","
                     "\"items\":{\"type\":\"string\"}}},\"required\":"
                     "[\"order_id\"]}}}", i ? "," : "", i, i);
    }

    p += sprintf(p, "],\"messages\":[{\"role\":\"user\",\"content\":"
                 "\"Where is my order number 12345?\"}]}");
    len = p - body;

    rc = old_request_parse(&old, KVR_ENDPOINT_CHAT, body, len, 1 << 20);
    kvr_request_parse(&req, KVR_ENDPOINT_CHAT, body, len, 1 << 20);
    printf("tools body %zu bytes, status %s, rendering %zu bytes, %s\n",
           len, kvr_parse_status_name(rc), req.text_len,
           (old.req.text_len == req.text_len
            && memcmp(old.req.text, req.text, req.text_len) == 0)
           ? "same text as jansson" : "DIFFERENT text");
    old_request_free(&old);
    kvr_request_free(&req);

    for (i = 0; i < RUNS; i++) {
        t0 = now_us();
        kvr_request_parse(&req, KVR_ENDPOINT_CHAT, body, len, 1 << 20);
        t[i] = now_us() - t0;
        kvr_request_free(&req);
    }

    report("tools new: parse+free", t, RUNS, len);

    for (i = 0; i < RUNS; i++) {
        t0 = now_us();
        old_request_parse(&old, KVR_ENDPOINT_CHAT, body, len, 1 << 20);
        t[i] = now_us() - t0;
        old_request_free(&old);
    }

    report("tools old: parse+free", t, RUNS, len);

    free(body);
}


int
main(void)
{
    char                *body, *p;
    size_t               i, len, nw, nkeys;
    double              *t, t0;
    uint64_t             keys[1024];
    json_t              *root;
    old_request_t        old;
    kvr_request_t        req;
    kvr_json_doc_t      *doc;
    json_error_t         err;
    kvr_parse_status_e   rc;

    body = malloc(16384);
    t = malloc(RUNS * sizeof(double));
    if (body == NULL || t == NULL) {
        return 1;
    }

    p = body;
    p += sprintf(p, "{\"model\":\"qwen3-8b\",\"stream\":true,"
                 "\"max_tokens\":256,\"messages\":[{\"role\":\"system\","
                 "\"content\":\"");

    /* about 1,500 words of English: roughly 2,000 tokens, 9.3 KB */
    nw = 0;
    for (i = 0; p - body < 9300; i++) {
        p += sprintf(p, "%s%s", words[(i * 7 + i / 5) % 38],
                     (i % 17 == 16) ? ".\\n" : " ");
        nw++;
    }

    p += sprintf(p, "\"},{\"role\":\"user\",\"content\":\"Where is my order "
                 "number 12345? It was due last week.\"}]}");
    len = p - body;

    rc = kvr_request_parse(&req, KVR_ENDPOINT_CHAT, body, len, 1 << 20);
    printf("body %zu bytes, %zu words, status %s, rendering %zu bytes\n",
           len, nw, kvr_parse_status_name(rc), req.text_len);
    kvr_request_free(&req);

    rc = old_request_parse(&old, KVR_ENDPOINT_CHAT, body, len, 1 << 20);
    kvr_request_parse(&req, KVR_ENDPOINT_CHAT, body, len, 1 << 20);
    printf("jansson path: status %s, rendering %zu bytes, %s\n",
           kvr_parse_status_name(rc), old.req.text_len,
           (old.req.text_len == req.text_len
            && memcmp(old.req.text, req.text, req.text_len) == 0)
           ? "same text" : "DIFFERENT text");
    old_request_free(&old);
    kvr_request_free(&req);

    for (i = 0; i < RUNS; i++) {
        t0 = now_us();
        rc = kvr_request_parse(&req, KVR_ENDPOINT_CHAT, body, len, 1 << 20);
        t[i] = now_us() - t0;
        kvr_request_free(&req);
    }

    report("new: kvr_request_parse+free", t, RUNS, len);

    for (i = 0; i < RUNS; i++) {
        t0 = now_us();
        doc = kvr_json_parse(body, len, KVR_JSON_NUMBER_RANGE);
        t[i] = now_us() - t0;
        kvr_json_free(doc);
    }

    report("new: kvr_json_parse alone", t, RUNS, len);

    for (i = 0; i < RUNS; i++) {
        t0 = now_us();
        rc = old_request_parse(&old, KVR_ENDPOINT_CHAT, body, len, 1 << 20);
        t[i] = now_us() - t0;
        old_request_free(&old);
    }

    report("old: kvr_request_parse+free", t, RUNS, len);

    for (i = 0; i < RUNS; i++) {
        t0 = now_us();
        root = json_loadb(body, len, JSON_ALLOW_NUL, &err);
        t[i] = now_us() - t0;
        json_decref(root);
    }

    report("old: json_loadb alone", t, RUNS, len);

    rc = kvr_request_parse(&req, KVR_ENDPOINT_CHAT, body, len, 1 << 20);
    nkeys = 0;

    for (i = 0; i < RUNS; i++) {
        t0 = now_us();
        nkeys = kvr_hash_text_blocks(req.text, req.text_len, 64,
                                     KVR_HASH_SEED, keys, 1024);
        t[i] = now_us() - t0;
    }

    kvr_request_free(&req);
    printf("(%zu text keys of 64 bytes)\n", nkeys);
    report("text keys, 64-byte chunks", t, RUNS, 0);

    bench_tools(t);

    free(t);
    free(body);

    return 0;
}
