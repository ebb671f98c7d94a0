/*
 * Copyright (C) kvroute developers
 *
 * The bounded msgpack reader (interface in kvr_msgpack.h).
 *
 * Why a reader of our own rather than msgpack-c's unpacker: the unpacker
 * builds an object tree in a zone, allocating for every declared array and
 * map length (a hostile 5-byte header declares 2^32 elements) and copying
 * what the events decoder only looks at once; its depth bound is a
 * compile-time constant.  The format is one header of ~30 type bytes, so
 * reading it in place costs little code, no link dependency and no
 * allocation, and lets every length be checked against the bytes left
 * before it is used.
 */

#include "kvr_msgpack.h"


/*
 * bytes a value takes when its first byte tells (ints, floats, nil, bool,
 * fixstr, fixext); 0: a container or a length follows
 */
static const uint8_t  kvr_mp_fixed[256] = {
    [0x00 ... 0x7f] = 1,
    [0xa0] = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
    [0xc0] = 1, [0xc2] = 1, [0xc3] = 1,
    [0xca] = 5, [0xcb] = 9,
    [0xcc] = 2, [0xcd] = 3, [0xce] = 5, [0xcf] = 9,
    [0xd0] = 2, [0xd1] = 3, [0xd2] = 5, [0xd3] = 9,
    [0xd4] = 3, [0xd5] = 4, [0xd6] = 6, [0xd7] = 10, [0xd8] = 18,
    [0xe0 ... 0xff] = 1
};


static const uint8_t *kvr_mp_bytes(const uint8_t *p, size_t left,
    kvr_mp_t *v);
static const uint8_t *kvr_mp_container(const uint8_t *p, size_t left,
    kvr_mp_t *v);
static const uint8_t *kvr_mp_sized(const uint8_t *p, size_t left,
    kvr_mp_type_e type, size_t size, kvr_mp_t *v);
static const uint8_t *kvr_mp_ext(const uint8_t *p, size_t left, size_t size,
    kvr_mp_t *v);
static const uint8_t *kvr_mp_fixext(const uint8_t *p, size_t left,
    uint64_t n, kvr_mp_t *v);
static const uint8_t *kvr_mp_float(const uint8_t *p, size_t left, unsigned c,
    kvr_mp_t *v);
static const uint8_t *kvr_mp_uint(const uint8_t *p, size_t left, size_t size,
    kvr_mp_t *v);
static const uint8_t *kvr_mp_int(const uint8_t *p, size_t left, size_t size,
    kvr_mp_t *v);
static const uint8_t *kvr_mp_count(const uint8_t *p, size_t left, unsigned c,
    kvr_mp_t *v);


/* the one-byte forms here; each longer one has its function below */
const uint8_t *
kvr_mp_read(const uint8_t *p, const uint8_t *end, kvr_mp_t *v)
{
    size_t    left;
    unsigned  c;

    if (p >= end) {
        return NULL;
    }

    c = *p++;
    left = (size_t) (end - p);

    if (c < 0x80) {
        v->type = KVR_MP_UINT;
        v->n = c;
        return p;
    }

    if (c >= 0xe0) {
        v->type = KVR_MP_NINT;
        v->n = (uint64_t) (int64_t) (int8_t) c;
        return p;
    }

    if (c < 0x90) {
        v->type = KVR_MP_MAP;
        v->n = c & 0x0f;
        return kvr_mp_container(p, left, v);
    }

    if (c < 0xa0) {
        v->type = KVR_MP_ARRAY;
        v->n = c & 0x0f;
        return kvr_mp_container(p, left, v);
    }

    if (c < 0xc0) {
        v->type = KVR_MP_STR;
        v->n = c & 0x1f;
        return kvr_mp_bytes(p, left, v);
    }

    switch (c) {

    case 0xc0:
        v->type = KVR_MP_NIL;
        return p;

    case 0xc2:
    case 0xc3:
        v->type = KVR_MP_BOOL;
        v->n = c & 1;
        return p;

    case 0xc4:
    case 0xc5:
    case 0xc6:
        return kvr_mp_sized(p, left, KVR_MP_BIN, (size_t) 1 << (c - 0xc4), v);

    case 0xd9:
    case 0xda:
    case 0xdb:
        return kvr_mp_sized(p, left, KVR_MP_STR, (size_t) 1 << (c - 0xd9), v);

    case 0xc7:
    case 0xc8:
    case 0xc9:
        return kvr_mp_ext(p, left, (size_t) 1 << (c - 0xc7), v);

    case 0xca:
    case 0xcb:
        return kvr_mp_float(p, left, c, v);

    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf:
        return kvr_mp_uint(p, left, (size_t) 1 << (c - 0xcc), v);

    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3:
        return kvr_mp_int(p, left, (size_t) 1 << (c - 0xd0), v);

    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8:
        return kvr_mp_fixext(p, left, (uint64_t) 1 << (c - 0xd4), v);

    case 0xdc:
    case 0xdd:
    case 0xde:
    case 0xdf:
        return kvr_mp_count(p, left, c, v);

    default:
        /* 0xc1, never used */
        return NULL;
    }
}


/* v->n bytes of str, bin or ext data at p */
static const uint8_t *
kvr_mp_bytes(const uint8_t *p, size_t left, kvr_mp_t *v)
{
    if (v->n > left) {
        return NULL;
    }

    v->data = p;

    return p + v->n;
}


/* v->n values follow: each takes a byte at least */
static const uint8_t *
kvr_mp_container(const uint8_t *p, size_t left, kvr_mp_t *v)
{
    if ((v->type == KVR_MP_MAP ? v->n * 2 : v->n) > left) {
        return NULL;
    }

    return p;
}


/* str 8/16/32, bin 8/16/32: a size-byte length, then the bytes */
static const uint8_t *
kvr_mp_sized(const uint8_t *p, size_t left, kvr_mp_type_e type, size_t size,
    kvr_mp_t *v)
{
    v->type = type;

    if (left < size) {
        return NULL;
    }

    v->n = kvr_mp_be(p, size);

    return kvr_mp_bytes(p + size, left - size, v);
}


/* ext 8/16/32: a size-byte length, a type byte, then the data */
static const uint8_t *
kvr_mp_ext(const uint8_t *p, size_t left, size_t size, kvr_mp_t *v)
{
    if (left < size + 1) {
        return NULL;
    }

    v->type = KVR_MP_EXT;
    v->n = kvr_mp_be(p, size);

    return kvr_mp_bytes(p + size + 1, left - size - 1, v);
}


/* fixext: a type byte and n (1, 2, 4, 8 or 16) bytes */
static const uint8_t *
kvr_mp_fixext(const uint8_t *p, size_t left, uint64_t n, kvr_mp_t *v)
{
    v->type = KVR_MP_EXT;
    v->n = n;

    if (left < 1) {
        return NULL;
    }

    return kvr_mp_bytes(p + 1, left - 1, v);
}


/* float 32 (0xca) or float 64 (0xcb), both into v->f */
static const uint8_t *
kvr_mp_float(const uint8_t *p, size_t left, unsigned c, kvr_mp_t *v)
{
    float     f32;
    uint32_t  u32;
    uint64_t  u64;

    if (c == 0xca) {
        if (left < 4) {
            return NULL;
        }

        u32 = (uint32_t) kvr_mp_be(p, 4);
        memcpy(&f32, &u32, 4);
        v->f = f32;
        v->type = KVR_MP_FLOAT;
        return p + 4;
    }

    if (left < 8) {
        return NULL;
    }

    u64 = kvr_mp_be(p, 8);
    memcpy(&v->f, &u64, 8);
    v->type = KVR_MP_FLOAT;

    return p + 8;
}


/* uint 8/16/32/64 */
static const uint8_t *
kvr_mp_uint(const uint8_t *p, size_t left, size_t size, kvr_mp_t *v)
{
    if (left < size) {
        return NULL;
    }

    v->type = KVR_MP_UINT;
    v->n = kvr_mp_be(p, size);

    return p + size;
}


/* int 8/16/32/64: a non-negative value is a UINT, as msgpack-c does */
static const uint8_t *
kvr_mp_int(const uint8_t *p, size_t left, size_t size, kvr_mp_t *v)
{
    if (left < size) {
        return NULL;
    }

    v->n = kvr_mp_be(p, size);

    /* sign-extend from the encoded width */
    if (size < 8 && (v->n >> (size * 8 - 1))) {
        v->n |= ~(uint64_t) 0 << (size * 8);
    }

    v->type = ((int64_t) v->n < 0) ? KVR_MP_NINT : KVR_MP_UINT;

    return p + size;
}


/* array 16/32 (0xdc, 0xdd), map 16/32 (0xde, 0xdf) */
static const uint8_t *
kvr_mp_count(const uint8_t *p, size_t left, unsigned c, kvr_mp_t *v)
{
    size_t  size;

    size = (c & 1) ? 4 : 2;

    if (left < size) {
        return NULL;
    }

    v->type = (c <= 0xdd) ? KVR_MP_ARRAY : KVR_MP_MAP;
    v->n = kvr_mp_be(p, size);

    return kvr_mp_container(p + size, left - size, v);
}


/*
 * No recursion: the open containers' remaining counts are on a stack of
 * at most KVR_MP_DEPTH_CAP.
 */
const uint8_t *
kvr_mp_skip(const uint8_t *p, const uint8_t *end, uint32_t depth,
    kvr_mp_status_e *err)
{
    uint32_t  n_open;
    uint64_t  left, items;
    kvr_mp_t  v;
    uint64_t  stack[KVR_MP_DEPTH_CAP];

    n_open = 0;
    left = 1;

    if (depth > KVR_MP_DEPTH_CAP) {
        depth = KVR_MP_DEPTH_CAP;
    }

    for ( ;; ) {

        while (left == 0) {
            if (n_open == 0) {
                return p;
            }

            left = stack[--n_open];
        }

        left--;

        /* ints (token arrays) and other fixed sizes: no header decode */
        if (p < end && kvr_mp_fixed[*p] != 0) {
            if ((size_t) (end - p) < kvr_mp_fixed[*p]) {
                *err = KVR_MP_ERR_BYTES;
                return NULL;
            }

            p += kvr_mp_fixed[*p];
            continue;
        }

        p = kvr_mp_read(p, end, &v);
        if (p == NULL) {
            *err = KVR_MP_ERR_BYTES;
            return NULL;
        }

        if (v.type != KVR_MP_ARRAY && v.type != KVR_MP_MAP) {
            continue;
        }

        if (n_open == depth) {
            *err = KVR_MP_ERR_DEPTH;
            return NULL;
        }

        items = (v.type == KVR_MP_MAP) ? v.n * 2 : v.n;

        stack[n_open++] = left;
        left = items;
    }
}
