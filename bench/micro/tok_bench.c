/*
 * Copyright (C) kvroute developers
 *
 * tok_bench: single-core speed of the kvroute tokenizer.
 *
 *   tok_bench --tokenizer tokenizer.json [--corpus lines.txt ...]
 *             [--prompt prompt.txt] [--reps 1000]
 *
 * Prints load time and the heap the loaded tokenizer keeps; per corpus
 * (each line encoded separately, without special tokens) MB/s and Mtok/s
 * on a cold word cache and then warm, with the segment cache off (the
 * tokenizer's own work: a warm segment cache would answer whole lines);
 * for the prompt file (encoded whole) its token count and the p50 / p99
 * encode time with a warm word cache, segment cache off and then on (a
 * repeated prompt, e.g. a system prompt: hash, compare, copy).
 * Times are CPU time of this thread (the machine may be shared), the wall
 * clock figure is printed too.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <malloc.h>

#include "kvr_tokenizer.h"


#define TOK_BENCH_MAX_FILES  8


static double
tok_bench_clock(clockid_t id)
{
    struct timespec  ts;

    clock_gettime(id, &ts);

    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}


static double
tok_bench_now(void)
{
    return tok_bench_clock(CLOCK_THREAD_CPUTIME_ID);
}


static long
tok_bench_rss_kb(void)
{
    long   kb;
    char   line[256];
    FILE  *f;

    kb = -1;
    f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return kb;
    }

    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
        }
    }

    fclose(f);

    return kb;
}


/* bytes in use from malloc, mmap'ed blocks included */
static size_t
tok_bench_heap(void)
{
    struct mallinfo2  mi;

    mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}


static char *
tok_bench_read(const char *path, size_t *len)
{
    long   size;
    char  *data;
    FILE  *f;

    f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }

    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);

    data = (size >= 0) ? malloc((size_t) size + 1) : NULL;

    if (data == NULL || fread(data, 1, (size_t) size, f) != (size_t) size) {
        free(data);
        fclose(f);
        return NULL;
    }

    fclose(f);
    data[size] = '\0';
    *len = (size_t) size;

    return data;
}


/* encodes every line; returns the token count or -1 */
static long
tok_bench_lines(kvr_tokenizer_t *tk, const char *data, size_t len,
    kvr_ids_t *ids)
{
    long         total;
    const char  *p, *end, *nl;

    total = 0;
    p = data;
    end = data + len;

    while (p < end) {
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL) {
            nl = end;
        }

        kvr_ids_reset(ids);

        if (kvr_tokenizer_encode(tk, p, (size_t) (nl - p), 0, ids)
            != KVR_TOK_OK)
        {
            return -1;
        }

        total += (long) ids->n;
        p = nl + 1;
    }

    return total;
}


static int
tok_bench_cmp(const void *a, const void *b)
{
    double  x, y;

    x = *(const double *) a;
    y = *(const double *) b;

    return (x > y) - (x < y);
}


int
main(int argc, char **argv)
{
    int                           i, n_files, reps, r, seg;
    char                          err[512], *data;
    long                          rss0, rss1, tokens;
    size_t                        len, heap0, heap1;
    double                        t0, t1, w0, w1, *times;
    kvr_ids_t                     ids;
    const char                   *json_path, *prompt_path;
    const char                   *files[TOK_BENCH_MAX_FILES];
    kvr_tokenizer_t              *tk;
    kvr_tokenizer_cache_stats_t   st;

    json_path = NULL;
    prompt_path = NULL;
    n_files = 0;
    reps = 1000;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tokenizer") == 0 && i + 1 < argc) {
            json_path = argv[++i];

        } else if (strcmp(argv[i], "--corpus") == 0 && i + 1 < argc
                   && n_files < TOK_BENCH_MAX_FILES)
        {
            files[n_files++] = argv[++i];

        } else if (strcmp(argv[i], "--prompt") == 0 && i + 1 < argc) {
            prompt_path = argv[++i];

        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);

        } else {
            fprintf(stderr, "usage: tok_bench --tokenizer tokenizer.json "
                    "[--corpus file ...] [--prompt file] [--reps n]\n");
            return 2;
        }
    }

    if (json_path == NULL || reps < 1) {
        fprintf(stderr, "tok_bench: --tokenizer is required\n");
        return 2;
    }

    rss0 = tok_bench_rss_kb();
    heap0 = tok_bench_heap();
    w0 = tok_bench_clock(CLOCK_MONOTONIC);
    t0 = tok_bench_now();
    tk = kvr_tokenizer_load(json_path, NULL, err, sizeof(err));
    t1 = tok_bench_now();
    w1 = tok_bench_clock(CLOCK_MONOTONIC);
    heap1 = tok_bench_heap();
    rss1 = tok_bench_rss_kb();

    if (tk == NULL) {
        fprintf(stderr, "tok_bench: %s\n", err);
        return 1;
    }

    printf("load: %.0f ms cpu (%.0f ms wall), heap kept %.1f MB, "
           "peak resident +%.1f MB\n", (t1 - t0) * 1e3, (w1 - w0) * 1e3,
           (double) (heap1 - heap0) / 1e6, (double) (rss1 - rss0) / 1024);

    kvr_ids_init(&ids, 1 << 24);

    if (kvr_tokenizer_set_segment_cache(tk, 0, 0) != 0) {
        return 1;
    }

    for (i = 0; i < n_files; i++) {
        data = tok_bench_read(files[i], &len);
        if (data == NULL) {
            fprintf(stderr, "tok_bench: cannot read %s\n", files[i]);
            return 1;
        }

        for (r = 0; r < 3; r++) {
            w0 = tok_bench_clock(CLOCK_MONOTONIC);
            t0 = tok_bench_now();
            tokens = tok_bench_lines(tk, data, len, &ids);
            t1 = tok_bench_now();
            w1 = tok_bench_clock(CLOCK_MONOTONIC);

            if (tokens < 0) {
                fprintf(stderr, "tok_bench: encode failed\n");
                return 1;
            }

            printf("%s: %.2f MB, %ld tokens, %s: %.1f MB/s, %.2f Mtok/s "
                   "(wall %.1f MB/s)\n", files[i], (double) len / 1e6,
                   tokens, r == 0 ? "cold cache" : "warm cache",
                   (double) len / 1e6 / (t1 - t0),
                   (double) tokens / 1e6 / (t1 - t0),
                   (double) len / 1e6 / (w1 - w0));
        }

        free(data);
    }

    for (seg = 0; prompt_path != NULL && seg < 2; seg++) {
        data = tok_bench_read(prompt_path, &len);
        times = malloc(reps * sizeof(double));

        if (data == NULL || times == NULL) {
            fprintf(stderr, "tok_bench: cannot read %s\n", prompt_path);
            return 1;
        }

        if (seg
            && kvr_tokenizer_set_segment_cache(tk, KVR_TOK_SEGMENT_MIN,
                                               KVR_TOK_SEGMENT_CACHE)
               != 0)
        {
            return 1;
        }

        for (r = -10; r < reps; r++) {
            kvr_ids_reset(&ids);
            t0 = tok_bench_now();

            if (kvr_tokenizer_encode(tk, data, len, 0, &ids) != KVR_TOK_OK) {
                fprintf(stderr, "tok_bench: prompt encode failed\n");
                return 1;
            }

            t1 = tok_bench_now();

            if (r >= 0) {
                times[r] = t1 - t0;
            }
        }

        qsort(times, reps, sizeof(double), tok_bench_cmp);

        printf("prompt %s: %zu bytes, %zu tokens, warm p50 %.1f us, "
               "p99 %.1f us, segment cache %s\n", prompt_path, len, ids.n,
               times[reps / 2] * 1e6, times[reps * 99 / 100] * 1e6,
               seg ? "on (hits)" : "off");

        if (seg) {
            kvr_tokenizer_cache_stats(tk, &st);
            printf("segment cache: %zu entries, %zu of %zu bytes, %llu "
                   "hits, %llu misses\n", st.entries, st.bytes,
                   st.max_bytes, (unsigned long long) st.hits,
                   (unsigned long long) st.misses);
        }

        free(times);
        free(data);
    }

    kvr_ids_free(&ids);
    kvr_tokenizer_free(tk);

    return 0;
}
