/*
 * Copyright (C) kvroute developers
 *
 * Normalizer steps (HF normalizers/): NFC (kvr_tok_normalize.c), Prepend
 * (only to a non-empty string), Replace (every non-overlapping occurrence
 * of a literal, left to right), in Sequence order.
 */

#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvr_tok_normalizers.h"
#include "kvr_tok_normalize.h"


#define KVR_NORM_MAX_STEPS  8

#define KVR_NORM_NFC      1
#define KVR_NORM_PREPEND  2
#define KVR_NORM_REPLACE  3


typedef struct {
    int        type;
    char      *pattern;      /* Replace: the literal */
    size_t     pattern_len;
    char      *content;      /* Prepend's text, Replace's replacement */
    size_t     content_len;
} kvr_norm_step_t;


struct kvr_tok_norm_s {
    kvr_norm_step_t  steps[KVR_NORM_MAX_STEPS];
    size_t           n;
};


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

        return norm;
    }

    if (kvr_norm_load_step(norm, normalizer, err, errlen) != 0) {
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


int
kvr_tok_norm_apply(const kvr_tok_norm_t *norm, const uint8_t *s,
    size_t len, uint8_t **out, size_t *out_len)
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
