/*
 * Copyright (C) kvroute developers
 *
 * Prometheus' text format, as engines write it (prometheus_client): one
 * sample a line, "name{label="value",...} value [timestamp]", comments
 * after "#".  Only the load metrics of vLLM and SGLang are kept; every
 * other line is stepped over.  Labels are read, not skipped blindly, so a
 * '}' or an escaped quote inside a label's value cannot end them early.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvr_prom.h"


typedef struct {
    const char  *name;
    size_t       len;
    uint32_t     what;
    uint32_t     family;
} kvr_prom_name_t;


#define kvr_prom_name(s, what, family)  { s, sizeof(s) - 1, what, family }

/* docs/engine-metrics.md: where each name comes from */
static const kvr_prom_name_t  kvr_prom_names[] = {
    kvr_prom_name("vllm:num_requests_running", KVR_PROM_RUNNING,
                  KVR_PROM_VLLM),
    kvr_prom_name("vllm:num_requests_waiting", KVR_PROM_WAITING,
                  KVR_PROM_VLLM),
    kvr_prom_name("vllm:kv_cache_usage_perc", KVR_PROM_USAGE, KVR_PROM_VLLM),
    kvr_prom_name("vllm:gpu_cache_usage_perc", KVR_PROM_USAGE,
                  KVR_PROM_VLLM),
    kvr_prom_name("sglang:num_running_reqs", KVR_PROM_RUNNING,
                  KVR_PROM_SGLANG),
    kvr_prom_name("sglang:num_queue_reqs", KVR_PROM_WAITING,
                  KVR_PROM_SGLANG),
    kvr_prom_name("sglang:token_usage", KVR_PROM_USAGE, KVR_PROM_SGLANG),
    kvr_prom_name("vllm:inter_token_latency_seconds_sum", KVR_PROM_ITL_SUM,
                  KVR_PROM_VLLM),
    kvr_prom_name("vllm:inter_token_latency_seconds_count",
                  KVR_PROM_ITL_COUNT, KVR_PROM_VLLM),
    kvr_prom_name("vllm:time_per_output_token_seconds_sum",
                  KVR_PROM_TPOT_SUM, KVR_PROM_VLLM),
    kvr_prom_name("vllm:time_per_output_token_seconds_count",
                  KVR_PROM_TPOT_COUNT, KVR_PROM_VLLM),
    kvr_prom_name("sglang:inter_token_latency_seconds_sum",
                  KVR_PROM_ITL_SUM, KVR_PROM_SGLANG),
    kvr_prom_name("sglang:inter_token_latency_seconds_count",
                  KVR_PROM_ITL_COUNT, KVR_PROM_SGLANG),
    { NULL, 0, 0, 0 }
};


/* the longest value worth reading: "-1.2345678901234567e+308" and more */
#define KVR_PROM_NUMBER_MAX  64


static void kvr_prom_line(const char *p, const char *end,
    kvr_prom_load_t *out);
static const char *kvr_prom_labels(const char *p, const char *end,
    int *mirror);
static int kvr_prom_number(const char *p, const char *end, double *v);
static int kvr_prom_timestamp(const char *p, const char *end);
static void kvr_prom_take(kvr_prom_load_t *out, const kvr_prom_name_t *n,
    double v, int mirror);


int
kvr_prom_parse(const char *buf, size_t len, kvr_prom_load_t *out)
{
    kvr_prom_init(out);

    if (buf != NULL) {
        (void) kvr_prom_feed(buf, len, out);
    }

    return kvr_prom_done(out);
}


void
kvr_prom_init(kvr_prom_load_t *out)
{
    memset(out, 0, sizeof(kvr_prom_load_t));
}


size_t
kvr_prom_feed(const char *buf, size_t len, kvr_prom_load_t *out)
{
    const char  *p, *end, *nl;

    p = buf;
    end = buf + len;

    while (p < end) {
        nl = memchr(p, '\n', (size_t) (end - p));

        if (nl == NULL) {
            /* cut short, or in the next piece: its value may lack digits */
            break;
        }

        kvr_prom_line(p, nl, out);
        p = nl + 1;
    }

    return (size_t) (p - buf);
}


int
kvr_prom_done(kvr_prom_load_t *out)
{
    uint32_t  f, p;

    f = (out->family_found[KVR_PROM_VLLM] & (KVR_PROM_RUNNING
                                             | KVR_PROM_WAITING))
        ? KVR_PROM_VLLM : KVR_PROM_SGLANG;

    out->running = out->family_running[f];
    out->waiting = out->family_waiting[f];
    out->usage = out->family_usage[f];
    out->found = out->family_found[f] & (KVR_PROM_RUNNING | KVR_PROM_WAITING
                                         | KVR_PROM_USAGE);

    /*
     * vLLM wrote the same histogram under its older name beside the new
     * one for a while: the new one when whole, else the older
     */

    p = out->family_found[f];

    if ((p & KVR_PROM_ITL_SUM) && (p & KVR_PROM_ITL_COUNT)) {
        out->itl_sum = out->family_itl[f][0];
        out->itl_count = out->family_itl[f][1];
        out->found |= KVR_PROM_ITL;

    } else if ((p & KVR_PROM_TPOT_SUM) && (p & KVR_PROM_TPOT_COUNT)) {
        out->itl_sum = out->family_itl[f][2];
        out->itl_count = out->family_itl[f][3];
        out->found |= KVR_PROM_ITL;
    }

    return (out->found & (KVR_PROM_RUNNING | KVR_PROM_WAITING)) ? 0 : -1;
}


static int
kvr_prom_blank(char c)
{
    return c == ' ' || c == '\t';
}


static const char *
kvr_prom_skip_blanks(const char *p, const char *end)
{
    while (p < end && kvr_prom_blank(*p)) {
        p++;
    }

    return p;
}


static int
kvr_prom_name_char(char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'
           || c == ':' || (!first && c >= '0' && c <= '9');
}


static void
kvr_prom_line(const char *p, const char *end, kvr_prom_load_t *out)
{
    int                     mirror;
    double                  v;
    const char             *name, *value;
    const kvr_prom_name_t  *n;

    /* CRLF, and blanks at either end */

    while (end > p && (end[-1] == '\r' || kvr_prom_blank(end[-1]))) {
        end--;
    }

    p = kvr_prom_skip_blanks(p, end);

    if (p == end || *p == '#') {
        return;
    }

    name = p;

    while (p < end && kvr_prom_name_char(*p, p == name)) {
        p++;
    }

    if (p == name) {
        out->bad++;
        return;
    }

    for (n = kvr_prom_names; n->name; n++) {
        if (n->len == (size_t) (p - name)
            && memcmp(n->name, name, n->len) == 0)
        {
            break;
        }
    }

    mirror = 0;

    if (p < end && *p == '{') {
        p = kvr_prom_labels(p + 1, end, &mirror);

        if (p == NULL) {
            out->bad++;
            return;
        }
    }

    /* at least one blank, the value, then maybe a timestamp */

    if (p == end || !kvr_prom_blank(*p)) {
        out->bad++;
        return;
    }

    p = kvr_prom_skip_blanks(p, end);

    value = p;

    while (p < end && !kvr_prom_blank(*p)) {
        p++;
    }

    if (kvr_prom_number(value, p, &v) != 0
        || kvr_prom_timestamp(p, end) != 0)
    {
        out->bad++;
        return;
    }

    out->samples++;

    if (n->name) {
        kvr_prom_take(out, n, v, mirror);
    }
}


/*
 * The labels after '{', up to and past the '}'; NULL when malformed.
 * *mirror: a series of a tensor or pipeline rank other than 0 (SGLang
 * labels every rank's scheduler; ranks > 0 repeat rank 0's queue).
 */

static const char *
kvr_prom_labels(const char *p, const char *end, int *mirror)
{
    int          rank;
    const char  *name, *value;

    for ( ;; ) {
        p = kvr_prom_skip_blanks(p, end);

        if (p == end) {
            return NULL;
        }

        if (*p == '}') {
            return p + 1;
        }

        name = p;

        while (p < end && kvr_prom_name_char(*p, p == name) && *p != ':') {
            p++;
        }

        if (p == name) {
            return NULL;
        }

        rank = ((size_t) (p - name) == sizeof("tp_rank") - 1
                && (memcmp(name, "tp_rank", p - name) == 0
                    || memcmp(name, "pp_rank", p - name) == 0));

        p = kvr_prom_skip_blanks(p, end);

        if (p == end || *p++ != '=') {
            return NULL;
        }

        p = kvr_prom_skip_blanks(p, end);

        if (p == end || *p++ != '"') {
            return NULL;
        }

        value = p;

        while (p < end && *p != '"') {
            if (*p == '\\') {
                p++;            /* \\, \", \n: the next byte is taken */
            }

            if (p < end) {
                p++;
            }
        }

        if (p == end) {
            return NULL;
        }

        if (rank && !(p - value == 1 && *value == '0')) {
            *mirror = 1;
        }

        p = kvr_prom_skip_blanks(p + 1, end);    /* past the closing quote */

        if (p < end && *p == ',') {
            p++;
        }
    }
}


/* Go's ParseFloat as Prometheus writes it: decimals, NaN, +Inf, -Inf */

static int
kvr_prom_number(const char *p, const char *end, double *v)
{
    char    buf[KVR_PROM_NUMBER_MAX + 1], *last;
    size_t  len;

    len = (size_t) (end - p);

    if (len == 0 || len > KVR_PROM_NUMBER_MAX) {
        return -1;
    }

    memcpy(buf, p, len);
    buf[len] = '\0';

    /* strtod would take hexadecimal and leading blanks too: no need */

    if (strchr(buf, 'x') || strchr(buf, 'X')) {
        return -1;
    }

    *v = strtod(buf, &last);

    return (last == buf + len) ? 0 : -1;
}


/* after the value: nothing, or a timestamp in ms ("-" and digits) */

static int
kvr_prom_timestamp(const char *p, const char *end)
{
    const char  *digits;

    p = kvr_prom_skip_blanks(p, end);

    if (p == end) {
        return 0;
    }

    if (*p == '-') {
        p++;
    }

    digits = p;

    while (p < end && *p >= '0' && *p <= '9') {
        p++;
    }

    /* the line's blanks at the end were taken off before */
    return (p > digits && p == end) ? 0 : -1;
}


static void
kvr_prom_take(kvr_prom_load_t *out, const kvr_prom_name_t *name, double v,
    int mirror)
{
    int        i;
    uint32_t   n, *sum, *found;

    /* NaN, infinities and negatives say nothing about the load */

    if (!isfinite(v) || v < 0) {
        return;
    }

    found = &out->family_found[name->family];

    if (name->what == KVR_PROM_USAGE) {
        n = (v >= 1) ? 1000 : (uint32_t) (v * 1000 + 0.5);

        if (!(*found & KVR_PROM_USAGE) || n > out->family_usage[name->family])
        {
            out->family_usage[name->family] = n;
        }

        *found |= KVR_PROM_USAGE;
        return;
    }

    if (mirror) {
        return;
    }

    switch (name->what) {
    case KVR_PROM_ITL_SUM:
        i = 0;
        break;
    case KVR_PROM_ITL_COUNT:
        i = 1;
        break;
    case KVR_PROM_TPOT_SUM:
        i = 2;
        break;
    case KVR_PROM_TPOT_COUNT:
        i = 3;
        break;
    default:
        i = -1;
    }

    if (i >= 0) {
        /* series of DP engines add up: their sum over their count */
        out->family_itl[name->family][i] += v;
        *found |= name->what;
        return;
    }

    n = (v >= KVR_PROM_MAX_COUNT) ? KVR_PROM_MAX_COUNT
                                  : (uint32_t) (v + 0.5);

    sum = (name->what == KVR_PROM_RUNNING)
          ? &out->family_running[name->family]
          : &out->family_waiting[name->family];

    *sum = (*sum + n > KVR_PROM_MAX_COUNT) ? KVR_PROM_MAX_COUNT : *sum + n;

    *found |= name->what;
}
