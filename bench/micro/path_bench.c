/*
 * Copyright (C) kvroute developers
 *
 * Micro-benchmark of the library side of kvroute's request path for the
 * overhead benchmark's bodies (bench/overhead/chat.lua's 16 chat bodies,
 * about 8.7 KB): parse the body, render it into text keys, match the keys
 * on 4 servers of a 32 MB index (capacity 585 blocks each) and record them
 * on one, as the module does for every request.  Prints nanoseconds a
 * request, the best of 40 rounds (the machine is shared).  With a second
 * argument, every request is followed by writes to that many KB of other
 * memory, as the worker's network buffers evict the caches between two
 * requests; a third argument measures those writes alone.
 *
 * make build/micro/path_bench
 * build/micro/path_bench [requests a round] [KB evicted a request] [evict only]
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvr_request.h"
#include "kvr_hash.h"
#include "kvr_index.h"


#define BODIES      16
#define ROUNDS      40
#define ZONE_SIZE   (32UL * 1024 * 1024)
#define MAX_KEYS    1024


static const char  *words[] = {
    "the", "model", "serves", "requests", "from", "a", "shared", "prefix",
    "cache", "of", "blocks", "and", "tokens"
};


static double
now_ns(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return ts.tv_sec * 1e9 + ts.tv_nsec;
}


/* LuaJIT's a % b on numbers, so that the bodies are chat.lua's */
static double
lua_mod(double a, double b)
{
    double  q;

    q = a / b;
    q = (double) (int64_t) q - ((double) (int64_t) q > q);

    return a - q * b;
}


static char *
make_body(int p, size_t *len)
{
    int      i;
    char    *body, *q;
    double   seed;

    body = malloc(16384);
    if (body == NULL) {
        return NULL;
    }

    q = body + sprintf(body, "{\"model\":\"Qwen/Qwen3-0.6B\",\"max_tokens\":16,"
                             "\"messages\":[{\"role\":\"system\",\"content\":"
                             "\"You are assistant %d.", p);
    seed = p * 7919;

    for (i = 0; i < 1500; i++) {
        seed = lua_mod(seed * 1103515245.0 + 12345.0, 2147483648.0);
        q += sprintf(q, " %s", words[(int) lua_mod(seed, 13.0)]);
    }

    q += sprintf(q, "\"},{\"role\":\"user\",\"content\":\"Summarise the text "
                    "above in one line.\"}]}");
    *len = q - body;

    return body;
}


static void
hash_piece(void *data, const char *p, size_t len)
{
    kvr_hash_text_add(data, p, len);
}


int
main(int argc, char **argv)
{
    int                  p, slots[4];
    char                *bodies[BODIES], name[8];
    void                *region;
    size_t               lens[BODIES], i, j, k, iters, evict, r;
    double               t, best;
    uint32_t             overlap[4];
    uint64_t             keys[MAX_KEYS], seed;
    kvr_index_t         *ix;
    unsigned char        part[64], *junk;
    kvr_request_t        req;
    kvr_hash_text_t      ht;

    iters = (argc > 1) ? (size_t) atoi(argv[1]) : 5000;
    evict = (argc > 2) ? (size_t) atoi(argv[2]) * 1024 : 0;

    region = calloc(1, ZONE_SIZE);
    junk = malloc(evict + 64);

    if (region == NULL || junk == NULL) {
        return 1;
    }

    memset(junk, 1, evict + 64);

    ix = kvr_index_init(region, ZONE_SIZE);

    for (k = 0; k < 4; k++) {
        sprintf(name, "s%d", (int) k);
        slots[k] = kvr_index_slot(ix, name, strlen(name));
        kvr_index_slot_set_capacity(ix, slots[k], 585);
    }

    for (p = 0; p < BODIES; p++) {
        bodies[p] = make_body(p + 1, &lens[p]);
        if (bodies[p] == NULL) {
            return 1;
        }
    }

    best = 1e18;

    for (r = 0; r < ROUNDS; r++) {
        t = now_ns();

        for (i = 0; i < iters; i++) {
            if (argc <= 3) {
                k = i % BODIES;

                if (kvr_request_parse_body(&req, bodies[k], lens[k])
                    != KVR_PARSE_OK)
                {
                    return 2;
                }

                seed = kvr_hash_seed(req.model, req.model_len, NULL, 0);
                kvr_hash_text_init(&ht, 64, seed, keys, MAX_KEYS, part);

                if (kvr_request_prompt(&req, KVR_ENDPOINT_CHAT, 1 << 20,
                                       hash_piece, &ht)
                    != KVR_PARSE_OK)
                {
                    return 2;
                }

                kvr_request_free(&req);

                kvr_index_match_slots_jump(ix, slots, 4, keys, ht.n, 16,
                                           overlap);
                kvr_index_record(ix, slots[k % 4], keys, ht.n);
            }

            for (j = 0; j < evict; j += 64) {
                junk[j]++;
            }
        }

        t = (now_ns() - t) / iters;

        if (t < best) {
            best = t;
        }
    }

    printf("%.0f ns a request%s (best of %d rounds of %zu)\n", best,
           argc > 3 ? ", evictions only" : "", ROUNDS, iters);

    return 0;
}
