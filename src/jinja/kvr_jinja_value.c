/*
 * Copyright (C) kvroute developers
 *
 * The Jinja subset's value model: the bounded arena, constructors,
 * ordered dicts, python truthiness and comparisons, and the three ways
 * of writing a value out: python str(), repr() and transformers' tojson
 * (json.dumps with ensure_ascii=False), floats in python's shortest repr.
 */

#define _GNU_SOURCE

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvr_jinja_int.h"


const kvr_jv_t  kvr_jv_undef = { KVR_JV_UNDEF, 0, 0, { 0 } };
const kvr_jv_t  kvr_jv_none = { KVR_JV_NONE, 0, 0, { 0 } };


void
kvr_jarena_init(kvr_jarena_t *a, size_t max, char *err, size_t errlen)
{
    a->head = NULL;
    a->total = 0;
    a->max = max;
    a->fail = NULL;
    a->err = err;
    a->errlen = errlen;
}


void
kvr_jarena_free(kvr_jarena_t *a)
{
    kvr_jchunk_t  *c, *next;

    for (c = a->head; c; c = next) {
        next = c->next;
        free(c);
    }

    a->head = NULL;
    a->total = 0;
}


/* 16-byte aligned; NULL (or a jump to a->fail) when over the bound */
void *
kvr_jalloc(kvr_jarena_t *a, size_t size)
{
    size_t         csize;
    kvr_jchunk_t  *c;
    char          *p;

    size = (size + 15) & ~(size_t) 15;
    c = a->head;

    if (c == NULL || c->size - c->used < size) {
        csize = size + sizeof(kvr_jchunk_t) + 16;
        if (csize < KVR_JARENA_CHUNK) {
            csize = KVR_JARENA_CHUNK;
        }

        if (size > a->max || a->total + csize > a->max
            || (c = malloc(csize)) == NULL)
        {
            if (a->fail) {
                snprintf(a->err, a->errlen, "memory limit reached");
                longjmp(*a->fail, 1);
            }
            return NULL;
        }

        c->size = csize;
        c->used = (sizeof(kvr_jchunk_t) + 15) & ~(size_t) 15;
        a->total += csize;

        if (a->head && a->head->size - a->head->used > csize - c->used
                                                        - size)
        {
            /* a big block goes behind the current chunk */
            c->next = a->head->next;
            a->head->next = c;
            p = (char *) c + c->used;
            c->used += size;
            return p;
        }

        c->next = a->head;
        a->head = c;
    }

    p = (char *) c + c->used;
    c->used += size;

    return p;
}


void
kvr_jfail(kvr_jinja_render_t *r, int status, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(r->err, sizeof(r->err), fmt, ap);
    va_end(ap);

    /*
     * a generator filter (map, select, items...) raises in python only
     * when something consumes it: whether it does is not reproduced
     */
    if (r->lazy && status == KVR_JINJA_ERROR) {
        status = KVR_JINJA_UNSUPPORTED;
    }

    r->status = status;
    longjmp(r->jmp, 1);
}


void *
kvr_jr_alloc(kvr_jinja_render_t *r, size_t size)
{
    void  *p;

    p = kvr_jalloc(&r->arena, size);
    if (p == NULL) {
        if (r->in_render) {
            kvr_jfail(r, KVR_JINJA_LIMIT, "memory limit reached");
        }
        r->failed = 1;
    }

    return p;
}


/* constructors */

kvr_jv_t
kvr_jv_bool(int b)
{
    kvr_jv_t  v = { KVR_JV_BOOL, 0, 0, { 0 } };

    v.u.i = b ? 1 : 0;
    return v;
}


kvr_jv_t
kvr_jv_int(int64_t i)
{
    kvr_jv_t  v = { KVR_JV_INT, 0, 0, { 0 } };

    v.u.i = i;
    return v;
}


kvr_jv_t
kvr_jv_float(double f)
{
    kvr_jv_t  v = { KVR_JV_FLOAT, 0, 0, { 0 } };

    v.u.f = f;
    return v;
}


kvr_jv_t
kvr_jv_str(const char *s, size_t len)
{
    kvr_jv_t  v = { KVR_JV_STR, 0, 0, { 0 } };

    v.u.s = s;
    v.len = (uint32_t) len;
    return v;
}


kvr_jv_t
kvr_jv_strdup(kvr_jinja_render_t *r, const char *s, size_t len)
{
    char  *p;

    if (len > UINT32_MAX - 1) {
        kvr_jfail(r, KVR_JINJA_LIMIT, "string too long");
    }

    p = kvr_jr_alloc(r, len + 1);
    if (p == NULL) {
        return kvr_jv_str("", 0);
    }

    memcpy(p, s, len);
    p[len] = '\0';

    return kvr_jv_str(p, len);
}


kvr_jv_t
kvr_jv_undef_named(const char *name, size_t len)
{
    kvr_jv_t  v = { KVR_JV_UNDEF, 0, 0, { 0 } };

    v.u.s = name;
    v.len = (uint32_t) len;
    return v;
}


kvr_jlist_t *
kvr_jlist_new(kvr_jinja_render_t *r, size_t n)
{
    kvr_jlist_t  *l;

    if (n > (r->arena.max / sizeof(kvr_jv_t))) {
        kvr_jfail(r, KVR_JINJA_LIMIT, "list too long");
    }

    l = kvr_jr_alloc(r, sizeof(kvr_jlist_t));
    if (l == NULL) {
        return NULL;
    }

    l->n = 0;
    l->consumed = 0;
    l->cap = (uint32_t) n;
    /* never NULL, so that memcpy() of zero items stays defined */
    l->items = kvr_jr_alloc(r, (n ? n : 1) * sizeof(kvr_jv_t));
    if (l->items == NULL) {
        return NULL;
    }

    return l;
}


kvr_jv_t
kvr_jv_list(kvr_jlist_t *l)
{
    kvr_jv_t  v = { KVR_JV_LIST, 0, 0, { 0 } };

    v.u.list = l;
    return v;
}


kvr_jdict_t *
kvr_jdict_new(kvr_jinja_render_t *r, size_t cap)
{
    kvr_jdict_t  *d;

    d = kvr_jr_alloc(r, sizeof(kvr_jdict_t));
    if (d == NULL) {
        return NULL;
    }

    memset(d, 0, sizeof(*d));
    if (cap) {
        d->keys = kvr_jr_alloc(r, cap * sizeof(kvr_jv_t));
        d->vals = kvr_jr_alloc(r, cap * sizeof(kvr_jv_t));
        if (d->keys == NULL || d->vals == NULL) {
            return NULL;
        }
        d->cap = (uint32_t) cap;
    }

    return d;
}


kvr_jv_t
kvr_jv_dict(kvr_jdict_t *d)
{
    kvr_jv_t  v = { KVR_JV_DICT, 0, 0, { 0 } };

    v.u.dict = d;
    return v;
}


static uint32_t
kvr_jhash_str(const char *s, size_t len)
{
    uint32_t  h;
    size_t    i;

    h = 2166136261u;
    for (i = 0; i < len; i++) {
        h = (h ^ (uint8_t) s[i]) * 16777619u;
    }

    return h;
}


static int
kvr_jdict_index_build(kvr_jinja_render_t *r, kvr_jdict_t *d, uint32_t cap)
{
    uint32_t   i, h, *index;

    index = kvr_jr_alloc(r, cap * sizeof(uint32_t));
    if (index == NULL) {
        return -1;
    }
    memset(index, 0, cap * sizeof(uint32_t));

    for (i = 0; i < d->n; i++) {
        if (d->keys[i].type != KVR_JV_STR) {
            continue;
        }
        h = kvr_jhash_str(d->keys[i].u.s, d->keys[i].len) & (cap - 1);
        while (index[h]) {
            h = (h + 1) & (cap - 1);
        }
        index[h] = i + 1;
    }

    d->index = index;
    d->index_cap = cap;

    return 0;
}


kvr_jv_t *
kvr_jdict_get_str(kvr_jdict_t *d, const char *s, size_t len)
{
    uint32_t   i, h, slot;
    kvr_jv_t  *k;

    if (d->index) {
        h = kvr_jhash_str(s, len) & (d->index_cap - 1);
        while ((slot = d->index[h]) != 0) {
            k = &d->keys[slot - 1];
            if (k->type == KVR_JV_STR && k->len == len
                && memcmp(k->u.s, s, len) == 0)
            {
                return &d->vals[slot - 1];
            }
            h = (h + 1) & (d->index_cap - 1);
        }
        return NULL;
    }

    for (i = 0; i < d->n; i++) {
        k = &d->keys[i];
        if (k->type == KVR_JV_STR && k->len == len
            && memcmp(k->u.s, s, len) == 0)
        {
            return &d->vals[i];
        }
    }

    return NULL;
}


kvr_jv_t *
kvr_jdict_get(kvr_jdict_t *d, kvr_jv_t key)
{
    uint32_t  i;

    if (key.type == KVR_JV_STR) {
        return kvr_jdict_get_str(d, key.u.s, key.len);
    }

    for (i = 0; i < d->n; i++) {
        if (kvr_jv_eq(d->keys[i], key)) {
            return &d->vals[i];
        }
    }

    return NULL;
}


void
kvr_jdict_set(kvr_jinja_render_t *r, kvr_jdict_t *d, kvr_jv_t key,
    kvr_jv_t val)
{
    uint32_t   cap, h;
    kvr_jv_t  *slot, *keys, *vals;

    slot = kvr_jdict_get(d, key);
    if (slot) {
        *slot = val;
        return;
    }

    if (d->n == d->cap) {
        cap = d->cap ? d->cap * 2 : 4;
        keys = kvr_jr_alloc(r, cap * sizeof(kvr_jv_t));
        vals = kvr_jr_alloc(r, cap * sizeof(kvr_jv_t));
        if (keys == NULL || vals == NULL) {
            return;
        }
        if (d->n) {
            memcpy(keys, d->keys, d->n * sizeof(kvr_jv_t));
            memcpy(vals, d->vals, d->n * sizeof(kvr_jv_t));
        }
        d->keys = keys;
        d->vals = vals;
        d->cap = cap;
    }

    d->keys[d->n] = key;
    d->vals[d->n] = val;
    d->n++;

    if (d->index && d->n * 2 <= d->index_cap) {
        if (key.type == KVR_JV_STR) {
            h = kvr_jhash_str(key.u.s, key.len) & (d->index_cap - 1);
            while (d->index[h]) {
                h = (h + 1) & (d->index_cap - 1);
            }
            d->index[h] = d->n;
        }

    } else if (d->n > 16) {
        for (cap = 64; cap < d->n * 4; cap *= 2) {
            /* a power of two, at most half full */
        }
        if (kvr_jdict_index_build(r, d, cap) != 0) {
            d->index = NULL;
        }
    }
}


/* python semantics */

int
kvr_jv_truthy(kvr_jinja_render_t *r, kvr_jv_t v)
{
    (void) r;

    switch (v.type) {
    case KVR_JV_UNDEF:
    case KVR_JV_NONE:
        return 0;
    case KVR_JV_BOOL:
    case KVR_JV_INT:
        return v.u.i != 0;
    case KVR_JV_FLOAT:
        return v.u.f != 0.0;
    case KVR_JV_STR:
        return v.len != 0;
    case KVR_JV_LIST:
        return (v.flags & KVR_JV_GEN) || v.u.list->n != 0;
    case KVR_JV_DICT:
        return v.u.dict->n != 0;
    default:
        return 1;
    }
}


static int
kvr_jv_is_num(kvr_jv_t v)
{
    return v.type == KVR_JV_BOOL || v.type == KVR_JV_INT
           || v.type == KVR_JV_FLOAT;
}


int
kvr_jv_eq(kvr_jv_t a, kvr_jv_t b)
{
    uint32_t   i;
    kvr_jv_t  *bv;

    if (kvr_jv_is_num(a) && kvr_jv_is_num(b)) {
        if (a.type == KVR_JV_FLOAT || b.type == KVR_JV_FLOAT) {
            return (a.type == KVR_JV_FLOAT ? a.u.f : (double) a.u.i)
                   == (b.type == KVR_JV_FLOAT ? b.u.f : (double) b.u.i);
        }
        return a.u.i == b.u.i;
    }

    if (a.type != b.type) {
        return 0;
    }

    switch (a.type) {
    case KVR_JV_UNDEF:
    case KVR_JV_NONE:
        return 1;
    case KVR_JV_STR:
        return a.len == b.len && memcmp(a.u.s, b.u.s, a.len) == 0;
    case KVR_JV_LIST:
        /* ranges compare as sequences, only with ranges */
        if ((a.flags & KVR_JV_NOPRINT) != (b.flags & KVR_JV_NOPRINT)) {
            return 0;
        }
        if ((a.flags | b.flags) & (KVR_JV_GEN | KVR_JV_VIEW)) {
            return a.u.list == b.u.list && a.flags == b.flags;
        }
        if ((a.flags & KVR_JV_TUPLE) != (b.flags & KVR_JV_TUPLE)
            || a.u.list->n != b.u.list->n)
        {
            return 0;
        }
        for (i = 0; i < a.u.list->n; i++) {
            if (!kvr_jv_eq(a.u.list->items[i], b.u.list->items[i])) {
                return 0;
            }
        }
        return 1;
    case KVR_JV_DICT:
        if (a.u.dict->n != b.u.dict->n) {
            return 0;
        }
        for (i = 0; i < a.u.dict->n; i++) {
            bv = kvr_jdict_get(b.u.dict, a.u.dict->keys[i]);
            if (bv == NULL || !kvr_jv_eq(a.u.dict->vals[i], *bv)) {
                return 0;
            }
        }
        return 1;
    case KVR_JV_FUNC:
        return a.u.i == b.u.i;
    default:
        return a.u.list == b.u.list;
    }
}


/* <0, 0, >0 like python's ordering; types without one raise */
int
kvr_jv_cmp(kvr_jinja_render_t *r, kvr_jv_t a, kvr_jv_t b)
{
    double    x, y;
    size_t    n;
    uint32_t  i;
    int       c;

    if (kvr_jv_is_num(a) && kvr_jv_is_num(b)) {
        if (a.type != KVR_JV_FLOAT && b.type != KVR_JV_FLOAT) {
            return (a.u.i > b.u.i) - (a.u.i < b.u.i);
        }
        x = (a.type == KVR_JV_FLOAT) ? a.u.f : (double) a.u.i;
        y = (b.type == KVR_JV_FLOAT) ? b.u.f : (double) b.u.i;
        if (isnan(x) || isnan(y)) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "nan comparison");
        }
        return (x > y) - (x < y);
    }

    if (a.type == KVR_JV_STR && b.type == KVR_JV_STR) {
        n = a.len < b.len ? a.len : b.len;
        c = memcmp(a.u.s, b.u.s, n);
        if (c) {
            return c;
        }
        return (a.len > b.len) - (a.len < b.len);
    }

    if (a.type == KVR_JV_LIST && b.type == KVR_JV_LIST
        && (a.flags & KVR_JV_TUPLE) == (b.flags & KVR_JV_TUPLE)
        && !((a.flags | b.flags) & KVR_JV_OPAQUE))
    {
        for (i = 0; i < a.u.list->n && i < b.u.list->n; i++) {
            if (!kvr_jv_eq(a.u.list->items[i], b.u.list->items[i])) {
                return kvr_jv_cmp(r, a.u.list->items[i], b.u.list->items[i]);
            }
        }
        return (a.u.list->n > b.u.list->n) - (a.u.list->n < b.u.list->n);
    }

    kvr_jfail(r, KVR_JINJA_ERROR, "'<' not supported between instances "
              "of '%s' and '%s'", kvr_jv_type_name(a), kvr_jv_type_name(b));
}


/* python's hash() accepts it: no lists, dicts or dict views */
int
kvr_jv_hashable(kvr_jv_t v)
{
    uint32_t  i;

    if (v.type == KVR_JV_DICT) {
        return 0;
    }

    if (v.type != KVR_JV_LIST || (v.flags & (KVR_JV_GEN | KVR_JV_NOPRINT))) {
        return 1;
    }

    if (!(v.flags & KVR_JV_TUPLE)) {
        return 0;
    }

    for (i = 0; i < v.u.list->n; i++) {
        if (!kvr_jv_hashable(v.u.list->items[i])) {
            return 0;
        }
    }

    return 1;
}


int
kvr_jv_is_str(kvr_jv_t v, const char *s)
{
    return v.type == KVR_JV_STR && v.len == strlen(s)
           && memcmp(v.u.s, s, v.len) == 0;
}


const char *
kvr_jv_type_name(kvr_jv_t v)
{
    static const char  *names[] = {
        "Undefined", "NoneType", "bool", "int", "float", "str", "list",
        "dict", "Namespace", "function", "method", "Macro", "LoopContext"
    };

    if (v.type == KVR_JV_LIST && (v.flags & KVR_JV_TUPLE)) {
        return "tuple";
    }

    return names[v.type];
}


/* utf-8 */

uint32_t
kvr_jutf8_next(const char *s, size_t len, size_t *pos)
{
    const uint8_t  *p;
    size_t          i, n, k;
    uint32_t        cp, min;

    p = (const uint8_t *) s;
    i = *pos;

    if (p[i] < 0x80) {
        *pos = i + 1;
        return p[i];
    }

    if (p[i] >= 0xc2 && p[i] <= 0xdf) {
        n = 1;
        cp = p[i] & 0x1f;
        min = 0x80;
    } else if (p[i] >= 0xe0 && p[i] <= 0xef) {
        n = 2;
        cp = p[i] & 0x0f;
        min = 0x800;
    } else if (p[i] >= 0xf0 && p[i] <= 0xf4) {
        n = 3;
        cp = p[i] & 0x07;
        min = 0x10000;
    } else {
        *pos = i + 1;
        return (uint32_t) -1;
    }

    for (k = 1; k <= n; k++) {
        if (i + k >= len || (p[i + k] & 0xc0) != 0x80) {
            *pos = i + k;
            return (uint32_t) -1;
        }
        cp = (cp << 6) | (p[i + k] & 0x3f);
    }

    *pos = i + n + 1;

    if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
        return (uint32_t) -1;
    }

    return cp;
}


size_t
kvr_jutf8_count(const char *s, size_t len)
{
    size_t  i, n;

    n = 0;
    for (i = 0; i < len; i++) {
        if (((uint8_t) s[i] & 0xc0) != 0x80) {
            n++;
        }
    }

    return n;
}


/* byte offset of the cp_index-th code point (len when past the end) */
size_t
kvr_jutf8_offset(const char *s, size_t len, size_t cp_index)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if (((uint8_t) s[i] & 0xc0) != 0x80) {
            if (cp_index == 0) {
                return i;
            }
            cp_index--;
        }
    }

    return len;
}


/* python str.isspace(): White_Space plus U+001C..U+001F */
int
kvr_jpy_space(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20)
           || cp == 0x85 || cp == 0xa0 || cp == 0x1680
           || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029
           || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}


int
kvr_jpy_space_at(const char *s, size_t len, size_t pos, size_t *clen)
{
    size_t    next;
    uint32_t  cp;

    next = pos;
    cp = kvr_jutf8_next(s, len, &next);
    *clen = next - pos;

    return cp != (uint32_t) -1 && kvr_jpy_space(cp);
}


/* sinks */

void
kvr_jsink_grow_init(kvr_jsink_t *s, size_t max)
{
    s->buf = NULL;
    s->len = 0;
    s->cap = 0;
    s->max = max;
    s->grow = 1;
}


void
kvr_jsink_put(kvr_jinja_render_t *r, kvr_jsink_t *s, const char *p,
    size_t len)
{
    size_t   cap;
    char    *buf;

    if (len == 0) {
        return;
    }

    if (len > s->max - s->len) {
        kvr_jfail(r, KVR_JINJA_TOO_LONG, "output longer than %zu bytes",
                  s->max);
    }

    if (s->len + len > s->cap) {
        if (!s->grow) {
            kvr_jfail(r, KVR_JINJA_TOO_LONG, "output buffer too small");
        }
        cap = s->cap ? s->cap * 2 : 256;
        while (cap < s->len + len) {
            cap *= 2;
        }
        buf = kvr_jr_alloc(r, cap);
        if (s->len) {
            memcpy(buf, s->buf, s->len);
        }
        s->buf = buf;
        s->cap = cap;
    }

    memcpy(s->buf + s->len, p, len);
    s->len += len;
}


static void
kvr_jsink_puts(kvr_jinja_render_t *r, kvr_jsink_t *s, const char *p)
{
    kvr_jsink_put(r, s, p, strlen(p));
}


/*
 * python float repr: the shortest digits that read back to the same
 * double, scientific notation when the exponent is below -4 or at least
 * 16, else positional with at least one fractional digit.
 */
void
kvr_jfloat_repr(double f, char *buf, size_t size)
{
    char    tmp[40], digits[24], *e, *p;
    int     prec, exp10, ndig, i, n, point;

    if (isnan(f)) {
        snprintf(buf, size, "nan");
        return;
    }

    if (isinf(f)) {
        snprintf(buf, size, f < 0 ? "-inf" : "inf");
        return;
    }

    if (f == 0) {
        snprintf(buf, size, signbit(f) ? "-0.0" : "0.0");
        return;
    }

    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f) {
            break;
        }
    }

    /* tmp: [-]d[.ddd]e[+-]xx */
    p = tmp;
    n = 0;
    if (*p == '-') {
        p++;
    }
    ndig = 0;
    for ( ; *p && *p != 'e'; p++) {
        if (*p >= '0' && *p <= '9') {
            digits[ndig++] = *p;
        }
    }
    e = p;
    exp10 = atoi(e + 1);

    while (ndig > 1 && digits[ndig - 1] == '0') {
        ndig--;
    }
    digits[ndig] = '\0';

    if (f < 0) {
        tmp[0] = '-';
        n = 1;
    }

    point = exp10 + 1;      /* digits before the decimal point */

    if (exp10 < -4 || exp10 >= 16) {
        tmp[n++] = digits[0];
        if (ndig > 1) {
            tmp[n++] = '.';
            for (i = 1; i < ndig; i++) {
                tmp[n++] = digits[i];
            }
        }
        n += snprintf(tmp + n, sizeof(tmp) - n, "e%c%02d",
                      exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);

    } else if (point <= 0) {
        tmp[n++] = '0';
        tmp[n++] = '.';
        for (i = 0; i < -point; i++) {
            tmp[n++] = '0';
        }
        for (i = 0; i < ndig; i++) {
            tmp[n++] = digits[i];
        }

    } else {
        for (i = 0; i < point; i++) {
            tmp[n++] = (i < ndig) ? digits[i] : '0';
        }
        tmp[n++] = '.';
        if (ndig > point) {
            for (i = point; i < ndig; i++) {
                tmp[n++] = digits[i];
            }
        } else {
            tmp[n++] = '0';
        }
    }

    tmp[n] = '\0';
    snprintf(buf, size, "%s", tmp);
}


static void
kvr_jwrite_int(kvr_jinja_render_t *r, kvr_jsink_t *s, int64_t i)
{
    char  buf[32];

    snprintf(buf, sizeof(buf), "%lld", (long long) i);
    kvr_jsink_puts(r, s, buf);
}


/*
 * whether python's str.isprintable() is surely true for a code point of
 * a repr'ed string; others make the render fail, not guess
 */
static int
kvr_jpy_printable(uint32_t cp)
{
    if (cp < 0x80) {
        return cp >= 0x20 && cp < 0x7f;
    }

    return (cp >= 0xa1 && cp <= 0x377 && cp != 0xad)
           || (cp >= 0x391 && cp <= 0x3a1) || (cp >= 0x3a3 && cp <= 0x52f)
           || (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3041 && cp <= 0x3096)
           || (cp >= 0x30a0 && cp <= 0x30ff) || (cp >= 0xac00 && cp <= 0xd7a3)
           || (cp >= 0x2010 && cp <= 0x2027) || (cp >= 0x2030 && cp <= 0x205e)
           || (cp >= 0x3001 && cp <= 0x303f) || (cp >= 0xff01 && cp <= 0xffbe)
           || (cp >= 0x1f300 && cp <= 0x1f64f)
           || (cp >= 0x1f1e6 && cp <= 0x1f1ff)
           || (cp >= 0x621 && cp <= 0x64a) || (cp >= 0x5d0 && cp <= 0x5ea)
           || (cp >= 0x905 && cp <= 0x939) || (cp >= 0xe01 && cp <= 0xe30);
}


/* code points python surely escapes in repr() (Cc, Cf, Co, Cn, Z*) */
static int
kvr_jpy_unprintable(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0xa0) || cp == 0xad || cp == 0x1680
           || (cp >= 0x2000 && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202f)
           || (cp >= 0x205f && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x206f)
           || cp == 0x3000 || cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb)
           || (cp >= 0xe000 && cp <= 0xf8ff) || cp == 0xfffe || cp == 0xffff
           || cp >= 0xf0000;
}


static void
kvr_jwrite_repr_str(kvr_jinja_render_t *r, kvr_jsink_t *s, kvr_jv_t v)
{
    char        quote, esc[12];
    size_t      i, start;
    uint32_t    cp;

    quote = (memchr(v.u.s, '\'', v.len) && !memchr(v.u.s, '"', v.len))
            ? '"' : '\'';

    kvr_jsink_put(r, s, &quote, 1);

    for (i = 0; i < v.len; ) {
        start = i;
        cp = kvr_jutf8_next(v.u.s, v.len, &i);

        if (cp == (uint32_t) quote || cp == '\\') {
            esc[0] = '\\';
            esc[1] = (char) cp;
            kvr_jsink_put(r, s, esc, 2);
        } else if (cp == '\n') {
            kvr_jsink_puts(r, s, "\\n");
        } else if (cp == '\r') {
            kvr_jsink_puts(r, s, "\\r");
        } else if (cp == '\t') {
            kvr_jsink_puts(r, s, "\\t");
        } else if (cp < 0x20 || cp == 0x7f) {
            snprintf(esc, sizeof(esc), "\\x%02x", cp);
            kvr_jsink_puts(r, s, esc);
        } else if (kvr_jpy_printable(cp)) {
            kvr_jsink_put(r, s, v.u.s + start, i - start);
        } else if (kvr_jpy_unprintable(cp)) {
            snprintf(esc, sizeof(esc), cp < 0x100 ? "\\x%02x"
                     : (cp < 0x10000 ? "\\u%04x" : "\\U%08x"), cp);
            kvr_jsink_puts(r, s, esc);
        } else {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "repr of U+%04X", cp);
        }
    }

    kvr_jsink_put(r, s, &quote, 1);
}


void
kvr_jv_write_repr(kvr_jinja_render_t *r, kvr_jsink_t *s, kvr_jv_t v)
{
    uint32_t  i;
    int       tuple;

    switch (v.type) {

    case KVR_JV_STR:
        kvr_jwrite_repr_str(r, s, v);
        return;

    case KVR_JV_LIST:
        if (v.flags & KVR_JV_OPAQUE) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "printing a generator, "
                      "range or dict view");
        }
        tuple = v.flags & KVR_JV_TUPLE;
        kvr_jsink_puts(r, s, tuple ? "(" : "[");
        for (i = 0; i < v.u.list->n; i++) {
            if (i) {
                kvr_jsink_puts(r, s, ", ");
            }
            kvr_jv_write_repr(r, s, v.u.list->items[i]);
        }
        if (tuple && v.u.list->n == 1) {
            kvr_jsink_puts(r, s, ",");
        }
        kvr_jsink_puts(r, s, tuple ? ")" : "]");
        return;

    case KVR_JV_DICT:
        kvr_jsink_puts(r, s, "{");
        for (i = 0; i < v.u.dict->n; i++) {
            if (i) {
                kvr_jsink_puts(r, s, ", ");
            }
            kvr_jv_write_repr(r, s, v.u.dict->keys[i]);
            kvr_jsink_puts(r, s, ": ");
            kvr_jv_write_repr(r, s, v.u.dict->vals[i]);
        }
        kvr_jsink_puts(r, s, "}");
        return;

    case KVR_JV_UNDEF:
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "repr of an undefined value");

    default:
        kvr_jv_write_str(r, s, v);
    }
}


void
kvr_jv_write_str(kvr_jinja_render_t *r, kvr_jsink_t *s, kvr_jv_t v)
{
    char  buf[40];

    switch (v.type) {
    case KVR_JV_UNDEF:
        return;
    case KVR_JV_NONE:
        kvr_jsink_puts(r, s, "None");
        return;
    case KVR_JV_BOOL:
        kvr_jsink_puts(r, s, v.u.i ? "True" : "False");
        return;
    case KVR_JV_INT:
        kvr_jwrite_int(r, s, v.u.i);
        return;
    case KVR_JV_FLOAT:
        kvr_jfloat_repr(v.u.f, buf, sizeof(buf));
        kvr_jsink_puts(r, s, buf);
        return;
    case KVR_JV_STR:
        kvr_jsink_put(r, s, v.u.s, v.len);
        return;
    case KVR_JV_LIST:
    case KVR_JV_DICT:
        kvr_jv_write_repr(r, s, v);
        return;
    default:
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "printing a %s object",
                  kvr_jv_type_name(v));
    }
}


kvr_jv_t
kvr_jv_to_string(kvr_jinja_render_t *r, kvr_jv_t v)
{
    kvr_jsink_t  s;

    if (v.type == KVR_JV_STR) {
        return v;
    }

    kvr_jsink_grow_init(&s, r->arena.max);
    kvr_jv_write_str(r, &s, v);

    return kvr_jv_str(s.buf ? s.buf : "", s.len);
}


static void
kvr_jwrite_json_str(kvr_jinja_render_t *r, kvr_jsink_t *s, const char *p,
    size_t len)
{
    char     esc[8];
    size_t   i, run;
    uint8_t  c;

    kvr_jsink_puts(r, s, "\"");

    run = 0;
    for (i = 0; i < len; i++) {
        c = (uint8_t) p[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }

        kvr_jsink_put(r, s, p + run, i - run);
        run = i + 1;

        switch (c) {
        case '"': kvr_jsink_puts(r, s, "\\\""); break;
        case '\\': kvr_jsink_puts(r, s, "\\\\"); break;
        case '\n': kvr_jsink_puts(r, s, "\\n"); break;
        case '\r': kvr_jsink_puts(r, s, "\\r"); break;
        case '\t': kvr_jsink_puts(r, s, "\\t"); break;
        case '\b': kvr_jsink_puts(r, s, "\\b"); break;
        case '\f': kvr_jsink_puts(r, s, "\\f"); break;
        default:
            snprintf(esc, sizeof(esc), "\\u%04x", c);
            kvr_jsink_puts(r, s, esc);
        }
    }

    kvr_jsink_put(r, s, p + run, len - run);
    kvr_jsink_puts(r, s, "\"");
}


static void
kvr_jwrite_newline(kvr_jinja_render_t *r, kvr_jsink_t *s, int indent,
    int level)
{
    int  i;

    kvr_jsink_puts(r, s, "\n");
    for (i = 0; i < indent * level; i++) {
        kvr_jsink_puts(r, s, " ");
    }
}


/* how tojson writes: python's json.dumps arguments */
typedef struct {
    int                  indent;    /* -1: all on one line */
    const char          *item_sep;
    const char          *key_sep;
    int                  sort_keys;
} kvr_jjson_fmt_t;


static void kvr_jwrite_json_list(kvr_jinja_render_t *r, kvr_jsink_t *s,
    kvr_jv_t v, const kvr_jjson_fmt_t *fmt, int level);
static void kvr_jwrite_json_dict(kvr_jinja_render_t *r, kvr_jsink_t *s,
    kvr_jdict_t *d, const kvr_jjson_fmt_t *fmt, int level);
static uint32_t *kvr_jjson_order(kvr_jinja_render_t *r, kvr_jdict_t *d,
    int sort_keys);
static void kvr_jwrite_json_key(kvr_jinja_render_t *r, kvr_jsink_t *s,
    kvr_jv_t k, int level);


/* json.dumps(v, ensure_ascii=False, indent, separators, sort_keys) */
void
kvr_jv_write_json(kvr_jinja_render_t *r, kvr_jsink_t *s, kvr_jv_t v,
    int indent, const char *item_sep, const char *key_sep, int sort_keys,
    int level)
{
    char              buf[40];
    kvr_jjson_fmt_t   fmt;

    if (level > 200) {
        kvr_jfail(r, KVR_JINJA_LIMIT, "tojson nested too deep");
    }

    switch (v.type) {

    case KVR_JV_NONE:
        kvr_jsink_puts(r, s, "null");
        return;

    case KVR_JV_BOOL:
        kvr_jsink_puts(r, s, v.u.i ? "true" : "false");
        return;

    case KVR_JV_INT:
        kvr_jwrite_int(r, s, v.u.i);
        return;

    case KVR_JV_FLOAT:
        if (isnan(v.u.f)) {
            kvr_jsink_puts(r, s, "NaN");
        } else if (isinf(v.u.f)) {
            kvr_jsink_puts(r, s, v.u.f < 0 ? "-Infinity" : "Infinity");
        } else {
            kvr_jfloat_repr(v.u.f, buf, sizeof(buf));
            kvr_jsink_puts(r, s, buf);
        }
        return;

    case KVR_JV_STR:
        kvr_jwrite_json_str(r, s, v.u.s, v.len);
        return;

    case KVR_JV_LIST:
    case KVR_JV_DICT:
        fmt.indent = indent;
        fmt.item_sep = item_sep;
        fmt.key_sep = key_sep;
        fmt.sort_keys = sort_keys;

        if (v.type == KVR_JV_LIST) {
            kvr_jwrite_json_list(r, s, v, &fmt, level);

        } else {
            kvr_jwrite_json_dict(r, s, v.u.dict, &fmt, level);
        }

        return;

    case KVR_JV_UNDEF:
        kvr_jfail(r, KVR_JINJA_ERROR, "Object of type Undefined is not "
                  "JSON serializable");

    default:
        kvr_jfail(r, KVR_JINJA_ERROR, "Object of type %s is not JSON "
                  "serializable", kvr_jv_type_name(v));
    }
}


static void
kvr_jwrite_json_list(kvr_jinja_render_t *r, kvr_jsink_t *s, kvr_jv_t v,
    const kvr_jjson_fmt_t *fmt, int level)
{
    uint32_t  i, n;

    if (v.flags & KVR_JV_OPAQUE) {
        kvr_jfail(r, KVR_JINJA_ERROR, "Object of type generator is not "
                  "JSON serializable");
    }

    n = v.u.list->n;

    if (n == 0) {
        kvr_jsink_puts(r, s, "[]");
        return;
    }

    kvr_jsink_puts(r, s, "[");

    for (i = 0; i < n; i++) {
        if (i) {
            kvr_jsink_puts(r, s, fmt->item_sep);
        }
        if (fmt->indent >= 0) {
            kvr_jwrite_newline(r, s, fmt->indent, level + 1);
        }
        kvr_jv_write_json(r, s, v.u.list->items[i], fmt->indent,
                          fmt->item_sep, fmt->key_sep, fmt->sort_keys,
                          level + 1);
    }

    if (fmt->indent >= 0) {
        kvr_jwrite_newline(r, s, fmt->indent, level);
    }

    kvr_jsink_puts(r, s, "]");
}


static void
kvr_jwrite_json_dict(kvr_jinja_render_t *r, kvr_jsink_t *s, kvr_jdict_t *d,
    const kvr_jjson_fmt_t *fmt, int level)
{
    uint32_t   i, n, *order;

    n = d->n;

    if (n == 0) {
        kvr_jsink_puts(r, s, "{}");
        return;
    }

    order = kvr_jjson_order(r, d, fmt->sort_keys);

    kvr_jsink_puts(r, s, "{");

    for (i = 0; i < n; i++) {
        if (i) {
            kvr_jsink_puts(r, s, fmt->item_sep);
        }
        if (fmt->indent >= 0) {
            kvr_jwrite_newline(r, s, fmt->indent, level + 1);
        }
        kvr_jwrite_json_key(r, s, d->keys[order[i]], level);
        kvr_jsink_puts(r, s, fmt->key_sep);
        kvr_jv_write_json(r, s, d->vals[order[i]], fmt->indent,
                          fmt->item_sep, fmt->key_sep, fmt->sort_keys,
                          level + 1);
    }

    if (fmt->indent >= 0) {
        kvr_jwrite_newline(r, s, fmt->indent, level);
    }

    kvr_jsink_puts(r, s, "}");
}


/* the order a dict's keys are written in: as inserted, or sorted */
static uint32_t *
kvr_jjson_order(kvr_jinja_render_t *r, kvr_jdict_t *d, int sort_keys)
{
    uint32_t   i, j, n, t, *order;

    n = d->n;
    order = kvr_jr_alloc(r, n * sizeof(uint32_t));

    for (i = 0; i < n; i++) {
        order[i] = i;
        if (d->keys[i].type != KVR_JV_STR && sort_keys) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED,
                      "tojson sort_keys with non-string keys");
        }
    }

    if (!sort_keys) {
        return order;
    }

    /* insertion sort is enough for the sizes allowed here */
    if (n > 4096) {
        kvr_jfail(r, KVR_JINJA_LIMIT, "tojson sort_keys: dict too large");
    }

    for (i = 1; i < n; i++) {
        t = order[i];
        for (j = i; j > 0 && kvr_jv_cmp(r, d->keys[order[j - 1]],
                                        d->keys[t]) > 0; j--)
        {
            order[j] = order[j - 1];
        }
        order[j] = t;
    }

    return order;
}


/* a key as python's json writes it: strs, and scalars quoted */
static void
kvr_jwrite_json_key(kvr_jinja_render_t *r, kvr_jsink_t *s, kvr_jv_t k,
    int level)
{
    switch (k.type) {
    case KVR_JV_STR:
        kvr_jwrite_json_str(r, s, k.u.s, k.len);
        break;
    case KVR_JV_NONE:
        kvr_jsink_puts(r, s, "\"null\"");
        break;
    case KVR_JV_BOOL:
    case KVR_JV_INT:
    case KVR_JV_FLOAT:
        kvr_jsink_puts(r, s, "\"");
        kvr_jv_write_json(r, s, k, -1, "", "", 0, level + 1);
        kvr_jsink_puts(r, s, "\"");
        break;
    default:
        kvr_jfail(r, KVR_JINJA_ERROR, "keys must be str, int, float, bool "
                  "or None, not %s", kvr_jv_type_name(k));
    }
}


/* the render's work bound: every loop step and call counts */
void
kvr_jstep(kvr_jinja_render_t *r, uint64_t n)
{
    r->steps += n;
    if (r->steps > r->limits.max_steps) {
        kvr_jfail(r, KVR_JINJA_LIMIT, "more than %llu steps",
                  (unsigned long long) r->limits.max_steps);
    }
}


/* iteration: a list view of what python would iterate over */
kvr_jlist_t *
kvr_jiter(kvr_jinja_render_t *r, kvr_jv_t v)
{
    kvr_jlist_t  *l;
    size_t        i, start;
    uint32_t      k;

    switch (v.type) {

    case KVR_JV_LIST:
        if (v.flags & KVR_JV_GEN) {
            if (v.u.list->consumed) {
                kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "a generator iterated "
                          "twice");
            }
            v.u.list->consumed = 1;
        }
        return v.u.list;

    case KVR_JV_UNDEF:
        return kvr_jlist_new(r, 0);

    case KVR_JV_DICT:
        l = kvr_jlist_new(r, v.u.dict->n);
        for (k = 0; k < v.u.dict->n; k++) {
            l->items[l->n++] = v.u.dict->keys[k];
        }
        return l;

    case KVR_JV_STR:
        l = kvr_jlist_new(r, kvr_jutf8_count(v.u.s, v.len));
        for (i = 0; i < v.len; ) {
            start = i;
            kvr_jutf8_next(v.u.s, v.len, &i);
            l->items[l->n++] = kvr_jv_str(v.u.s + start, i - start);
        }
        return l;

    case KVR_JV_LOOP:
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "iterating a loop object");

    default:
        kvr_jfail(r, KVR_JINJA_ERROR, "'%s' object is not iterable",
                  kvr_jv_type_name(v));
    }
}
