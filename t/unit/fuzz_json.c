/*
 * Copyright (C) kvroute developers
 *
 * libFuzzer target for kvr_json, differential against jansson: both parse
 * the input (kvr_json with KVR_JSON_NUMBER_RANGE, jansson with
 * JSON_DECODE_ANY | JSON_ALLOW_NUL); the verdicts must agree, depth and
 * number-range errors must match (up to jansson's lookahead), and on
 * success the trees must hold the same values (decoded strings and keys
 * byte for byte, the last of repeated keys, numbers, literals).  The
 * accessors are exercised on the way: tight decode bounds, key lookup,
 * uint32.  Any difference aborts.  Not part of the default build
 * (mk/unit.mk only picks up test_*.c):
 *
 *   mkdir -p build/fuzz_json_corpus
 *   make build/fuzz/fuzz_json
 *   build/fuzz/fuzz_json -max_total_time=120 build/fuzz_json_corpus \
 *       t/unit/corpus/request
 *
 * Known deliberate differences, not compared (see t/unit/test_json.c):
 * "\u0000" inside keys (jansson refuses it) and raw nul bytes (jansson
 * accepts one right after a number or literal).
 */

#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "kvr_json.h"


static int same_value(const kvr_json_doc_t *d, uint32_t i, json_t *j);


/* the decoded string node, malloc'ed (NULL on failure, never on 0 bytes) */
static char *
decode(const kvr_json_doc_t *d, uint32_t i, size_t *len)
{
    char    *buf;
    size_t   raw, n;

    raw = d->nodes[i].len - 2;

    buf = malloc(raw + 1);
    if (buf == NULL) {
        abort();
    }

    n = kvr_json_string_decode(d, i, buf, raw);

    if (n == (size_t) -1 || n > raw) {
        abort();
    }

    /* one byte less must not fit, unless empty */
    if (n > 0 && kvr_json_string_decode(d, i, buf, n - 1) != (size_t) -1) {
        abort();
    }

    if (kvr_json_string_decode(d, i, buf, n) != n
        || !kvr_json_string_eq(d, i, buf, n))
    {
        abort();
    }

    *len = n;

    return buf;
}


static int
same_object(const kvr_json_doc_t *d, uint32_t i, json_t *j)
{
    int        ok;
    char      *key;
    size_t     n, distinct;
    uint32_t   k, v;

    distinct = 0;
    ok = 1;

    for (k = kvr_json_first(d, i); k && ok; k = kvr_json_next(d, i, k)) {
        key = decode(d, k, &n);

        v = kvr_json_find(d, i, key, n);

        /* the last occurrence is found, and compares equal to k */
        if (v < k + 1 || kvr_json_string_cmp(d, k, v - 1) != 0) {
            abort();
        }

        if (v == k + 1) {
            distinct++;
        }

        ok = same_value(d, v, json_object_getn(j, key, n));
        free(key);
    }

    return ok && distinct == json_object_size(j);
}


static int
same_value(const kvr_json_doc_t *d, uint32_t i, json_t *j)
{
    int          ok;
    char        *buf;
    size_t       n, len;
    uint32_t     v, u;
    const char  *raw;

    if (j == NULL) {
        return 0;
    }

    switch (kvr_json_type(d, i)) {

    case KVR_JSON_OBJECT:
        return json_is_object(j) && same_object(d, i, j);

    case KVR_JSON_ARRAY:
        if (!json_is_array(j) || json_array_size(j) != kvr_json_count(d, i))
        {
            return 0;
        }

        n = 0;

        for (v = kvr_json_first(d, i); v; v = kvr_json_next(d, i, v)) {
            if (!same_value(d, v, json_array_get(j, n++))) {
                return 0;
            }
        }

        return n == json_array_size(j);

    case KVR_JSON_STRING:
        if (!json_is_string(j)) {
            return 0;
        }

        buf = decode(d, i, &n);
        ok = (n == json_string_length(j)
              && memcmp(buf, json_string_value(j), n) == 0);
        free(buf);

        return ok;

    case KVR_JSON_NUMBER:
        raw = kvr_json_raw(d, i, &len);

        buf = malloc(len + 1);
        if (buf == NULL) {
            abort();
        }

        memcpy(buf, raw, len);
        buf[len] = '\0';

        if (d->nodes[i].info & KVR_JSON_REAL) {
            ok = json_is_real(j) && json_real_value(j) == strtod(buf, NULL);

        } else {
            ok = json_is_integer(j)
                 && json_integer_value(j) == strtoll(buf, NULL, 10);

            /* uint32 agrees with the integer value */
            if (ok
                && (kvr_json_uint32(d, i, &u) == 0)
                   != (json_integer_value(j) >= 0
                       && json_integer_value(j) <= (json_int_t) UINT32_MAX))
            {
                abort();
            }

            if (ok && kvr_json_uint32(d, i, &u) == 0
                && u != (uint32_t) json_integer_value(j))
            {
                abort();
            }
        }

        free(buf);

        return ok;

    case KVR_JSON_TRUE:
        return json_is_true(j);

    case KVR_JSON_FALSE:
        return json_is_false(j);

    case KVR_JSON_NULL:
        return json_is_null(j);
    }

    return 0;
}


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    int                  code;
    char                *copy;
    json_t              *root;
    json_error_t         err;
    kvr_json_doc_t      *d;

    /* an exact-size copy: overreads hit the redzone */
    copy = malloc(size ? size : 1);
    if (copy == NULL) {
        return 0;
    }

    if (size > 0) {
        memcpy(copy, data, size);
    }

    d = kvr_json_parse(copy, size, KVR_JSON_NUMBER_RANGE);
    if (d == NULL) {
        free(copy);
        return 0;
    }

    if (memchr(copy, '\0', size) != NULL) {
        if (d->status == KVR_JSON_OK && d->n_nodes > 0) {
            (void) kvr_json_find(d, 0, "a", 1);
        }

        goto done;
    }

    root = json_loadb(copy, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    code = (root == NULL) ? (int) json_error_code(&err) : -1;

    if (code == json_error_null_byte_in_key) {
        goto done;
    }

    if ((root != NULL) != (d->status == KVR_JSON_OK)) {
        abort();
    }

    /*
     * error classes: jansson lexes a token, with one byte of lookahead,
     * before it looks at grammar or depth, so "{1e999" is a number error
     * and "[1\xff" a UTF-8 error for it; the checks allow for that
     */
    if (code == json_error_stack_overflow
        && d->status != KVR_JSON_ERR_DEPTH)
    {
        abort();
    }

    if (d->status == KVR_JSON_ERR_DEPTH
        && code != json_error_stack_overflow
        && code != json_error_invalid_utf8)
    {
        abort();
    }

    if (d->status == KVR_JSON_ERR_NUMBER
        && code != json_error_numeric_overflow
        && code != json_error_invalid_utf8)
    {
        abort();
    }

    if (root != NULL && !same_value(d, 0, root)) {
        abort();
    }

    json_decref(root);

done:

    kvr_json_free(d);
    free(copy);

    return 0;
}
