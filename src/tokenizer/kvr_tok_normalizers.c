/*
 * Copyright (C) kvroute developers
 *
 * Normalizer steps (HF normalizers/): NFC (kvr_tok_normalize.c), Prepend
 * (only to a non-empty string), Replace (every non-overlapping occurrence
 * of a literal, left to right), in Sequence order.
 *
 * When every step is a Prepend or a Replace of one ASCII byte by a
 * non-empty string, the sequence is a fixed prefix followed by each byte
 * mapped on its own (a Replace of one byte acts on every byte alone, and
 * the text stays non-empty, so every Prepend applies): it is composed at
 * load and applied in one pass.
 */

#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "kvr_tok_normalizers.h"
#include "kvr_tok_normalize.h"
#include "kvr_tok_unicode.h"


#define KVR_NORM_MAX_STEPS  8

#define KVR_NORM_NFC      1
#define KVR_NORM_PREPEND  2
#define KVR_NORM_REPLACE  3

/* the one-pass form: bytes replaced, and the bytes of a replacement */
#define KVR_NORM_MAX_BYTES  4
#define KVR_NORM_MAX_REP    16


typedef struct {
    int        type;
    char      *pattern;      /* Replace: the literal */
    size_t     pattern_len;
    char      *content;      /* Prepend's text, Replace's replacement */
    size_t     content_len;
} kvr_norm_step_t;


typedef struct {
    uint8_t    bytes[KVR_NORM_MAX_REP];
    size_t     len;
    uint32_t   first;        /* its first and last code points */
    uint32_t   last;
} kvr_norm_rep_t;


struct kvr_tok_norm_s {
    kvr_norm_step_t  steps[KVR_NORM_MAX_STEPS];
    size_t           n;

    /* the one-pass form: prefix, then each byte b as reps[rep_of[b] - 1] */
    int              one_pass;
    uint8_t         *prefix;
    size_t           prefix_len;
    uint8_t          rep_of[128];              /* 0: kept */
    uint8_t          rep_byte[KVR_NORM_MAX_BYTES];
    kvr_norm_rep_t   reps[KVR_NORM_MAX_BYTES];
    size_t           n_reps;
    size_t           max_rep;                  /* longest output a byte */
};


static int kvr_norm_replace(const kvr_norm_step_t *st, const uint8_t *s,
    size_t len, uint8_t **out, size_t *out_len);
static int kvr_norm_compile(kvr_tok_norm_t *norm);


static char *
kvr_norm_strdup(json_t *v, size_t *len)
{
    char  *s;

    *len = json_string_length(v);
    s = malloc(*len + 1);

    if (s != NULL) {
        memcpy(s, json_string_value(v), *len + 1);
    }

    return s;
}


static int
kvr_norm_load_step(kvr_tok_norm_t *norm, json_t *item, char *err,
    size_t errlen)
{
    json_t           *pattern, *lit, *content;
    const char       *type;
    kvr_norm_step_t  *st;

    type = json_string_value(json_object_get(item, "type"));

    if (type == NULL) {
        snprintf(err, errlen, "normalizer: no type");
        return -1;
    }

    if (norm->n == KVR_NORM_MAX_STEPS) {
        snprintf(err, errlen, "normalizer: Sequence of over %d is not "
                 "supported", KVR_NORM_MAX_STEPS);
        return -1;
    }

    st = &norm->steps[norm->n];

    if (strcmp(type, "NFC") == 0) {
        if (kvr_tok_nfc_check_version(err, errlen) != 0) {
            return -1;
        }

        st->type = KVR_NORM_NFC;

    } else if (strcmp(type, "Prepend") == 0) {
        content = json_object_get(item, "prepend");

        if (!json_is_string(content)) {
            snprintf(err, errlen, "normalizer Prepend without a string");
            return -1;
        }

        st->type = KVR_NORM_PREPEND;
        st->content = kvr_norm_strdup(content, &st->content_len);

    } else if (strcmp(type, "Replace") == 0) {
        pattern = json_object_get(item, "pattern");
        lit = json_object_get(pattern, "String");
        content = json_object_get(item, "content");

        if (!json_is_string(lit) || json_string_length(lit) == 0
            || !json_is_string(content))
        {
            snprintf(err, errlen, "normalizer Replace with a %s pattern is "
                     "not supported", json_object_get(pattern, "Regex")
                     ? "Regex" : "non-String");
            return -1;
        }

        st->type = KVR_NORM_REPLACE;
        st->pattern = kvr_norm_strdup(lit, &st->pattern_len);
        st->content = kvr_norm_strdup(content, &st->content_len);

        if (st->pattern == NULL) {
            goto no_memory;
        }

    } else {
        snprintf(err, errlen, "normalizer %s is not supported", type);
        return -1;
    }

    if (st->type != KVR_NORM_NFC && st->content == NULL) {
        goto no_memory;
    }

    norm->n++;

    return 0;

no_memory:

    /* free() the partial step: it is not counted in n */
    free(st->pattern);
    free(st->content);
    snprintf(err, errlen, "normalizer: out of memory");

    return -1;
}


kvr_tok_norm_t *
kvr_tok_norm_load(json_t *normalizer, char *err, size_t errlen)
{
    size_t           i;
    json_t          *list, *item;
    kvr_tok_norm_t  *norm;

    norm = calloc(1, sizeof(kvr_tok_norm_t));
    if (norm == NULL) {
        snprintf(err, errlen, "normalizer: out of memory");
        return NULL;
    }

    if (normalizer == NULL || json_is_null(normalizer)) {
        return norm;
    }

    list = json_object_get(normalizer, "normalizers");

    if (json_is_string(json_object_get(normalizer, "type"))
        && strcmp(json_string_value(json_object_get(normalizer, "type")),
                  "Sequence") == 0)
    {
        if (!json_is_array(list)) {
            snprintf(err, errlen, "normalizer Sequence without a list");
            goto failed;
        }

        json_array_foreach(list, i, item) {
            if (json_is_string(json_object_get(item, "type"))
                && strcmp(json_string_value(json_object_get(item, "type")),
                          "Sequence") == 0)
            {
                snprintf(err, errlen, "normalizer Sequence inside a "
                         "Sequence is not supported");
                goto failed;
            }

            if (kvr_norm_load_step(norm, item, err, errlen) != 0) {
                goto failed;
            }
        }

    } else if (kvr_norm_load_step(norm, normalizer, err, errlen) != 0) {
        goto failed;
    }

    if (kvr_norm_compile(norm) != 0) {
        snprintf(err, errlen, "normalizer: out of memory");
        goto failed;
    }

    return norm;

failed:

    kvr_tok_norm_free(norm);

    return NULL;
}


void
kvr_tok_norm_free(kvr_tok_norm_t *norm)
{
    size_t  i;

    if (norm == NULL) {
        return;
    }

    for (i = 0; i < norm->n; i++) {
        free(norm->steps[i].pattern);
        free(norm->steps[i].content);
    }

    free(norm->prefix);
    free(norm);
}


int
kvr_tok_norm_identity(const kvr_tok_norm_t *norm)
{
    return norm->n == 0;
}


/*
 * Replace of one byte (SentencePiece's ' ' -> U+2581): a byte loop, as
 * the byte is frequent and a memmem a hit costs more than the scan
 */
static int
kvr_norm_replace_byte(const kvr_norm_step_t *st, const uint8_t *s,
    size_t len, uint8_t **out, size_t *out_len)
{
    int       hit;
    size_t    i, count, n;
    uint8_t   c, rep[4], *buf, *w;

    *out = NULL;
    c = st->pattern[0];
    count = 0;

    for (i = 0; i < len; i++) {
        count += (s[i] == c);
    }

    if (count == 0) {
        return 0;
    }

    n = len - count + count * st->content_len;

    /* 4 bytes of slack: the short replacement is stored branch-free */
    buf = malloc(n + 4);
    if (buf == NULL) {
        return -1;
    }

    w = buf;

    if (st->content_len >= 1 && st->content_len <= 4) {
        memset(rep, 0, sizeof(rep));
        memcpy(rep, st->content, st->content_len);

        for (i = 0; i < len; i++) {
            hit = (s[i] == c);
            w[0] = hit ? rep[0] : s[i];
            w[1] = rep[1];
            w[2] = rep[2];
            w[3] = rep[3];
            w += hit ? st->content_len : 1;
        }

    } else {
        for (i = 0; i < len; i++) {
            if (s[i] != c) {
                *w++ = s[i];
                continue;
            }
            memcpy(w, st->content, st->content_len);
            w += st->content_len;
        }
    }

    *out = buf;
    *out_len = n;

    return 0;
}


/* Replace: NULL *out when the literal does not occur */
static int
kvr_norm_replace(const kvr_norm_step_t *st, const uint8_t *s, size_t len,
    uint8_t **out, size_t *out_len)
{
    size_t         count, n;
    uint8_t       *buf, *w;
    const uint8_t *p, *end, *hit;

    if (st->pattern_len == 1) {
        return kvr_norm_replace_byte(st, s, len, out, out_len);
    }

    *out = NULL;
    count = 0;
    end = s + len;

    for (p = s; (hit = memmem(p, (size_t) (end - p), st->pattern,
                              st->pattern_len)) != NULL;
         p = hit + st->pattern_len)
    {
        count++;
    }

    if (count == 0) {
        return 0;
    }

    n = len - count * st->pattern_len + count * st->content_len;

    buf = malloc(n + 1);
    if (buf == NULL) {
        return -1;
    }

    w = buf;

    for (p = s; (hit = memmem(p, (size_t) (end - p), st->pattern,
                              st->pattern_len)) != NULL;
         p = hit + st->pattern_len)
    {
        memcpy(w, p, (size_t) (hit - p));
        w += hit - p;
        memcpy(w, st->content, st->content_len);
        w += st->content_len;
    }

    memcpy(w, p, (size_t) (end - p));

    *out = buf;
    *out_len = n;

    return 0;
}


/*
 * Applies a Replace step to a string of the one-pass form (the prefix, a
 * replacement): *s is replaced by the result when the byte occurs
 */
static int
kvr_norm_compose(const kvr_norm_step_t *st, uint8_t **s, size_t *len)
{
    size_t    out_len;
    uint8_t  *out;

    if (kvr_norm_replace(st, *s, *len, &out, &out_len) != 0) {
        return -1;
    }

    if (out != NULL) {
        free(*s);
        *s = out;
        *len = out_len;
    }

    return 0;
}


/* sets one_pass when the steps have the one-pass form; -1 out of memory */
static int
kvr_norm_compile(kvr_tok_norm_t *norm)
{
    size_t                  i, k, len;
    uint8_t                *prefix, *rep, c;
    const kvr_norm_step_t  *st;

    norm->one_pass = 0;

    for (i = 0; i < norm->n; i++) {
        st = &norm->steps[i];

        if (st->type == KVR_NORM_NFC
            || (st->type == KVR_NORM_REPLACE
                && (st->pattern_len != 1 || (uint8_t) st->pattern[0] >= 0x80
                    || st->content_len == 0)))
        {
            /* an empty replacement could empty the text before a Prepend */
            return 0;
        }
    }

    for (i = 0; i < norm->n; i++) {
        st = &norm->steps[i];

        if (st->type == KVR_NORM_PREPEND) {
            /* before the prefix so far; later steps apply to both */
            prefix = malloc(st->content_len + norm->prefix_len + 1);
            if (prefix == NULL) {
                return -1;
            }

            memcpy(prefix, st->content, st->content_len);
            if (norm->prefix_len != 0) {
                memcpy(prefix + st->content_len, norm->prefix,
                       norm->prefix_len);
            }

            free(norm->prefix);
            norm->prefix = prefix;
            norm->prefix_len += st->content_len;
            continue;
        }

        /* Replace of byte c: in the prefix, in every replacement so far */
        c = (uint8_t) st->pattern[0];

        if (norm->prefix != NULL
            && kvr_norm_compose(st, &norm->prefix, &norm->prefix_len) != 0)
        {
            return -1;
        }

        for (k = 0; k < norm->n_reps; k++) {
            rep = malloc(norm->reps[k].len);
            if (rep == NULL) {
                return -1;
            }

            memcpy(rep, norm->reps[k].bytes, norm->reps[k].len);
            len = norm->reps[k].len;

            if (kvr_norm_compose(st, &rep, &len) != 0) {
                free(rep);
                return -1;
            }

            if (len > KVR_NORM_MAX_REP) {
                free(rep);
                return 0;
            }

            memcpy(norm->reps[k].bytes, rep, len);
            norm->reps[k].len = len;
            free(rep);
        }

        if (norm->rep_of[c] != 0) {
            /* c is replaced already: nothing of the input is left as c */
            continue;
        }

        if (norm->n_reps == KVR_NORM_MAX_BYTES
            || st->content_len > KVR_NORM_MAX_REP)
        {
            return 0;
        }

        memcpy(norm->reps[norm->n_reps].bytes, st->content, st->content_len);
        norm->reps[norm->n_reps].len = st->content_len;
        norm->rep_byte[norm->n_reps] = c;
        norm->rep_of[c] = (uint8_t) ++norm->n_reps;
    }

    norm->max_rep = 1;

    for (k = 0; k < norm->n_reps; k++) {
        rep = norm->reps[k].bytes;
        len = norm->reps[k].len;

        if (len > norm->max_rep) {
            norm->max_rep = len;
        }

        /* the contents are JSON strings: valid UTF-8 */
        for (i = len - 1; i > 0 && (rep[i] & 0xc0) == 0x80; i--) {
            /* void */
        }

        if (kvr_tok_utf8_decode(rep, len, &norm->reps[k].first) == 0
            || kvr_tok_utf8_decode(rep + i, len - i, &norm->reps[k].last)
               == 0)
        {
            return 0;
        }
    }

    norm->one_pass = 1;

    return 0;
}


/*
 * The one-pass form's byte map of s into w (room for len * max_rep + 16
 * bytes): 16 bytes at a time, each block stored whole between the
 * replaced bytes, so that a block without one costs one load and store
 */
static uint8_t *
kvr_norm_map(const kvr_tok_norm_t *norm, const uint8_t *s, size_t len,
    uint8_t *w)
{
    size_t                 i;
    const kvr_norm_rep_t  *rep;
#ifdef __SSE2__
    size_t                 k, j, p;
    unsigned               mask;
    __m128i                v, hit;

    /* the stores read up to 31 bytes ahead of i */
    for (i = 0; i + 32 <= len; i += 16) {
        v = _mm_loadu_si128((const __m128i *) (s + i));
        hit = _mm_setzero_si128();

        for (k = 0; k < norm->n_reps; k++) {
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v,
                                   _mm_set1_epi8((char) norm->rep_byte[k])));
        }

        mask = (unsigned) _mm_movemask_epi8(hit);
        p = 0;

        while (mask != 0) {
            j = (size_t) __builtin_ctz(mask);
            mask &= mask - 1;

            memcpy(w, s + i + p, 16);
            w += j - p;

            rep = &norm->reps[norm->rep_of[s[i + j]] - 1];
            memcpy(w, rep->bytes, KVR_NORM_MAX_REP);
            w += rep->len;

            p = j + 1;
        }

        memcpy(w, s + i + p, 16);
        w += 16 - p;
    }
#else
    i = 0;
#endif

    for ( /* void */ ; i < len; i++) {
        if (s[i] >= 0x80 || norm->rep_of[s[i]] == 0) {
            *w++ = s[i];
            continue;
        }

        rep = &norm->reps[norm->rep_of[s[i]] - 1];
        memcpy(w, rep->bytes, rep->len);
        w += rep->len;
    }

    return w;
}


static int
kvr_norm_buf_reserve(kvr_tok_norm_buf_t *buf, size_t size)
{
    uint8_t  *data;

    if (size <= buf->cap) {
        return 0;
    }

    data = malloc(size);
    if (data == NULL) {
        return -1;
    }

    free(buf->data);
    buf->data = data;
    buf->cap = size;

    return 0;
}


void
kvr_tok_norm_buf_free(kvr_tok_norm_buf_t *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->cap = 0;
}


/* any steps, one at a time: a malloc'ed result, NULL when unchanged */
static int
kvr_norm_steps(const kvr_tok_norm_t *norm, const uint8_t *s, size_t len,
    uint8_t **out, size_t *out_len)
{
    int                     rc;
    size_t                  i, next_len;
    uint8_t                *cur, *next;
    const kvr_norm_step_t  *st;

    /* cur: the malloc'ed result so far, NULL while s is unchanged */
    cur = NULL;

    for (i = 0; i < norm->n; i++) {
        st = &norm->steps[i];
        next = NULL;

        switch (st->type) {

        case KVR_NORM_NFC:
            rc = kvr_tok_nfc(s, len, &next, &next_len);
            break;

        case KVR_NORM_PREPEND:
            rc = 0;

            if (len == 0) {
                break;
            }

            next_len = st->content_len + len;
            next = malloc(next_len + 1);

            if (next == NULL) {
                rc = -1;
                break;
            }

            memcpy(next, st->content, st->content_len);
            memcpy(next + st->content_len, s, len);
            break;

        default: /* KVR_NORM_REPLACE */
            rc = kvr_norm_replace(st, s, len, &next, &next_len);
            break;
        }

        if (rc != 0) {
            free(cur);
            return -1;
        }

        if (next != NULL) {
            free(cur);
            cur = next;
            s = next;
            len = next_len;
        }
    }

    *out = cur;
    *out_len = cur ? len : 0;

    return 0;
}


/* the one-pass form into buf: with the prefix or without */
static int
kvr_norm_one_pass(const kvr_tok_norm_t *norm, const uint8_t *s, size_t len,
    int prefix, kvr_tok_norm_buf_t *buf, const uint8_t **out,
    size_t *out_len)
{
    uint8_t  *w;

    if (kvr_norm_buf_reserve(buf, norm->prefix_len + len * norm->max_rep + 16)
        != 0)
    {
        return -1;
    }

    w = buf->data;

    if (prefix && norm->prefix_len != 0) {
        memcpy(w, norm->prefix, norm->prefix_len);
        w += norm->prefix_len;
    }

    w = kvr_norm_map(norm, s, len, w);

    *out = buf->data;
    *out_len = (size_t) (w - buf->data);

    return 0;
}


int
kvr_tok_norm_apply_steps(const kvr_tok_norm_t *norm, const uint8_t *s,
    size_t len, kvr_tok_norm_buf_t *buf, const uint8_t **out,
    size_t *out_len)
{
    size_t    steps_len;
    uint8_t  *steps_out;

    *out = s;
    *out_len = len;

    if (kvr_norm_steps(norm, s, len, &steps_out, &steps_len) != 0) {
        return -1;
    }

    if (steps_out == NULL) {
        return 0;
    }

    if (kvr_norm_buf_reserve(buf, steps_len + 1) != 0) {
        free(steps_out);
        return -1;
    }

    memcpy(buf->data, steps_out, steps_len);
    free(steps_out);

    *out = buf->data;
    *out_len = steps_len;

    return 0;
}


int
kvr_tok_norm_apply(const kvr_tok_norm_t *norm, const uint8_t *s,
    size_t len, kvr_tok_norm_buf_t *buf, const uint8_t **out,
    size_t *out_len)
{
    if (norm->one_pass && norm->n != 0 && len != 0) {
        return kvr_norm_one_pass(norm, s, len, 1, buf, out, out_len);
    }

    return kvr_tok_norm_apply_steps(norm, s, len, buf, out, out_len);
}


int
kvr_tok_norm_bytewise(const kvr_tok_norm_t *norm)
{
    return norm->n == 0 || norm->one_pass;
}


int
kvr_tok_norm_apply_rest(const kvr_tok_norm_t *norm, const uint8_t *s,
    size_t len, kvr_tok_norm_buf_t *buf, const uint8_t **out,
    size_t *out_len)
{
    *out = s;
    *out_len = len;

    if (norm->n == 0 || len == 0) {
        return 0;
    }

    return kvr_norm_one_pass(norm, s, len, 0, buf, out, out_len);
}


void
kvr_tok_norm_char_ends(const kvr_tok_norm_t *norm, uint32_t cp,
    uint32_t *first, uint32_t *last)
{
    const kvr_norm_rep_t  *rep;

    if (cp < 128 && norm->rep_of[cp] != 0) {
        rep = &norm->reps[norm->rep_of[cp] - 1];
        *first = rep->first;
        *last = rep->last;
        return;
    }

    *first = cp;
    *last = cp;
}


int
kvr_tok_norm_excludes(const kvr_tok_norm_t *norm, const uint8_t *lit,
    size_t len)
{
    size_t  i, k;
    int     held;

    if (!norm->one_pass) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (lit[i] >= 0x80 || norm->rep_of[lit[i]] == 0) {
            continue;
        }

        /* every lit[i] of the input is replaced: is one put back? */
        held = (norm->prefix_len != 0
                && memchr(norm->prefix, lit[i], norm->prefix_len) != NULL);

        for (k = 0; k < norm->n_reps && !held; k++) {
            held = (memchr(norm->reps[k].bytes, lit[i], norm->reps[k].len)
                    != NULL);
        }

        if (!held) {
            return 1;
        }
    }

    return 0;
}
