/*
 * Copyright (C) kvroute developers
 *
 * kvr-render-test: renders chat requests with kvr_chat, for the oracle
 * test and for timing.
 *
 *   kvr-render-test CONFIG.json [TEMPLATE_FILE] < requests.jsonl
 *       one JSON line out per request line in:
 *       {"ok":true,"text":"..."} or {"ok":false,"status":N,"err":"..."}
 *       a line {"template": "...", "request": {...}} renders that
 *       template (compiled for the line) with CONFIG's special tokens
 *   kvr-render-test --bench N CONFIG.json [TEMPLATE_FILE] < request.json
 *       renders the first request N times, prints the median and the
 *       90th percentile in microseconds
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "kvr_chat.h"


#define MAX_OUT  (8u << 20)


static char *
read_file(const char *path)
{
    FILE   *f;
    char   *buf;
    long    n;

    f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(n + 1);
    if (buf == NULL || fread(buf, 1, n, f) != (size_t) n) {
        fclose(f);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    fclose(f);

    return buf;
}


/* a line with its own template: compiled, then the request rendered */
static int
render_line(const char *config_path, kvr_json_doc_t *doc, uint32_t tnode,
    uint32_t rnode, kvr_jinja_limits_t *lim, char *out, size_t *out_len,
    char *err, size_t errlen)
{
    int                  rc;
    size_t               n, raw_len;
    char                *src, *config;
    kvr_chat_config_t   *cfg;

    kvr_json_raw(doc, tnode, &raw_len);
    src = malloc(raw_len + 1);
    config = read_file(config_path);
    if (src == NULL || config == NULL) {
        free(src);
        free(config);
        snprintf(err, errlen, "out of memory");
        return -100;
    }

    n = kvr_json_string_decode(doc, tnode, src, raw_len);
    src[n] = '\0';

    cfg = kvr_chat_config_parse(config, strlen(config), src, err, errlen);
    free(src);
    free(config);

    if (cfg == NULL) {
        return -99;
    }

    kvr_chat_config_set_limits(cfg, lim);
    rc = kvr_chat_render(cfg, doc, rnode, out, MAX_OUT, out_len, err,
                         errlen);
    kvr_chat_config_free(cfg);

    return rc;
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
    int                  rc, bench, i;
    uint32_t             tnode, rnode;
    char                *line, *out, *tpl, err[512];
    size_t               cap, out_len;
    ssize_t              n;
    double              *times;
    struct timespec      t0, t1;
    json_t              *res;
    kvr_json_doc_t      *doc;
    kvr_chat_config_t   *cfg;
    kvr_jinja_limits_t   lim;

    bench = 0;
    if (argc > 2 && strcmp(argv[1], "--bench") == 0) {
        bench = atoi(argv[2]);
        argv += 2;
        argc -= 2;
    }

    if (argc < 2) {
        fprintf(stderr, "usage: %s [--bench N] CONFIG.json [TEMPLATE]\n",
                argv[0]);
        return 2;
    }

    tpl = NULL;
    if (argc > 2) {
        tpl = read_file(argv[2]);
        if (tpl == NULL) {
            fprintf(stderr, "cannot read %s\n", argv[2]);
            return 2;
        }
    }

    cfg = kvr_chat_config_load(argv[1], tpl, err, sizeof(err));
    if (cfg == NULL) {
        fprintf(stderr, "config: %s\n", err);
        return 2;
    }

    memset(&lim, 0, sizeof(lim));
    lim.utc = (getenv("KVR_RENDER_UTC") != NULL);
    kvr_chat_config_set_limits(cfg, &lim);

    out = malloc(MAX_OUT);
    line = NULL;
    cap = 0;

    while ((n = getline(&line, &cap, stdin)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) {
            n--;
        }
        if (n == 0) {
            continue;
        }

        doc = kvr_json_parse(line, n, 0);
        if (doc == NULL || doc->status != KVR_JSON_OK) {
            printf("{\"ok\":false,\"status\":-100,\"err\":\"bad json\"}\n");
            kvr_json_free(doc);
            continue;
        }

        if (bench) {
            times = malloc(bench * sizeof(double));
            for (i = 0; i < bench; i++) {
                clock_gettime(CLOCK_MONOTONIC, &t0);
                rc = kvr_chat_render(cfg, doc, 0, out, MAX_OUT, &out_len,
                                     err, sizeof(err));
                clock_gettime(CLOCK_MONOTONIC, &t1);
                times[i] = (t1.tv_sec - t0.tv_sec) * 1e6
                           + (t1.tv_nsec - t0.tv_nsec) / 1e3;
                if (rc != 0) {
                    fprintf(stderr, "render failed: %s\n", err);
                    return 1;
                }
            }
            qsort(times, bench, sizeof(double), cmp_double);
            printf("renders %d, output %zu bytes, median %.1f us, "
                   "p90 %.1f us\n", bench, out_len, times[bench / 2],
                   times[bench * 9 / 10]);
            free(times);
            kvr_json_free(doc);
            break;
        }

        tnode = kvr_json_find(doc, 0, "template", 8);
        rnode = kvr_json_find(doc, 0, "request", 7);

        if (tnode && rnode) {
            rc = render_line(argv[1], doc, tnode, rnode, &lim, out,
                             &out_len, err, sizeof(err));
        } else {
            rc = kvr_chat_render(cfg, doc, 0, out, MAX_OUT, &out_len, err,
                                 sizeof(err));
        }
        kvr_json_free(doc);

        if (rc == 0) {
            res = json_pack("{s:b,s:s%}", "ok", 1, "text", out, out_len);
        } else {
            res = json_pack("{s:b,s:i,s:s}", "ok", 0, "status", rc,
                            "err", err);
        }

        if (res == NULL) {
            printf("{\"ok\":false,\"status\":-101,\"err\":\"encode\"}\n");
            continue;
        }

        line[0] = '\0';
        {
            char  *s = json_dumps(res, JSON_COMPACT);

            puts(s ? s : "{\"ok\":false,\"status\":-101}");
            free(s);
        }
        json_decref(res);
        fflush(stdout);
    }

    free(line);
    free(out);
    free(tpl);
    kvr_chat_config_free(cfg);

    return 0;
}
