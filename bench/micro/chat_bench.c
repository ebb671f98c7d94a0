/*
 * Copyright (C) kvroute developers
 *
 * Per-request cost of exact keys for a chat request: parse the body,
 * render it with the model's chat template, tokenize, hash the token
 * blocks; the same work the module does per request with tokenizer= and
 * tokenizer_config= set.  Prints the median and p99 over many runs, with
 * a warm word cache (the same system prompt every time, a new user
 * message each time, as a prefix-heavy workload has).
 *
 *   make bench-chat   (or see mk/bench.mk for the build line)
 *   build/chat_bench MODELS_DIR/tokenizer.json MODELS_DIR/tokenizer_config.json
 *       [TEMPLATE.jinja]     (a chat template the config does not carry)
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvr_request.h"
#include "kvr_tokenizer.h"
#include "kvr_chat.h"
#include "kvr_hash.h"


#define RUNS    2000
#define WORDS   2320


static const char  *words[] = {
    "the", "model", "serves", "requests", "from", "a", "shared", "prefix",
    "cache", "of", "blocks", "and", "tokens", "while", "engines", "keep"
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


int
main(int argc, char **argv)
{
    int                 rc;
    char                err[256], *body, *out, *p, *tpl;
    long                tpl_len;
    FILE               *f;
    size_t              i, len, out_len, nblocks, tokens;
    double              t0, t1, t2, times[RUNS], load_us;
    static double       renders[RUNS], encodes[RUNS];
    uint64_t            hashes[4096];
    kvr_ids_t           ids;
    kvr_request_t       req;
    kvr_tokenizer_t    *tk;
    kvr_chat_config_t  *chat;

    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: chat_bench tokenizer.json "
                "tokenizer_config.json [template.jinja]\n");
        return 2;
    }

    tpl = NULL;
    if (argc == 4) {
        f = fopen(argv[3], "rb");
        if (f == NULL || fseek(f, 0, SEEK_END) != 0
            || (tpl_len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0
            || (tpl = calloc(1, tpl_len + 1)) == NULL
            || fread(tpl, 1, tpl_len, f) != (size_t) tpl_len)
        {
            fprintf(stderr, "cannot read %s\n", argv[3]);
            return 2;
        }
        fclose(f);
    }

    t0 = now_us();
    tk = kvr_tokenizer_load(argv[1], argv[2], err, sizeof(err));
    load_us = now_us() - t0;

    if (tk == NULL) {
        fprintf(stderr, "tokenizer: %s\n", err);
        return 1;
    }

    chat = kvr_chat_config_load(argv[2], tpl, err, sizeof(err));
    free(tpl);
    if (chat == NULL) {
        fprintf(stderr, "chat template: %s\n", err);
        return 1;
    }

    body = malloc(65536);
    out = malloc(1 << 20);
    kvr_ids_init(&ids, 1 << 20);

    tokens = 0;
    nblocks = 0;

    for (i = 0; i < RUNS; i++) {
        p = body;
        p += sprintf(p, "{\"model\":\"Qwen/Qwen3-0.6B\",\"messages\":["
                     "{\"role\":\"system\",\"content\":\"You are assistant "
                     "7.");

        for (size_t w = 0; w < WORDS; w++) {
            p += sprintf(p, " %s", words[(w * 7 + w / 16) % 16]);
        }

        p += sprintf(p, "\"},{\"role\":\"user\",\"content\":\"Question %zu:"
                     " what does the text above say about blocks?\"}]}", i);
        len = p - body;

        t0 = now_us();

        if (kvr_request_parse(&req, KVR_ENDPOINT_CHAT, body, len, 1 << 20)
            != KVR_PARSE_OK)
        {
            fprintf(stderr, "parse failed\n");
            return 1;
        }

        t1 = now_us();
        rc = kvr_chat_render(chat, req.root, 0, out, 1 << 20, &out_len, err,
                             sizeof(err));
        t2 = now_us();
        renders[i] = t2 - t1;
        if (rc != KVR_CHAT_OK) {
            fprintf(stderr, "render: %s\n", err);
            return 1;
        }

        kvr_ids_reset(&ids);

        if (kvr_tokenizer_encode(tk, out, out_len, 0, &ids) != KVR_TOK_OK) {
            fprintf(stderr, "encode failed\n");
            return 1;
        }
        encodes[i] = now_us() - t2;

        nblocks = kvr_hash_token_blocks(ids.ids, ids.n, 16,
                                        kvr_hash_seed(NULL, 0, NULL, 0),
                                        hashes, 4096);
        tokens = ids.n;

        kvr_request_free(&req);

        times[i] = now_us() - t0;
    }

    qsort(times, RUNS, sizeof(double), cmp_double);
    qsort(renders, RUNS, sizeof(double), cmp_double);
    qsort(encodes, RUNS, sizeof(double), cmp_double);

    printf("chat body %zu bytes -> %zu tokens, %zu blocks\n", len, tokens,
           nblocks);
    printf("parse+render+tokenize+hash: p50 %.1f us, p90 %.1f us, "
           "p99 %.1f us (%d runs, warm)\n", times[RUNS / 2],
           times[RUNS * 9 / 10], times[RUNS * 99 / 100], RUNS);
    printf("of which render p50 %.1f us, tokenize p50 %.1f us\n",
           renders[RUNS / 2], encodes[RUNS / 2]);
    printf("tokenizer load %.0f ms\n", load_us / 1000);

    kvr_ids_free(&ids);
    kvr_chat_config_free(chat);
    kvr_tokenizer_free(tk);
    free(body);
    free(out);

    return 0;
}
