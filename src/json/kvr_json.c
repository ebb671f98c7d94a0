/*
 * Copyright (C) kvroute developers
 *
 * The JSON parser (interface in kvr_json.h); reading a parsed document is
 * kvr_json_get.c's.
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
#include "kvr_json_int.h"


/* the pass's helpers: inline, whatever the compiler's estimate */
#if defined(__GNUC__)
#define kvr_json_inline  inline __attribute__((always_inline))
#else
#define kvr_json_inline  inline
#endif

#define KVR_JSON_ONES   0x0101010101010101ull
#define KVR_JSON_HIGHS  0x8080808080808080ull


typedef struct {
    uint32_t             node;
    uint32_t             count;
    uint32_t             object;    /* 1 for an object, 0 for an array */
} kvr_json_open_t;


/* where the pass goes next (kvr_json_run) */
typedef enum {
    KVR_JSON_S_VALUE = 0,
    KVR_JSON_S_KEY,
    KVR_JSON_S_CLOSE,
    KVR_JSON_S_NEXT,        /* a value is complete */
    KVR_JSON_S_BAD,         /* a byte the grammar does not allow here */
    KVR_JSON_S_FAIL         /* the input ends early, or err is set */
} kvr_json_state_e;


/* the state of the one pass (kvr_json_run) */
typedef struct {
    kvr_json_doc_t       *doc;
    kvr_json_node_t      *nodes;        /* doc's */
    uint32_t              cap;          /* doc's */
    const unsigned char  *base;
    const unsigned char  *e;
    unsigned              flags;
    uint32_t              n;            /* nodes written */
    uint32_t              depth;        /* containers open */
    int                   roomy;        /* room for any valid document */
    int                   overflow;     /* validating on in the last slot */
    kvr_json_status_e     err;
    kvr_json_open_t      *opened;       /* open containers, innermost last */
} kvr_json_pass_t;


static kvr_json_status_e kvr_json_run(kvr_json_doc_t *doc, unsigned flags);
static kvr_json_status_e kvr_json_end(kvr_json_pass_t *ps,
    const unsigned char *p);
static kvr_json_inline kvr_json_state_e kvr_json_then(kvr_json_pass_t *ps,
    const unsigned char **pp, int first);
static kvr_json_inline kvr_json_state_e kvr_json_open(kvr_json_pass_t *ps,
    kvr_json_node_t *node, const unsigned char **pp);
static kvr_json_inline const unsigned char *kvr_json_literal(
    const unsigned char *p, const unsigned char *e, unsigned flags,
    uint32_t *info, kvr_json_status_e *err);
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
static const unsigned char *kvr_json_number(const unsigned char *p,
    const unsigned char *e, uint32_t *info);
static int kvr_json_number_fits(const unsigned char *p, size_t len,
    uint32_t info);
static kvr_json_status_e kvr_json_bad_byte(const unsigned char *p,
    const unsigned char *e);


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


static kvr_json_inline const unsigned char *
kvr_json_skip_ws(const unsigned char *p, const unsigned char *e)
{
    while (p < e && kvr_json_ws[*p]) {
        p++;
    }

    return p;
}


/*
 * The next node, at p.  When every slot is taken: a valid document fits
 * len / 2 + 2 nodes, so in a roomy array this one is invalid, and
 * validating goes on into the last slot to find out why; else the
 * document is too big (NULL).
 */
static kvr_json_inline kvr_json_node_t *
kvr_json_node(kvr_json_pass_t *ps, const unsigned char *p)
{
    kvr_json_node_t  *node;

    if (ps->n == ps->cap) {
        if (!ps->roomy) {
            ps->err = KVR_JSON_ERR_TOO_BIG;
            return NULL;
        }

        ps->overflow = 1;
        ps->n--;
    }

    node = &ps->nodes[ps->n];
    node->off = (uint32_t) (p - ps->base);

    return node;
}


/*
 * A value at *pp, after white space.  A scalar becomes a node (*pp moves
 * past it, KVR_JSON_S_NEXT); an object or an array is opened.
 */
static kvr_json_inline kvr_json_state_e
kvr_json_value(kvr_json_pass_t *ps, const unsigned char **pp)
{
    uint32_t              info;
    kvr_json_node_t      *node;
    const unsigned char  *p, *q;

    p = kvr_json_skip_ws(*pp, ps->e);
    *pp = p;

    if (p == ps->e) {
        return KVR_JSON_S_FAIL;
    }

    node = kvr_json_node(ps, p);
    if (node == NULL) {
        return KVR_JSON_S_FAIL;
    }

    switch (*p) {

    case '"':
        q = kvr_json_string(p, ps->e, &info, &ps->err);
        if (q == NULL) {
            return KVR_JSON_S_FAIL;
        }

        break;

    case '{':
    case '[':
        return kvr_json_open(ps, node, pp);

    default:
        q = kvr_json_literal(p, ps->e, ps->flags, &info, &ps->err);
        if (q == NULL) {
            return KVR_JSON_S_FAIL;
        }
    }

    /* as jansson: a bad token is reported before the depth */
    if (ps->depth >= KVR_JSON_MAX_DEPTH) {
        ps->err = KVR_JSON_ERR_DEPTH;
        return KVR_JSON_S_FAIL;
    }

    node->len = (uint32_t) (q - p);
    node->end = ps->n + 1;
    node->info = info;
    ps->n++;
    *pp = q;

    return KVR_JSON_S_NEXT;
}


/* the object or array node at *pp is opened; what its first byte is */
static kvr_json_inline kvr_json_state_e
kvr_json_open(kvr_json_pass_t *ps, kvr_json_node_t *node,
    const unsigned char **pp)
{
    kvr_json_open_t  *open;

    if (ps->depth >= KVR_JSON_MAX_DEPTH) {
        ps->err = KVR_JSON_ERR_DEPTH;
        return KVR_JSON_S_FAIL;
    }

    open = &ps->opened[ps->depth++];
    open->object = (**pp == '{');
    open->node = ps->n++;
    open->count = 0;
    node->info = open->object ? KVR_JSON_OBJECT : KVR_JSON_ARRAY;

    (*pp)++;

    return kvr_json_then(ps, pp, 1);
}


/*
 * Inside the innermost open container, just after its opening bracket
 * (first) or after one of its values: its closing bracket, or (after a
 * value, a comma and) a member's name or an element.  *pp is moved to that
 * byte, or to where the grammar fails (KVR_JSON_S_BAD there,
 * KVR_JSON_S_FAIL at the end of the input).
 */
static kvr_json_inline kvr_json_state_e
kvr_json_then(kvr_json_pass_t *ps, const unsigned char **pp, int first)
{
    int                   object;
    const unsigned char  *p;

    object = ps->opened[ps->depth - 1].object;

    p = kvr_json_skip_ws(*pp, ps->e);
    *pp = p;

    if (p == ps->e) {
        return KVR_JSON_S_FAIL;
    }

    if (*p == (object ? '}' : ']')) {
        return KVR_JSON_S_CLOSE;
    }

    if (first) {
        return object ? KVR_JSON_S_KEY : KVR_JSON_S_VALUE;
    }

    if (*p != ',') {
        return KVR_JSON_S_BAD;
    }

    if (!object) {
        *pp = p + 1;
        return KVR_JSON_S_VALUE;
    }

    p = kvr_json_skip_ws(p + 1, ps->e);
    *pp = p;

    return (p == ps->e) ? KVR_JSON_S_FAIL : KVR_JSON_S_KEY;
}


/*
 * A member's name at *pp (a non-space byte), its node, then its ':'.  *pp
 * is moved past the colon (KVR_JSON_S_VALUE), or to where the grammar
 * fails (KVR_JSON_S_BAD), or stays or goes to the end with err set
 * (KVR_JSON_S_FAIL).
 */
static kvr_json_inline kvr_json_state_e
kvr_json_member(kvr_json_pass_t *ps, const unsigned char **pp)
{
    uint32_t              info;
    kvr_json_node_t      *node;
    const unsigned char  *p, *q;

    p = *pp;

    if (*p != '"') {
        return KVR_JSON_S_BAD;
    }

    node = kvr_json_node(ps, p);
    if (node == NULL) {
        return KVR_JSON_S_FAIL;
    }

    q = kvr_json_string(p, ps->e, &info, &ps->err);
    if (q == NULL) {
        return KVR_JSON_S_FAIL;
    }

    node->len = (uint32_t) (q - p);
    node->end = ps->n + 1;
    node->info = info;
    ps->n++;

    p = kvr_json_skip_ws(q, ps->e);
    *pp = p;

    if (p == ps->e) {
        return KVR_JSON_S_FAIL;
    }

    if (*p != ':') {
        return KVR_JSON_S_BAD;
    }

    *pp = p + 1;

    return KVR_JSON_S_VALUE;
}


/* p is at the closing bracket of the innermost open container */
static kvr_json_inline void
kvr_json_close(kvr_json_pass_t *ps, const unsigned char *p)
{
    kvr_json_open_t  *open;
    kvr_json_node_t  *node;

    open = &ps->opened[--ps->depth];
    node = &ps->nodes[open->node];
    node->len = (uint32_t) (p + 1 - ps->base) - node->off;
    node->end = ps->n;
    node->info |= open->count << KVR_JSON_COUNT_SHIFT;
}


/*
 * true, false, null or a number at p: returns the byte after it and its
 * info, or NULL with err set (the class of a bad byte as jansson has it)
 */
static kvr_json_inline const unsigned char *
kvr_json_literal(const unsigned char *p, const unsigned char *e,
    unsigned flags, uint32_t *info, kvr_json_status_e *err)
{
    const unsigned char  *q;

    switch (*p) {

    case 't':
        if (e - p < 4 || memcmp(p, "true", 4) != 0) {
            break;
        }

        *info = KVR_JSON_TRUE;
        return p + 4;

    case 'f':
        if (e - p < 5 || memcmp(p, "false", 5) != 0) {
            break;
        }

        *info = KVR_JSON_FALSE;
        return p + 5;

    case 'n':
        if (e - p < 4 || memcmp(p, "null", 4) != 0) {
            break;
        }

        *info = KVR_JSON_NULL;
        return p + 4;

    default:
        q = kvr_json_number(p, e, info);
        if (q == NULL) {
            break;
        }

        if ((flags & KVR_JSON_NUMBER_RANGE)
            && !kvr_json_number_fits(p, q - p, *info))
        {
            *err = KVR_JSON_ERR_NUMBER;
            return NULL;
        }

        return q;
    }

    *err = kvr_json_bad_byte(p, e);

    return NULL;
}


/*
 * The one pass: a state machine over the bytes (no recursion; the open
 * containers are on a stack), each state a forced-inline function above,
 * so that the pass, the request path's inner loop, keeps its state in
 * registers.
 */
static kvr_json_status_e
kvr_json_run(kvr_json_doc_t *doc, unsigned flags)
{
    kvr_json_pass_t       ps;
    kvr_json_state_e      state;
    const unsigned char  *p;
    kvr_json_open_t       opened[KVR_JSON_MAX_DEPTH];

    ps.doc = doc;
    ps.nodes = doc->nodes;
    ps.cap = doc->cap;
    ps.base = (const unsigned char *) doc->input;
    ps.e = ps.base + doc->len;
    ps.flags = flags;
    ps.n = 0;
    ps.depth = 0;
    ps.roomy = (doc->cap > 0 && doc->cap >= doc->len / 2 + 2);
    ps.overflow = 0;
    ps.err = KVR_JSON_ERR_SYNTAX;
    ps.opened = opened;

    p = ps.base;
    state = KVR_JSON_S_VALUE;

    for ( ;; ) {

        switch (state) {

        case KVR_JSON_S_VALUE:
            state = kvr_json_value(&ps, &p);
            break;

        case KVR_JSON_S_KEY:
            state = kvr_json_member(&ps, &p);
            break;

        case KVR_JSON_S_CLOSE:
            kvr_json_close(&ps, p);
            p++;

            /* fall through */

        case KVR_JSON_S_NEXT:
            if (ps.depth == 0) {
                return kvr_json_end(&ps, p);
            }

            ps.opened[ps.depth - 1].count++;
            state = kvr_json_then(&ps, &p, 0);
            break;

        case KVR_JSON_S_BAD:
            ps.err = kvr_json_bad_byte(p, ps.e);

            /* fall through */

        default:
            /* strings report their own position through err only */
            doc->err_off = (size_t) (p - ps.base);
            return ps.err;
        }
    }
}


/* the top value is complete: nothing but white space may follow */
static kvr_json_status_e
kvr_json_end(kvr_json_pass_t *ps, const unsigned char *p)
{
    p = kvr_json_skip_ws(p, ps->e);

    if (p != ps->e) {
        ps->err = kvr_json_bad_byte(p, ps->e);
        ps->doc->err_off = (size_t) (p - ps->base);
        return ps->err;
    }

    if (ps->overflow) {
        /* cannot happen, by the bound above; never pass bad nodes on */
        ps->doc->err_off = (size_t) (p - ps->base);
        return KVR_JSON_ERR_TOO_BIG;
    }

    ps->doc->n_nodes = ps->n;

    return KVR_JSON_OK;
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


