/*
 * Copyright (C) kvroute developers
 *
 * The JSON parser and its accessors (interface in kvr_json.h).
 *
 * Speed: string content is skipped eight bytes at a time (a word holding
 * no '"', '\\', control or non-ASCII byte is plain text), non-ASCII runs
 * are validated by a loop of their own, and the only state beyond the
 * node array is a stack of the open containers (no recursion).
 *
 * Error classes follow jansson where the two can be compared: a UTF-8
 * sequence cut by the end of the input is a syntax (truncation) error,
 * a bad non-ASCII byte where grammar expects something else is a UTF-8
 * error when it does not start a valid sequence, and the depth bound
 * counts every value, scalars included, as jansson's 2048 does.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* AVX2 where the CPU has it, chosen at run time: the build targets x86-64 */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(KVR_JSON_NO_AVX2)
#define KVR_JSON_AVX2  1
#include <immintrin.h>
#endif

#include "kvr_json.h"


#define KVR_JSON_ONES   0x0101010101010101ull
#define KVR_JSON_HIGHS  0x8080808080808080ull


typedef struct {
    uint32_t             node;
    uint32_t             count;
    uint32_t             object;    /* 1 for an object, 0 for an array */
} kvr_json_open_t;


/* a cursor yielding the decoded bytes of a string node */
typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    unsigned char        buf[4];
    unsigned             n;
    unsigned             i;
} kvr_json_cursor_t;


static kvr_json_status_e kvr_json_run(kvr_json_doc_t *doc, unsigned flags);
static const unsigned char *kvr_json_string(const unsigned char *p,
    const unsigned char *e, uint32_t *info, kvr_json_status_e *err);
#if (KVR_JSON_AVX2)
static const unsigned char *kvr_json_plain_avx2(const unsigned char *p,
    const unsigned char *e);
#endif
static const unsigned char *kvr_json_utf8(const unsigned char *p,
    const unsigned char *e);
static const unsigned char *kvr_json_escape(const unsigned char *p,
    const unsigned char *e);
static int kvr_json_hex4(const unsigned char *p, uint32_t *cp);
static const unsigned char *kvr_json_number(const unsigned char *p,
    const unsigned char *e, uint32_t *info);
static int kvr_json_number_fits(const unsigned char *p, size_t len,
    uint32_t info);
static kvr_json_status_e kvr_json_bad_byte(const unsigned char *p,
    const unsigned char *e);
static void kvr_json_cursor_init(kvr_json_cursor_t *c,
    const kvr_json_doc_t *doc, uint32_t i);
static int kvr_json_cursor_next(kvr_json_cursor_t *c);
static size_t kvr_json_utf8_put(unsigned char *out, uint32_t cp);


/* JSON whitespace: space, tab, line feed, carriage return */
static const unsigned char  kvr_json_ws[256] = {
    ['\t'] = 1, ['\n'] = 1, ['\r'] = 1, [' '] = 1
};


/*
 * One freed document block is kept for the next parse (the request path
 * parses one body at a time per process, so this saves a large malloc and
 * free per request); blocks above KVR_JSON_KEEP bytes are freed.  Not for
 * use from several threads at once.
 */

#define KVR_JSON_KEEP  (1024 * 1024)

static kvr_json_doc_t  *kvr_json_kept;
static size_t           kvr_json_kept_size;

#if (KVR_JSON_AVX2)
/* -1 until the CPU is asked, once per process */
static int              kvr_json_avx2 = -1;
#endif


kvr_json_doc_t *
kvr_json_parse(const char *input, size_t len, unsigned flags)
{
    size_t           cap, size;
    kvr_json_doc_t  *doc;

    cap = len / 2 + 2;

    if (cap > KVR_JSON_MAX_NODES) {
        cap = KVR_JSON_MAX_NODES;
    }

    size = sizeof(kvr_json_doc_t) + cap * sizeof(kvr_json_node_t);

    if (kvr_json_kept != NULL && kvr_json_kept_size >= size) {
        doc = kvr_json_kept;
        size = kvr_json_kept_size;
        kvr_json_kept = NULL;

    } else {
        doc = malloc(size);
        if (doc == NULL) {
            return NULL;
        }
    }

    kvr_json_parse_into(doc, input, len, (kvr_json_node_t *) (doc + 1),
                        cap, flags);
    doc->owned = 1;
    doc->block_size = size;

    return doc;
}


kvr_json_status_e
kvr_json_parse_into(kvr_json_doc_t *doc, const char *input, size_t len,
    kvr_json_node_t *nodes, size_t cap, unsigned flags)
{
#if (KVR_JSON_AVX2)
    if (kvr_json_avx2 < 0) {
        __builtin_cpu_init();
        kvr_json_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
#endif

    memset(doc, 0, sizeof(kvr_json_doc_t));

    doc->input = (input != NULL) ? input : "";
    doc->len = (input != NULL) ? len : 0;
    doc->nodes = nodes;
    doc->cap = (cap > KVR_JSON_MAX_NODES) ? KVR_JSON_MAX_NODES
                                          : (uint32_t) cap;

    if (doc->len > UINT32_MAX - 1) {
        doc->status = KVR_JSON_ERR_TOO_BIG;
        return doc->status;
    }

    doc->status = kvr_json_run(doc, flags);

    if (doc->status != KVR_JSON_OK) {
        doc->n_nodes = 0;
    }

    return doc->status;
}


void
kvr_json_free(kvr_json_doc_t *doc)
{
    if (doc == NULL || !doc->owned) {
        return;
    }

    if (doc->block_size <= KVR_JSON_KEEP
        && (kvr_json_kept == NULL || kvr_json_kept_size < doc->block_size))
    {
        free(kvr_json_kept);
        kvr_json_kept = doc;
        kvr_json_kept_size = doc->block_size;
        return;
    }

    free(doc);
}


const char *
kvr_json_status_name(kvr_json_status_e status)
{
    switch (status) {

    case KVR_JSON_OK:
        return "ok";

    case KVR_JSON_ERR_SYNTAX:
        return "syntax";

    case KVR_JSON_ERR_UTF8:
        return "invalid-utf8";

    case KVR_JSON_ERR_DEPTH:
        return "too-deep";

    case KVR_JSON_ERR_TOO_BIG:
        return "too-big";

    case KVR_JSON_ERR_NUMBER:
        return "number-range";

    case KVR_JSON_ERR_NO_MEMORY:
        return "no-memory";
    }

    return "unknown";
}


/* the one pass: values, then what may follow them in their container */
static kvr_json_status_e
kvr_json_run(kvr_json_doc_t *doc, unsigned flags)
{
    int                   roomy, overflow;
    uint32_t              n, cap, info, depth;
    kvr_json_node_t      *node;
    kvr_json_status_e     err;
    const unsigned char  *base, *p, *e, *q;
    kvr_json_open_t       opened[KVR_JSON_MAX_DEPTH];

    base = (const unsigned char *) doc->input;
    p = base;
    e = base + doc->len;
    n = 0;
    cap = doc->cap;
    depth = 0;
    err = KVR_JSON_ERR_SYNTAX;
    roomy = (cap > 0 && cap >= doc->len / 2 + 2);
    overflow = 0;

value:

    while (p < e && kvr_json_ws[*p]) {
        p++;
    }

    if (p == e) {
        goto failed;
    }

    if (n == cap) {
        if (!roomy) {
            err = KVR_JSON_ERR_TOO_BIG;
            goto failed;
        }

        /*
         * a valid document fits len / 2 + 2 nodes: this one is invalid,
         * go on validating into the last slot to find out why
         */
        overflow = 1;
        n = cap - 1;
    }

    node = &doc->nodes[n];
    node->off = (uint32_t) (p - base);

    switch (*p) {

    case '"':
        q = kvr_json_string(p, e, &info, &err);
        if (q == NULL) {
            goto failed;
        }

        break;

    case '{':
    case '[':
        if (depth >= KVR_JSON_MAX_DEPTH) {
            err = KVR_JSON_ERR_DEPTH;
            goto failed;
        }

        node->info = (*p == '{') ? KVR_JSON_OBJECT : KVR_JSON_ARRAY;
        opened[depth].node = n;
        opened[depth].count = 0;
        opened[depth].object = (node->info == KVR_JSON_OBJECT);
        depth++;
        n++;
        p++;

        while (p < e && kvr_json_ws[*p]) {
            p++;
        }

        if (p == e) {
            goto failed;
        }

        if (node->info == KVR_JSON_OBJECT) {
            if (*p == '}') {
                goto close;
            }

            goto key;
        }

        if (*p == ']') {
            goto close;
        }

        goto value;

    case 't':
        if (e - p < 4 || memcmp(p, "true", 4) != 0) {
            goto bad_byte;
        }

        q = p + 4;
        info = KVR_JSON_TRUE;
        break;

    case 'f':
        if (e - p < 5 || memcmp(p, "false", 5) != 0) {
            goto bad_byte;
        }

        q = p + 5;
        info = KVR_JSON_FALSE;
        break;

    case 'n':
        if (e - p < 4 || memcmp(p, "null", 4) != 0) {
            goto bad_byte;
        }

        q = p + 4;
        info = KVR_JSON_NULL;
        break;

    default:
        q = kvr_json_number(p, e, &info);
        if (q == NULL) {
            goto bad_byte;
        }

        if ((flags & KVR_JSON_NUMBER_RANGE)
            && !kvr_json_number_fits(p, q - p, info))
        {
            err = KVR_JSON_ERR_NUMBER;
            goto failed;
        }

        break;
    }

    /* as jansson: a bad token is reported before the depth */
    if (depth >= KVR_JSON_MAX_DEPTH) {
        err = KVR_JSON_ERR_DEPTH;
        goto failed;
    }

    node->len = (uint32_t) (q - p);
    node->end = n + 1;
    node->info = info;
    n++;
    p = q;

next:

    if (depth == 0) {
        goto done;
    }

    opened[depth - 1].count++;

    while (p < e && kvr_json_ws[*p]) {
        p++;
    }

    if (p == e) {
        goto failed;
    }

    if (*p == ',') {
        p++;

        if (opened[depth - 1].object) {
            while (p < e && kvr_json_ws[*p]) {
                p++;
            }

            if (p == e) {
                goto failed;
            }

            goto key;
        }

        goto value;
    }

    if (*p == (opened[depth - 1].object ? '}' : ']')) {
        goto close;
    }

    goto bad_byte;

key:

    /* p is at a non-space byte that must open the member's name */
    if (*p != '"') {
        goto bad_byte;
    }

    if (n == cap) {
        if (!roomy) {
            err = KVR_JSON_ERR_TOO_BIG;
            goto failed;
        }

        /*
         * a valid document fits len / 2 + 2 nodes: this one is invalid,
         * go on validating into the last slot to find out why
         */
        overflow = 1;
        n = cap - 1;
    }

    q = kvr_json_string(p, e, &info, &err);
    if (q == NULL) {
        goto failed;
    }

    node = &doc->nodes[n];
    node->off = (uint32_t) (p - base);
    node->len = (uint32_t) (q - p);
    node->end = n + 1;
    node->info = info;
    n++;
    p = q;

    while (p < e && kvr_json_ws[*p]) {
        p++;
    }

    if (p == e) {
        goto failed;
    }

    if (*p != ':') {
        goto bad_byte;
    }

    p++;
    goto value;

close:

    /* p is at the closing bracket of the innermost open container */
    depth--;
    node = &doc->nodes[opened[depth].node];
    node->len = (uint32_t) (p + 1 - base) - node->off;
    node->end = n;
    node->info |= opened[depth].count << KVR_JSON_COUNT_SHIFT;
    p++;
    goto next;

done:

    while (p < e && kvr_json_ws[*p]) {
        p++;
    }

    if (p != e) {
        goto bad_byte;
    }

    if (overflow) {
        /* cannot happen, by the bound above; never pass bad nodes on */
        err = KVR_JSON_ERR_TOO_BIG;
        goto failed;
    }

    doc->n_nodes = n;

    return KVR_JSON_OK;

bad_byte:

    err = kvr_json_bad_byte(p, e);

failed:

    /* strings report their own position through err only: good enough */
    doc->err_off = (size_t) (p - base);

    return err;
}


/*
 * p is at the opening quote; returns the byte after the closing one and
 * the node info, or NULL with err set
 */
static const unsigned char *
kvr_json_string(const unsigned char *p, const unsigned char *e,
    uint32_t *info, kvr_json_status_e *err)
{
    uint64_t  w, hit;
    uint32_t  flags;

    flags = KVR_JSON_STRING;
    p++;

    for ( ;; ) {

#if (KVR_JSON_AVX2)
        if (e - p >= 64 && kvr_json_avx2 > 0) {
            p = kvr_json_plain_avx2(p, e);
        }
#endif

#if defined(__SSE2__)

        /*
         * plain ASCII 16 bytes at a time: a quote, a backslash, a control
         * byte or a byte >= 0x80 (negative, so below 0x20 when signed)
         */
        while (e - p >= 16) {
            __m128i  v, m;
            int      mask;

            v = _mm_loadu_si128((const __m128i *) p);
            m = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
            m = _mm_or_si128(m, _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
            mask = _mm_movemask_epi8(m);

            if (mask != 0) {
                p += __builtin_ctz((unsigned) mask);
                goto special;
            }

            p += 16;
        }

#endif

        /* plain ASCII a word at a time */
        while (e - p >= 8) {
            memcpy(&w, p, 8);

            hit = ((w ^ (KVR_JSON_ONES * '"')) - KVR_JSON_ONES)
                  & ~(w ^ (KVR_JSON_ONES * '"'));
            hit |= ((w ^ (KVR_JSON_ONES * '\\')) - KVR_JSON_ONES)
                   & ~(w ^ (KVR_JSON_ONES * '\\'));
            hit |= (w - KVR_JSON_ONES * 0x20) & ~w;
            hit = (hit | w) & KVR_JSON_HIGHS;

            if (hit != 0) {
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                /* borrows only run upwards: the lowest hit is real */
                p += __builtin_ctzll(hit) >> 3;
#endif
                break;
            }

            p += 8;
        }

#if defined(__SSE2__)
    special:
#endif

        if (p == e) {
            *err = KVR_JSON_ERR_SYNTAX;
            return NULL;
        }

        if (*p == '"') {
            *info = flags;
            return p + 1;
        }

        if (*p == '\\') {
            flags |= KVR_JSON_ESCAPED;
            p = kvr_json_escape(p, e);

            if (p == NULL) {
                *err = KVR_JSON_ERR_SYNTAX;
                return NULL;
            }

            continue;
        }

        if (*p >= 0x80) {
            p = kvr_json_utf8(p, e);

            if (p == NULL) {
                *err = KVR_JSON_ERR_UTF8;
                return NULL;
            }

            if (p == e) {
                /* cut inside a sequence (an invalid one says so) */
                *err = KVR_JSON_ERR_SYNTAX;
                return NULL;
            }

            continue;
        }

        if (*p < 0x20) {
            *err = KVR_JSON_ERR_SYNTAX;
            return NULL;
        }

        /* a plain byte in the tail shorter than a word */
        p++;
    }
}


#if (KVR_JSON_AVX2)

/*
 * Plain ASCII string content 128 bytes at a time: stops at the first
 * quote, backslash, control byte or byte >= 0x80, or where fewer than 64
 * bytes are left; the caller's loops go on from there.  With v ^ 0x02 a
 * quote becomes 0x20, so one signed "below 0x21" finds quotes, control
 * bytes and (negative) bytes >= 0x80 at once; backslashes are compared.
 */
__attribute__((target("avx2")))
static const unsigned char *
kvr_json_plain_avx2(const unsigned char *p, const unsigned char *e)
{
    __m256i   a, b, c, d, flip, below, bslash, m;
    uint32_t  mask;

    flip = _mm256_set1_epi8(0x02);
    below = _mm256_set1_epi8(0x21);
    bslash = _mm256_set1_epi8('\\');

#define kvr_json_special(v)                                                   \
    _mm256_or_si256(_mm256_cmpgt_epi8(below, _mm256_xor_si256(v, flip)),    \
                    _mm256_cmpeq_epi8(v, bslash))

    while (e - p >= 128) {
        a = _mm256_loadu_si256((const __m256i *) p);
        b = _mm256_loadu_si256((const __m256i *) (p + 32));
        c = _mm256_loadu_si256((const __m256i *) (p + 64));
        d = _mm256_loadu_si256((const __m256i *) (p + 96));

        m = _mm256_or_si256(_mm256_or_si256(kvr_json_special(a),
                                            kvr_json_special(b)),
                            _mm256_or_si256(kvr_json_special(c),
                                            kvr_json_special(d)));

        if (!_mm256_testz_si256(m, m)) {
            break;
        }

        p += 128;
    }

    /* the 32 bytes holding the first special byte, or the rest */

    while (e - p >= 64) {
        a = _mm256_loadu_si256((const __m256i *) p);
        mask = (uint32_t) _mm256_movemask_epi8(kvr_json_special(a));

        if (mask != 0) {
            return p + __builtin_ctz(mask);
        }

        p += 32;
    }

#undef kvr_json_special

    return p;
}

#endif


/*
 * Validates a run of non-ASCII characters from p (at a byte >= 0x80).
 * Returns the first byte after the run, e when a sequence is cut by the
 * end of the input, NULL on invalid UTF-8.
 */
static const unsigned char *
kvr_json_utf8(const unsigned char *p, const unsigned char *e)
{
    unsigned       c, lo, hi;
    size_t         need, i;

    while (p < e && *p >= 0x80) {
        c = *p;

        if (c < 0xc2) {
            return NULL;

        } else if (c < 0xe0) {
            need = 2;
            lo = 0x80;
            hi = 0xbf;

        } else if (c < 0xf0) {
            need = 3;
            lo = (c == 0xe0) ? 0xa0 : 0x80;
            hi = (c == 0xed) ? 0x9f : 0xbf;

        } else if (c < 0xf5) {
            need = 4;
            lo = (c == 0xf0) ? 0x90 : 0x80;
            hi = (c == 0xf4) ? 0x8f : 0xbf;

        } else {
            return NULL;
        }

        if ((size_t) (e - p) < need) {
            /* cut, as jansson's callers see it: continuation bytes only */
            for (i = 1; p + i < e; i++) {
                if ((p[i] & 0xc0) != 0x80) {
                    return NULL;
                }
            }

            return e;
        }

        if (p[1] < lo || p[1] > hi) {
            return NULL;
        }

        for (i = 2; i < need; i++) {
            if ((p[i] & 0xc0) != 0x80) {
                return NULL;
            }
        }

        p += need;
    }

    return p;
}


/* p is at a backslash; returns the byte after the escape or NULL */
static const unsigned char *
kvr_json_escape(const unsigned char *p, const unsigned char *e)
{
    uint32_t  cp, lo;

    if (e - p < 2) {
        return NULL;
    }

    switch (p[1]) {

    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
        return p + 2;

    case 'u':
        break;

    default:
        return NULL;
    }

    if (e - p < 6 || kvr_json_hex4(p + 2, &cp) != 0) {
        return NULL;
    }

    if (cp < 0xd800 || cp > 0xdfff) {
        return p + 6;
    }

    /* a high surrogate must be followed by an escaped low one */
    if (cp > 0xdbff || e - p < 12 || p[6] != '\\' || p[7] != 'u'
        || kvr_json_hex4(p + 8, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff)
    {
        return NULL;
    }

    return p + 12;
}


static int
kvr_json_hex4(const unsigned char *p, uint32_t *cp)
{
    unsigned  i, c;
    uint32_t  v;

    v = 0;
    *cp = 0;

    for (i = 0; i < 4; i++) {
        c = p[i];

        if (c >= '0' && c <= '9') {
            c -= '0';

        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            c = (c | 0x20) - 'a' + 10;

        } else {
            return -1;
        }

        v = (v << 4) | c;
    }

    *cp = v;

    return 0;
}


/*
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? from p; returns the byte
 * after it or NULL.  A digit right after a leading 0 ends the number: the
 * caller then fails on that digit.
 */
static const unsigned char *
kvr_json_number(const unsigned char *p, const unsigned char *e,
    uint32_t *info)
{
    uint32_t  flags;

    flags = KVR_JSON_NUMBER;

    if (*p == '-') {
        p++;

        if (p == e) {
            return NULL;
        }
    }

    if (*p == '0') {
        p++;

    } else if (*p >= '1' && *p <= '9') {
        do {
            p++;
        } while (p < e && *p >= '0' && *p <= '9');

    } else {
        return NULL;
    }

    if (p < e && *p == '.') {
        flags |= KVR_JSON_REAL;
        p++;

        if (p == e || *p < '0' || *p > '9') {
            return NULL;
        }

        do {
            p++;
        } while (p < e && *p >= '0' && *p <= '9');
    }

    if (p < e && (*p == 'e' || *p == 'E')) {
        flags |= KVR_JSON_REAL;
        p++;

        if (p < e && (*p == '+' || *p == '-')) {
            p++;
        }

        if (p == e || *p < '0' || *p > '9') {
            return NULL;
        }

        do {
            p++;
        } while (p < e && *p >= '0' && *p <= '9');
    }

    *info = flags;

    return p;
}


/*
 * Whether jansson could hold the number: integers in int64, reals whose
 * magnitude does not round above DBL_MAX (underflow to 0 is fine)
 */
static int
kvr_json_number_fits(const unsigned char *p, size_t len, uint32_t info)
{
    int                   neg;
    char                  buf[448];
    size_t                i, nd, ni;
    int64_t               exp, mag;
    double                v;
    const unsigned char  *e;

    neg = (*p == '-');
    if (neg) {
        p++;
        len--;
    }

    if (!(info & KVR_JSON_REAL)) {
        if (len < 19) {
            return 1;
        }

        if (len > 19) {
            return 0;
        }

        return memcmp(p, neg ? "9223372036854775808" : "9223372036854775807",
                      19) <= 0;
    }

    e = p + len;

    for (ni = 0; p + ni < e && p[ni] >= '0' && p[ni] <= '9'; ni++) {
        /* integer digits */
    }

    /* the exponent, saturated far beyond any double */
    exp = 0;

    for (i = 0; i < len; i++) {
        if (p[i] == 'e' || p[i] == 'E') {
            break;
        }
    }

    if (i < len) {
        e = p + i;
        i++;
        neg = (p[i] == '-');

        if (p[i] == '-' || p[i] == '+') {
            i++;
        }

        for ( /* void */ ; i < len; i++) {
            if (exp < 100000) {
                exp = exp * 10 + (p[i] - '0');
            }
        }

        if (neg) {
            exp = -exp;
        }
    }

    /* decimal position of the first significant digit: 10^mag <= |x| */
    if (!(ni == 1 && p[0] == '0')) {
        mag = (int64_t) ni - 1;
        i = 0;

    } else {
        i = ni + 1;         /* after "0." */

        while (p + i < e && p[i] == '0') {
            i++;
        }

        if (p + i >= e) {
            return 1;       /* zero */
        }

        mag = -(int64_t) (i - ni);
    }

    mag += exp;

    if (mag < 308) {
        return 1;
    }

    if (mag > 308) {
        return 0;
    }

    /*
     * the close call, by strtod on "digits" "e" exponent: 400 digits and
     * a sticky nonzero one decide the rounding as all of them would
     */
    nd = 0;

    for ( /* void */ ; p + i < e; i++) {
        if (p[i] == '.') {
            continue;
        }

        if (nd < 400) {
            buf[nd++] = p[i];

        } else if (p[i] != '0' && nd == 400) {
            buf[nd++] = '1';
        }
    }

    buf[nd] = '\0';
    snprintf(buf + nd, sizeof(buf) - nd, "e%d", (int) (308 - (nd - 1)));

    v = strtod(buf, NULL);

    return v <= 1.7976931348623157e308;
}


/* the class of an unexpected byte, as jansson reports it */
static kvr_json_status_e
kvr_json_bad_byte(const unsigned char *p, const unsigned char *e)
{
    const unsigned char  *q;

    if (p < e && *p >= 0x80) {
        q = kvr_json_utf8(p, e);

        if (q == NULL) {
            return KVR_JSON_ERR_UTF8;
        }
    }

    return KVR_JSON_ERR_SYNTAX;
}


uint32_t
kvr_json_find(const kvr_json_doc_t *doc, uint32_t obj, const char *key,
    size_t key_len)
{
    uint32_t                k, end, found;
    const kvr_json_node_t  *node;

    if (obj >= doc->n_nodes || kvr_json_type(doc, obj) != KVR_JSON_OBJECT) {
        return 0;
    }

    found = 0;
    end = doc->nodes[obj].end;

    for (k = obj + 1; k < end; k = doc->nodes[k + 1].end) {
        node = &doc->nodes[k];

        if (node->info & KVR_JSON_ESCAPED) {
            if (kvr_json_string_eq(doc, k, key, key_len)) {
                found = k + 1;
            }

            continue;
        }

        if (node->len - 2 == key_len
            && memcmp(doc->input + node->off + 1, key, key_len) == 0)
        {
            found = k + 1;
        }
    }

    return found;
}


int
kvr_json_string_eq(const kvr_json_doc_t *doc, uint32_t i, const char *s,
    size_t n)
{
    int                     c;
    size_t                  j;
    kvr_json_cursor_t       cur;
    const kvr_json_node_t  *node;

    node = &doc->nodes[i];

    if ((node->info & KVR_JSON_TYPE_MASK) != KVR_JSON_STRING) {
        return 0;
    }

    if (!(node->info & KVR_JSON_ESCAPED)) {
        return node->len - 2 == n
               && memcmp(doc->input + node->off + 1, s, n) == 0;
    }

    /* escapes only shrink the text */
    if (n > node->len - 2) {
        return 0;
    }

    kvr_json_cursor_init(&cur, doc, i);

    for (j = 0; j < n; j++) {
        c = kvr_json_cursor_next(&cur);

        if (c != (unsigned char) s[j]) {
            return 0;
        }
    }

    return kvr_json_cursor_next(&cur) < 0;
}


int
kvr_json_string_cmp(const kvr_json_doc_t *doc, uint32_t a, uint32_t b)
{
    int                     ca, cb, rc;
    size_t                  la, lb;
    kvr_json_cursor_t       ka, kb;
    const kvr_json_node_t  *na, *nb;

    na = &doc->nodes[a];
    nb = &doc->nodes[b];

    if (!((na->info | nb->info) & KVR_JSON_ESCAPED)) {
        la = na->len - 2;
        lb = nb->len - 2;

        /* names mostly differ at once: spare the call */
        if (la > 0 && lb > 0) {
            ca = (unsigned char) doc->input[na->off + 1];
            cb = (unsigned char) doc->input[nb->off + 1];

            if (ca != cb) {
                return ca - cb;
            }
        }

        rc = memcmp(doc->input + na->off + 1, doc->input + nb->off + 1,
                    (la < lb) ? la : lb);

        if (rc != 0) {
            return rc;
        }

        return (la > lb) - (la < lb);
    }

    kvr_json_cursor_init(&ka, doc, a);
    kvr_json_cursor_init(&kb, doc, b);

    for ( ;; ) {
        ca = kvr_json_cursor_next(&ka);
        cb = kvr_json_cursor_next(&kb);

        if (ca != cb || ca < 0) {
            return (ca > cb) - (ca < cb);
        }
    }
}


size_t
kvr_json_string_decode(const kvr_json_doc_t *doc, uint32_t i, char *buf,
    size_t size)
{
    size_t                  n, run;
    uint32_t                cp, lo;
    unsigned char          *out;
    const unsigned char    *p, *e, *bs;
    const kvr_json_node_t  *node;

    node = &doc->nodes[i];
    p = (const unsigned char *) doc->input + node->off + 1;
    e = p + node->len - 2;
    out = (unsigned char *) buf;
    n = 0;

    for ( ;; ) {
        bs = memchr(p, '\\', e - p);
        run = (bs != NULL ? bs : e) - p;

        if (run > size - n) {
            return (size_t) -1;
        }

        memcpy(out + n, p, run);
        n += run;

        if (bs == NULL) {
            return n;
        }

        p = bs + 1;

        /* the parser validated the escape */
        switch (*p) {

        case 'b':
            cp = '\b';
            break;

        case 'f':
            cp = '\f';
            break;

        case 'n':
            cp = '\n';
            break;

        case 'r':
            cp = '\r';
            break;

        case 't':
            cp = '\t';
            break;

        case 'u':
            (void) kvr_json_hex4(p + 1, &cp);
            p += 4;

            if (cp >= 0xd800 && cp <= 0xdbff) {
                (void) kvr_json_hex4(p + 3, &lo);
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            }

            break;

        default:
            cp = *p;
            break;
        }

        p++;

        run = (cp < 0x80) ? 1 : (cp < 0x800) ? 2 : (cp < 0x10000) ? 3 : 4;

        if (run > size - n) {
            return (size_t) -1;
        }

        n += kvr_json_utf8_put(out + n, cp);
    }
}


int
kvr_json_uint32(const kvr_json_doc_t *doc, uint32_t i, uint32_t *value)
{
    size_t                  len, j;
    uint64_t                v;
    const char             *p;
    const kvr_json_node_t  *node;

    node = &doc->nodes[i];

    if ((node->info & (KVR_JSON_TYPE_MASK | KVR_JSON_REAL))
        != KVR_JSON_NUMBER)
    {
        return -1;
    }

    p = doc->input + node->off;
    len = node->len;

    if (p[0] == '-') {
        /* only "-0" is in range; the grammar forbids "-00" */
        if (len == 2 && p[1] == '0') {
            *value = 0;
            return 0;
        }

        return -1;
    }

    if (len > 10) {
        return -1;
    }

    v = 0;

    for (j = 0; j < len; j++) {
        v = v * 10 + (uint64_t) (p[j] - '0');
    }

    if (v > UINT32_MAX) {
        return -1;
    }

    *value = (uint32_t) v;

    return 0;
}


static void
kvr_json_cursor_init(kvr_json_cursor_t *c, const kvr_json_doc_t *doc,
    uint32_t i)
{
    c->p = (const unsigned char *) doc->input + doc->nodes[i].off + 1;
    c->end = c->p + doc->nodes[i].len - 2;
    c->n = 0;
    c->i = 0;
}


/* the next decoded byte, -1 at the end */
static int
kvr_json_cursor_next(kvr_json_cursor_t *c)
{
    uint32_t  cp, lo;

    if (c->i < c->n) {
        return c->buf[c->i++];
    }

    if (c->p >= c->end) {
        return -1;
    }

    if (*c->p != '\\') {
        return *c->p++;
    }

    c->p++;

    switch (*c->p++) {

    case 'b':
        return '\b';

    case 'f':
        return '\f';

    case 'n':
        return '\n';

    case 'r':
        return '\r';

    case 't':
        return '\t';

    case 'u':
        break;

    default:
        return c->p[-1];
    }

    (void) kvr_json_hex4(c->p, &cp);
    c->p += 4;

    if (cp >= 0xd800 && cp <= 0xdbff) {
        (void) kvr_json_hex4(c->p + 2, &lo);
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        c->p += 6;
    }

    c->n = (unsigned) kvr_json_utf8_put(c->buf, cp);
    c->i = 1;

    return c->buf[0];
}


static size_t
kvr_json_utf8_put(unsigned char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (unsigned char) cp;
        return 1;
    }

    if (cp < 0x800) {
        out[0] = (unsigned char) (0xc0 | (cp >> 6));
        out[1] = (unsigned char) (0x80 | (cp & 0x3f));
        return 2;
    }

    if (cp < 0x10000) {
        out[0] = (unsigned char) (0xe0 | (cp >> 12));
        out[1] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
        out[2] = (unsigned char) (0x80 | (cp & 0x3f));
        return 3;
    }

    out[0] = (unsigned char) (0xf0 | (cp >> 18));
    out[1] = (unsigned char) (0x80 | ((cp >> 12) & 0x3f));
    out[2] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
    out[3] = (unsigned char) (0x80 | (cp & 0x3f));

    return 4;
}
