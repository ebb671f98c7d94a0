/*
 * Copyright (C) kvroute developers
 *
 * Micro-benchmark of kvr_request_parse() on a chat body of about 9.5 KB
 * (a system prompt of about 2,000 tokens of English plus one user
 * message).  Prints the median, p10 and p90 of many runs in microseconds,
 * for the whole parse and for its parts (json_loadb alone, chained text
 * keys of the rendering).
 *
 * Not part of any make target; build and run by hand:
 *   cc -O2 -Isrc bench/micro/bench_request.c src/kvr_request.c \
 *       src/kvr_hash.c -ljansson -lxxhash -o build/bench_request
 *   build/bench_request
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvr_hash.h"
#include "kvr_request.h"


#define RUNS  20000


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


static void
report(const char *name, double *t, size_t n)
{
    qsort(t, n, sizeof(double), cmp_double);
    printf("%-28s median %8.2f us  p10 %8.2f  p90 %8.2f\n", name,
           t[n / 2], t[n / 10], t[n * 9 / 10]);
}


int
main(void)
{
    char                *body, *p;
    size_t               i, len, nw, nkeys;
    double              *t, t0;
    uint64_t             keys[1024];
    json_t              *root;
    kvr_request_t        req;
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

    for (i = 0; i < RUNS; i++) {
        t0 = now_us();
        rc = kvr_request_parse(&req, KVR_ENDPOINT_CHAT, body, len, 1 << 20);
        t[i] = now_us() - t0;
        kvr_request_free(&req);
    }

    report("kvr_request_parse+free", t, RUNS);

    for (i = 0; i < RUNS; i++) {
        t0 = now_us();
        root = json_loadb(body, len, JSON_ALLOW_NUL, &err);
        t[i] = now_us() - t0;
        json_decref(root);
    }

    report("json_loadb alone", t, RUNS);

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
    report("text keys, 64-byte chunks", t, RUNS);

    free(t);
    free(body);

    return 0;
}
