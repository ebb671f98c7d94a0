/*
 * Copyright (C) kvroute developers
 *
 * A bounded msgpack reader: one value's header read in place, or one whole
 * value skipped with its grammar and depth checked.  It knows nothing of
 * what the values mean (the KV events schema is kvr_events.c's).  Plain C,
 * no allocation, no recursion.
 *
 * Every read is bounded by the end it is given: a length is checked
 * against the bytes left before it is used, and a container that declares
 * more values than bytes are left is refused (each value takes one byte at
 * least), so a 5-byte header cannot declare 2^32 elements that are not
 * there.
 */

#ifndef _KVR_MSGPACK_H_INCLUDED_
#define _KVR_MSGPACK_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <string.h>


/* the deepest nesting kvr_mp_skip() checks (its stack's size) */
#define KVR_MP_DEPTH_CAP  64


typedef enum {
    KVR_MP_NIL = 1,
    KVR_MP_BOOL,
    KVR_MP_UINT,        /* a non-negative int, any width: value in n */
    KVR_MP_NINT,        /* a negative int: two's complement bits in n */
    KVR_MP_FLOAT,
    KVR_MP_STR,
    KVR_MP_BIN,
    KVR_MP_EXT,
    KVR_MP_ARRAY,       /* n elements */
    KVR_MP_MAP          /* n pairs */
} kvr_mp_type_e;


typedef enum {
    KVR_MP_OK = 0,
    KVR_MP_ERR_BYTES,   /* truncated, 0xc1, or a count beyond the bytes */
    KVR_MP_ERR_DEPTH    /* nested deeper than allowed */
} kvr_mp_status_e;


/* one msgpack header: scalars whole, containers as their count */
typedef struct {
    kvr_mp_type_e        type;
    uint64_t             n;         /* int bits, byte length or count */
    double               f;         /* float 32 or 64 */
    const uint8_t       *data;      /* str, bin, ext bytes */
} kvr_mp_t;


/*
 * Reads one header into v and returns what follows it: for str, bin and
 * ext the bytes are skipped (v->data points at them), for an array or a
 * map its values follow.  NULL when the input ends early, on 0xc1, or when
 * a container declares more values than bytes are left.
 */
const uint8_t *kvr_mp_read(const uint8_t *p, const uint8_t *end,
    kvr_mp_t *v);

/*
 * Skips one whole value, checking the grammar of all of it.  depth is how
 * many container levels the value may have (at most KVR_MP_DEPTH_CAP;
 * more is taken as the cap): 0 allows only a scalar.  NULL with *err set
 * when the bytes are bad or nest too deep.
 */
const uint8_t *kvr_mp_skip(const uint8_t *p, const uint8_t *end,
    uint32_t depth, kvr_mp_status_e *err);


/* 8 bytes, big-endian */
static inline uint64_t
kvr_mp_be64(const uint8_t *p)
{
    uint64_t  v;

    memcpy(&v, p, 8);

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#elif !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__
    v = ((uint64_t) p[0] << 56) | ((uint64_t) p[1] << 48)
        | ((uint64_t) p[2] << 40) | ((uint64_t) p[3] << 32)
        | ((uint64_t) p[4] << 24) | ((uint64_t) p[5] << 16)
        | ((uint64_t) p[6] << 8) | p[7];
#endif

    return v;
}


/* n (0 to 8) bytes, big-endian */
static inline uint64_t
kvr_mp_be(const uint8_t *p, size_t n)
{
    uint64_t  v;

    switch (n) {

    case 1:
        return p[0];

    case 2:
        return ((uint64_t) p[0] << 8) | p[1];

    case 4:
        return ((uint64_t) p[0] << 24) | ((uint64_t) p[1] << 16)
               | ((uint64_t) p[2] << 8) | p[3];

    case 8:
        return kvr_mp_be64(p);
    }

    v = 0;

    while (n--) {
        v = (v << 8) | *p++;
    }

    return v;
}


/*
 * kvr_mp_read(), the same result, with the headers an event is mostly
 * made of read inline (positive fixint, fixarray, array 16, fixstr, uint,
 * nil): a call less for each value of a batch
 */
static inline const uint8_t *
kvr_mp_next(const uint8_t *p, const uint8_t *end, kvr_mp_t *v)
{
    size_t    left, size;
    unsigned  c;

    if (p >= end) {
        return NULL;
    }

    c = *p;
    left = (size_t) (end - p) - 1;

    if (c < 0x80) {
        v->type = KVR_MP_UINT;
        v->n = c;
        return p + 1;
    }

    if ((c & 0xf0) == 0x90) {
        v->type = KVR_MP_ARRAY;
        v->n = c & 0x0f;
        return (v->n <= left) ? p + 1 : NULL;
    }

    if ((c & 0xe0) == 0xa0) {
        v->type = KVR_MP_STR;
        v->n = c & 0x1f;

        if (v->n > left) {
            return NULL;
        }

        v->data = p + 1;
        return p + 1 + v->n;
    }

    if (c >= 0xcc && c <= 0xcf) {
        size = (size_t) 1 << (c - 0xcc);

        if (left < size) {
            return NULL;
        }

        v->type = KVR_MP_UINT;
        v->n = kvr_mp_be(p + 1, size);
        return p + 1 + size;
    }

    if (c == 0xc0) {
        v->type = KVR_MP_NIL;
        return p + 1;
    }

    /* array 16: a block's token ids (16 or more) */

    if (c == 0xdc && left >= 2) {
        v->type = KVR_MP_ARRAY;
        v->n = kvr_mp_be(p + 1, 2);
        return (v->n <= left - 2) ? p + 3 : NULL;
    }

    return kvr_mp_read(p, end, v);
}


#endif /* _KVR_MSGPACK_H_INCLUDED_ */
