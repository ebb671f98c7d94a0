/*
 * Copyright (C) kvroute developers
 *
 * Tests of the bounded msgpack reader (kvr_msgpack) on its own: every
 * type byte of the msgpack spec, written byte by byte here with the value
 * the spec gives it; every proper prefix of each encoding refused
 * (truncation); lengths and counts beyond the bytes left refused (bounds);
 * kvr_mp_skip()'s nesting limit and its cap.  Inputs are copied into
 * buffers of their exact size so that the ASan build catches a read past
 * the end.
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_msgpack.h"
#include "tap.h"


typedef struct {
    const char      *name;
    const uint8_t   *bytes;
    size_t           len;
    kvr_mp_type_e    type;
    uint64_t         n;          /* int bits, byte length or count */
    size_t           header;     /* bytes read returns past (containers) */
} case_t;


#define B(...)  (const uint8_t []) { __VA_ARGS__ }, \
                sizeof((const uint8_t []) { __VA_ARGS__ })


/* the spec's forms, each with what it decodes to */
static const case_t  cases[] = {
    { "positive fixint 0x05", B(0x05), KVR_MP_UINT, 5, 1 },
    { "positive fixint 0x7f", B(0x7f), KVR_MP_UINT, 127, 1 },
    { "negative fixint -1", B(0xff), KVR_MP_NINT, (uint64_t) -1, 1 },
    { "negative fixint -32", B(0xe0), KVR_MP_NINT, (uint64_t) -32, 1 },
    { "nil", B(0xc0), KVR_MP_NIL, 0, 1 },
    { "false", B(0xc2), KVR_MP_BOOL, 0, 1 },
    { "true", B(0xc3), KVR_MP_BOOL, 1, 1 },
    { "uint 8", B(0xcc, 0xfe), KVR_MP_UINT, 254, 2 },
    { "uint 16", B(0xcd, 0x12, 0x34), KVR_MP_UINT, 0x1234, 3 },
    { "uint 32", B(0xce, 0xde, 0xad, 0xbe, 0xef), KVR_MP_UINT,
      0xdeadbeef, 5 },
    { "uint 64", B(0xcf, 0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88),
      KVR_MP_UINT, 0xffeeddccbbaa9988ull, 9 },
    { "int 8 -128", B(0xd0, 0x80), KVR_MP_NINT, (uint64_t) -128, 2 },
    { "int 8 +100 is a uint", B(0xd0, 0x64), KVR_MP_UINT, 100, 2 },
    { "int 16 -2", B(0xd1, 0xff, 0xfe), KVR_MP_NINT, (uint64_t) -2, 3 },
    { "int 32 -65536", B(0xd2, 0xff, 0xff, 0x00, 0x00), KVR_MP_NINT,
      (uint64_t) -65536, 5 },
    { "int 32 +65536 is a uint", B(0xd2, 0x00, 0x01, 0x00, 0x00),
      KVR_MP_UINT, 65536, 5 },
    { "int 64 min", B(0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0), KVR_MP_NINT,
      0x8000000000000000ull, 9 },
    { "fixstr abc", B(0xa3, 'a', 'b', 'c'), KVR_MP_STR, 3, 4 },
    { "fixstr empty", B(0xa0), KVR_MP_STR, 0, 1 },
    { "str 8", B(0xd9, 0x02, 'h', 'i'), KVR_MP_STR, 2, 4 },
    { "str 16", B(0xda, 0x00, 0x01, 'x'), KVR_MP_STR, 1, 4 },
    { "str 32", B(0xdb, 0x00, 0x00, 0x00, 0x02, 'o', 'k'), KVR_MP_STR, 2,
      7 },
    { "bin 8", B(0xc4, 0x03, 1, 2, 3), KVR_MP_BIN, 3, 5 },
    { "bin 16", B(0xc5, 0x00, 0x02, 9, 8), KVR_MP_BIN, 2, 5 },
    { "bin 32", B(0xc6, 0x00, 0x00, 0x00, 0x01, 7), KVR_MP_BIN, 1, 6 },
    { "ext 8", B(0xc7, 0x02, 0x05, 0xaa, 0xbb), KVR_MP_EXT, 2, 5 },
    { "ext 16", B(0xc8, 0x00, 0x01, 0x05, 0xaa), KVR_MP_EXT, 1, 5 },
    { "ext 32", B(0xc9, 0x00, 0x00, 0x00, 0x01, 0x05, 0xaa), KVR_MP_EXT, 1,
      7 },
    { "fixext 1", B(0xd4, 0x01, 0xaa), KVR_MP_EXT, 1, 3 },
    { "fixext 2", B(0xd5, 0x01, 0xaa, 0xbb), KVR_MP_EXT, 2, 4 },
    { "fixext 4", B(0xd6, 0x01, 1, 2, 3, 4), KVR_MP_EXT, 4, 6 },
    { "fixext 8", B(0xd7, 0x01, 1, 2, 3, 4, 5, 6, 7, 8), KVR_MP_EXT, 8,
      10 },
    { "fixext 16", B(0xd8, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
      13, 14, 15, 16), KVR_MP_EXT, 16, 18 },
    { "fixarray [1, 2]", B(0x92, 0x01, 0x02), KVR_MP_ARRAY, 2, 1 },
    { "fixarray []", B(0x90), KVR_MP_ARRAY, 0, 1 },
    { "array 16 [nil]", B(0xdc, 0x00, 0x01, 0xc0), KVR_MP_ARRAY, 1, 3 },
    { "array 32 [1, 2]", B(0xdd, 0x00, 0x00, 0x00, 0x02, 0x01, 0x02),
      KVR_MP_ARRAY, 2, 5 },
    { "fixmap {1: 2}", B(0x81, 0x01, 0x02), KVR_MP_MAP, 1, 1 },
    { "map 16 {1: 2}", B(0xde, 0x00, 0x01, 0x01, 0x02), KVR_MP_MAP, 1, 3 },
    { "map 32 {1: 2}", B(0xdf, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02),
      KVR_MP_MAP, 1, 5 }
};


/* a copy of exactly len bytes: a read past it is an ASan error */
static uint8_t *
dup_exact(const uint8_t *p, size_t len)
{
    uint8_t  *q;

    q = malloc(len ? len : 1);
    if (q == NULL) {
        abort();
    }

    memcpy(q, p, len);

    return q;
}


static void
test_types(void)
{
    size_t            i;
    uint8_t          *buf;
    kvr_mp_t          v;
    const case_t     *c;
    const uint8_t    *p;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        c = &cases[i];
        buf = dup_exact(c->bytes, c->len);
        memset(&v, 0, sizeof(v));

        p = kvr_mp_read(buf, buf + c->len, &v);

        tap_ok(p == buf + c->header && v.type == c->type && v.n == c->n,
               "read %s: type %d n %llu, %zu bytes", c->name, (int) v.type,
               (unsigned long long) v.n, p ? (size_t) (p - buf) : 0);

        if (c->type == KVR_MP_STR || c->type == KVR_MP_BIN
            || c->type == KVR_MP_EXT)
        {
            /* the data is the last n bytes of the encoding */
            tap_ok(v.data == buf + c->len - c->n,
                   "read %s: data at its bytes", c->name);
        }

        free(buf);
    }
}


static void
test_data_and_floats(void)
{
    kvr_mp_t        v;
    const uint8_t  *p;
    /* 1.5 as float 32 and -0.25 as float 64, bits from IEEE 754 */
    static const uint8_t  f32[] = { 0xca, 0x3f, 0xc0, 0x00, 0x00 };
    static const uint8_t  f64[] = { 0xcb, 0xbf, 0xd0, 0, 0, 0, 0, 0, 0 };
    static const uint8_t  str[] = { 0xa5, 'h', 'e', 'l', 'l', 'o' };

    p = kvr_mp_read(f32, f32 + sizeof(f32), &v);
    tap_ok(p == f32 + 5 && v.type == KVR_MP_FLOAT && v.f == 1.5,
           "float 32 1.5");

    p = kvr_mp_read(f64, f64 + sizeof(f64), &v);
    tap_ok(p == f64 + 9 && v.type == KVR_MP_FLOAT && v.f == -0.25,
           "float 64 -0.25");

    p = kvr_mp_read(str, str + sizeof(str), &v);
    tap_ok(p != NULL && v.n == 5 && memcmp(v.data, "hello", 5) == 0,
           "fixstr's bytes");
}


/* every proper prefix of every form is refused by read and by skip */
static void
test_truncation(void)
{
    size_t            i, k, bad_read, bad_skip;
    uint8_t          *buf;
    kvr_mp_t          v;
    const case_t     *c;
    kvr_mp_status_e   err;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        c = &cases[i];
        bad_read = 0;
        bad_skip = 0;

        for (k = 0; k < c->len; k++) {
            buf = dup_exact(c->bytes, k);

            /* a header cut short; a container's values are not read */
            if (k < c->header && kvr_mp_read(buf, buf + k, &v) != NULL) {
                bad_read++;
            }

            err = KVR_MP_OK;

            if (kvr_mp_skip(buf, buf + k, 4, &err) != NULL
                || err != KVR_MP_ERR_BYTES)
            {
                bad_skip++;
            }

            free(buf);
        }

        tap_ok(bad_read == 0 && bad_skip == 0,
               "truncated %s: %zu prefixes read, %zu skipped", c->name,
               bad_read, bad_skip);
    }
}


static void
test_bounds(void)
{
    kvr_mp_t         v;
    const uint8_t   *p;
    kvr_mp_status_e  err;
    /* counts and lengths beyond the bytes that follow */
    static const uint8_t  arr32[] = { 0xdd, 0xff, 0xff, 0xff, 0xff, 0x01 };
    static const uint8_t  map16[] = { 0xde, 0x00, 0x02, 0x01, 0x02, 0x03 };
    static const uint8_t  fixarr[] = { 0x93, 0x01, 0x02 };
    static const uint8_t  str32[] = { 0xdb, 0x7f, 0xff, 0xff, 0xff, 'a' };
    static const uint8_t  bin8[] = { 0xc4, 0x02, 'a' };
    static const uint8_t  never[] = { 0xc1 };
    static const uint8_t  fits[] = { 0x93, 0x01, 0x02, 0x03, 0xc0 };

    tap_ok(kvr_mp_read(arr32, arr32 + sizeof(arr32), &v) == NULL,
           "array 32 of 2^32-1 values in 1 byte refused");
    tap_ok(kvr_mp_read(map16, map16 + sizeof(map16), &v) == NULL,
           "map 16 of 2 pairs in 3 bytes refused");
    tap_ok(kvr_mp_read(fixarr, fixarr + sizeof(fixarr), &v) == NULL,
           "fixarray of 3 in 2 bytes refused");
    tap_ok(kvr_mp_read(str32, str32 + sizeof(str32), &v) == NULL,
           "str 32 longer than the input refused");
    tap_ok(kvr_mp_read(bin8, bin8 + sizeof(bin8), &v) == NULL,
           "bin 8 of 2 bytes with 1 left refused");
    tap_ok(kvr_mp_read(never, never + 1, &v) == NULL, "0xc1 refused");
    tap_ok(kvr_mp_read(never, never, &v) == NULL, "nothing to read");

    err = KVR_MP_OK;
    tap_ok(kvr_mp_skip(never, never + 1, 4, &err) == NULL
           && err == KVR_MP_ERR_BYTES, "skip: 0xc1 is a bytes error");

    /* the end given is the bound, not the buffer's */
    p = kvr_mp_read(fits, fits + 4, &v);
    tap_ok(p == fits + 1 && v.n == 3, "fixarray of 3 with 3 bytes left");
    tap_ok(kvr_mp_read(fits, fits + 3, &v) == NULL,
           "the same cut one byte short");

    err = KVR_MP_OK;
    p = kvr_mp_skip(fits, fits + sizeof(fits), 1, &err);
    tap_ok(p == fits + 4 && err == KVR_MP_OK,
           "skip stops after the value, before what follows");
}


/* n nested arrays around a 0: 0x91 ... 0x91 0x00 */
static uint8_t *
nested(uint32_t n, size_t *len)
{
    uint8_t  *buf;

    *len = n + 1;
    buf = malloc(*len);
    if (buf == NULL) {
        abort();
    }

    memset(buf, 0x91, n);
    buf[n] = 0x00;

    return buf;
}


static void
test_depth(void)
{
    size_t           len;
    uint8_t         *buf;
    const uint8_t   *p;
    kvr_mp_status_e  err;
    /* {[1]: {"a": [2, [3]]}}: map, a container key, 4 levels at most */
    static const uint8_t  mixed[] = {
        0x81, 0x91, 0x01, 0x81, 0xa1, 'a', 0x92, 0x02, 0x91, 0x03
    };

    buf = nested(3, &len);

    err = KVR_MP_OK;
    p = kvr_mp_skip(buf, buf + len, 3, &err);
    tap_ok(p == buf + len && err == KVR_MP_OK, "3 levels within depth 3");

    err = KVR_MP_OK;
    p = kvr_mp_skip(buf, buf + len, 2, &err);
    tap_ok(p == NULL && err == KVR_MP_ERR_DEPTH, "3 levels beyond depth 2");

    err = KVR_MP_OK;
    p = kvr_mp_skip(buf + 3, buf + len, 0, &err);
    tap_ok(p == buf + len && err == KVR_MP_OK, "a scalar within depth 0");
    free(buf);

    err = KVR_MP_OK;
    p = kvr_mp_skip(mixed, mixed + sizeof(mixed), 4, &err);
    tap_ok(p == mixed + sizeof(mixed) && err == KVR_MP_OK,
           "map with a container key: 4 levels within depth 4");

    err = KVR_MP_OK;
    p = kvr_mp_skip(mixed, mixed + sizeof(mixed), 3, &err);
    tap_ok(p == NULL && err == KVR_MP_ERR_DEPTH,
           "the same beyond depth 3");

    /* the cap holds whatever depth is asked for */
    buf = nested(KVR_MP_DEPTH_CAP, &len);
    err = KVR_MP_OK;
    p = kvr_mp_skip(buf, buf + len, 1000, &err);
    tap_ok(p == buf + len && err == KVR_MP_OK, "%d levels: the cap",
           KVR_MP_DEPTH_CAP);
    free(buf);

    buf = nested(KVR_MP_DEPTH_CAP + 1, &len);
    err = KVR_MP_OK;
    p = kvr_mp_skip(buf, buf + len, 1000, &err);
    tap_ok(p == NULL && err == KVR_MP_ERR_DEPTH,
           "%d levels beyond the cap, depth 1000 asked",
           KVR_MP_DEPTH_CAP + 1);
    free(buf);

    /* a deep nest cut short is a bytes error, not a depth one */
    buf = nested(10, &len);
    err = KVR_MP_OK;
    p = kvr_mp_skip(buf, buf + len - 1, 20, &err);
    tap_ok(p == NULL && err == KVR_MP_ERR_BYTES,
           "10 levels missing their last byte");
    free(buf);
}


static void
test_big_endian(void)
{
    static const uint8_t  b[] = { 1, 2, 3, 4, 5, 6, 7, 8 };

    tap_ok(kvr_mp_be64(b) == 0x0102030405060708ull, "be64");
    tap_ok(kvr_mp_be(b, 3) == 0x010203, "be of 3 bytes");
    tap_ok(kvr_mp_be(b, 0) == 0, "be of none");
    tap_ok(kvr_mp_be(b, 2) == 0x0102 && kvr_mp_be(b, 4) == 0x01020304,
           "be of 2 and 4 bytes");
}


/*
 * kvr_mp_next() is kvr_mp_read() with some headers read inline: the same
 * result for every first byte, every input length up to 12 and three
 * fillings of the bytes after it (counts and lengths small, large, 0)
 */
static void
test_next(void)
{
    int             same;
    size_t          c, len, fill, i;
    uint8_t        *buf;
    kvr_mp_t        a, b;
    const uint8_t  *pa, *pb;

    static const uint8_t  fills[3][11] = {
        { 0x00, 0x03, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09 },
        { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
        { 0 }
    };

    same = 1;

    for (c = 0; c < 256; c++) {
        for (len = 1; len <= 12; len++) {
            for (fill = 0; fill < 3; fill++) {
                buf = malloc(len);
                buf[0] = (uint8_t) c;

                for (i = 1; i < len; i++) {
                    buf[i] = fills[fill][i - 1];
                }

                memset(&a, 0, sizeof(kvr_mp_t));
                memset(&b, 0, sizeof(kvr_mp_t));
                pa = kvr_mp_read(buf, buf + len, &a);
                pb = kvr_mp_next(buf, buf + len, &b);

                if (pa != pb
                    || (pa != NULL
                        && (a.type != b.type || a.n != b.n
                            || a.data != b.data
                            || memcmp(&a.f, &b.f, sizeof(double)) != 0)))
                {
                    if (same) {
                        printf("#   first byte 0x%02zx, %zu bytes, fill %zu\n",
                               c, len, fill);
                    }

                    same = 0;
                }

                free(buf);
            }
        }
    }

    tap_ok(same, "kvr_mp_next() reads every first byte as kvr_mp_read()");

    /* and reads nothing when there is nothing */
    tap_ok(kvr_mp_next(fills[0], fills[0], &a) == NULL, "next: no bytes");
}


int
main(void)
{
    test_types();
    test_data_and_floats();
    test_truncation();
    test_bounds();
    test_depth();
    test_big_endian();
    test_next();

    return tap_done();
}
