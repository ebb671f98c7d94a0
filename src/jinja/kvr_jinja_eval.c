/*
 * Copyright (C) kvroute developers
 *
 * The Jinja subset's evaluator: statements, expressions, scopes (a for
 * body gets a fresh scope per iteration, so a set inside it does not
 * leak out, as in Jinja2), attribute and item lookup the way Jinja2's
 * sandbox does it, python operators, macros, and the render entry
 * point with its limits.
 */

#define _GNU_SOURCE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvr_jinja_int.h"


#define KVR_JEXEC_NORMAL    0
#define KVR_JEXEC_BREAK     1
#define KVR_JEXEC_CONTINUE  2


static int kvr_jexec(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *n);


void
kvr_jstep(kvr_jinja_render_t *r, uint64_t n)
{
    r->steps += n;
    if (r->steps > r->limits.max_steps) {
        kvr_jfail(r, KVR_JINJA_LIMIT, "more than %llu steps",
                  (unsigned long long) r->limits.max_steps);
    }
}


/* scopes */

static kvr_jscope_t *
kvr_jscope_new(kvr_jinja_render_t *r, kvr_jscope_t *parent)
{
    kvr_jscope_t  *sc;

    sc = kvr_jr_alloc(r, sizeof(kvr_jscope_t));
    if (sc == NULL) {
        return NULL;
    }

    memset(sc, 0, sizeof(*sc));
    sc->parent = parent;

    return sc;
}


static kvr_jv_t *
kvr_jscope_find_local(kvr_jscope_t *sc, const char *name, size_t len)
{
    uint32_t  i;

    for (i = 0; i < sc->n; i++) {
        if (sc->lens[i] == len && memcmp(sc->names[i], name, len) == 0) {
            return &sc->vals[i];
        }
    }

    return NULL;
}


static void
kvr_jscope_set(kvr_jinja_render_t *r, kvr_jscope_t *sc, const char *name,
    size_t len, kvr_jv_t v)
{
    uint32_t      cap;
    kvr_jv_t     *slot, *vals;
    const char  **names;
    uint32_t     *lens;

    slot = kvr_jscope_find_local(sc, name, len);
    if (slot) {
        *slot = v;
        return;
    }

    if (sc->n == sc->cap) {
        cap = sc->cap ? sc->cap * 2 : 8;
        names = kvr_jr_alloc(r, cap * sizeof(char *));
        lens = kvr_jr_alloc(r, cap * sizeof(uint32_t));
        vals = kvr_jr_alloc(r, cap * sizeof(kvr_jv_t));
        if (names == NULL || lens == NULL || vals == NULL) {
            return;
        }
        if (sc->n) {
            memcpy(names, sc->names, sc->n * sizeof(char *));
            memcpy(lens, sc->lens, sc->n * sizeof(uint32_t));
            memcpy(vals, sc->vals, sc->n * sizeof(kvr_jv_t));
        }
        sc->names = names;
        sc->lens = lens;
        sc->vals = vals;
        sc->cap = cap;
    }

    sc->names[sc->n] = name;
    sc->lens[sc->n] = (uint32_t) len;
    sc->vals[sc->n] = v;
    sc->n++;
}


static kvr_jv_t
kvr_jscope_get(kvr_jinja_render_t *r, kvr_jscope_t *sc, const char *name,
    size_t len)
{
    int        id;
    kvr_jv_t  *v, fn;

    for ( ; sc; sc = sc->parent) {
        v = kvr_jscope_find_local(sc, name, len);
        if (v) {
            return *v;
        }
    }

    (void) r;

    id = kvr_jglobal_id(name, len);
    if (id >= 0) {
        fn = kvr_jv_undef;
        fn.type = KVR_JV_FUNC;
        fn.u.i = id;
        return fn;
    }

    return kvr_jv_undef_named(name, len);
}


/* lookups */

static int64_t
kvr_jindex(kvr_jinja_render_t *r, kvr_jv_t v, int *ok)
{
    (void) r;

    *ok = (v.type == KVR_JV_INT || v.type == KVR_JV_BOOL);
    return *ok ? v.u.i : 0;
}


static kvr_jv_t
kvr_jloop_attr(kvr_jinja_render_t *r, kvr_jloop_t *lp, const char *name,
    size_t len)
{
    uint32_t  n;
    kvr_jv_t  m;

    n = lp->items->n;

#define KVR_JIS(s)  (len == sizeof(s) - 1 && memcmp(name, s, len) == 0)

    if (KVR_JIS("index0")) {
        return kvr_jv_int(lp->index0);
    }
    if (KVR_JIS("index")) {
        return kvr_jv_int(lp->index0 + 1);
    }
    if (KVR_JIS("revindex")) {
        return kvr_jv_int(n - lp->index0);
    }
    if (KVR_JIS("revindex0")) {
        return kvr_jv_int(n - lp->index0 - 1);
    }
    if (KVR_JIS("first")) {
        return kvr_jv_bool(lp->index0 == 0);
    }
    if (KVR_JIS("last")) {
        return kvr_jv_bool(lp->index0 + 1 == n);
    }
    if (KVR_JIS("length")) {
        return kvr_jv_int(n);
    }
    if (KVR_JIS("depth")) {
        return kvr_jv_int(1);
    }
    if (KVR_JIS("depth0")) {
        return kvr_jv_int(0);
    }
    if (KVR_JIS("previtem")) {
        return lp->index0 ? lp->items->items[lp->index0 - 1]
                          : kvr_jv_undef_named("previtem", 8);
    }
    if (KVR_JIS("nextitem")) {
        return (lp->index0 + 1 < n) ? lp->items->items[lp->index0 + 1]
                                    : kvr_jv_undef_named("nextitem", 8);
    }
    if (KVR_JIS("cycle") || KVR_JIS("changed")) {
        m.type = KVR_JV_METHOD;
        m.flags = 0;
        m.len = 0;
        m.u.method = kvr_jr_alloc(r, sizeof(kvr_jmethod_t));
        m.u.method->self.type = KVR_JV_LOOP;
        m.u.method->self.u.loop = lp;
        m.u.method->id = KVR_JIS("cycle") ? -1 : -2;
        return m;
    }

#undef KVR_JIS

    return kvr_jv_undef_named(name, len);
}


kvr_jv_t
kvr_jgetattr(kvr_jinja_render_t *r, kvr_jv_t obj, const char *name,
    size_t len)
{
    int        found;
    kvr_jv_t   m, *v;

    switch (obj.type) {

    case KVR_JV_UNDEF:
        kvr_jfail(r, KVR_JINJA_ERROR, "'%.*s' is undefined",
                  (int) obj.len, obj.u.s ? obj.u.s : "value");

    case KVR_JV_NS:
        v = kvr_jdict_get_str(obj.u.dict, name, len);
        return v ? *v : kvr_jv_undef_named(name, len);

    case KVR_JV_LOOP:
        return kvr_jloop_attr(r, obj.u.loop, name, len);

    case KVR_JV_DICT:
    case KVR_JV_STR:
    case KVR_JV_LIST:
        /* python attributes (methods) first, then items */
        m = kvr_jmethod_lookup(r, obj, name, len, &found);
        if (found) {
            return m;
        }
        if (obj.type == KVR_JV_DICT) {
            v = kvr_jdict_get_str(obj.u.dict, name, len);
            if (v) {
                return *v;
            }
        }
        return kvr_jv_undef_named(name, len);

    default:
        m = kvr_jmethod_lookup(r, obj, name, len, &found);
        if (found) {
            return m;
        }
        return kvr_jv_undef_named(name, len);
    }
}


kvr_jv_t
kvr_jgetitem(kvr_jinja_render_t *r, kvr_jv_t obj, kvr_jv_t key)
{
    int64_t    i, n;
    int        ok;
    size_t     off, end;
    kvr_jv_t  *v;

    switch (obj.type) {

    case KVR_JV_UNDEF:
        kvr_jfail(r, KVR_JINJA_ERROR, "'%.*s' is undefined",
                  (int) obj.len, obj.u.s ? obj.u.s : "value");

    case KVR_JV_DICT:
        v = kvr_jdict_get(obj.u.dict, key);
        if (v) {
            return *v;
        }
        break;

    case KVR_JV_LIST:
        i = kvr_jindex(r, key, &ok);
        if (!ok || (obj.flags & (KVR_JV_GEN | KVR_JV_VIEW))) {
            break;
        }
        n = obj.u.list->n;
        if (i < 0) {
            i += n;
        }
        if (i >= 0 && i < n) {
            return obj.u.list->items[i];
        }
        return kvr_jv_undef;

    case KVR_JV_STR:
        i = kvr_jindex(r, key, &ok);
        if (!ok) {
            break;
        }
        n = (int64_t) kvr_jutf8_count(obj.u.s, obj.len);
        if (i < 0) {
            i += n;
        }
        if (i >= 0 && i < n) {
            off = kvr_jutf8_offset(obj.u.s, obj.len, (size_t) i);
            end = off;
            kvr_jutf8_next(obj.u.s, obj.len, &end);
            return kvr_jv_str(obj.u.s + off, end - off);
        }
        return kvr_jv_undef;

    default:
        break;
    }

    if (key.type == KVR_JV_STR) {
        return kvr_jgetattr(r, obj, key.u.s, key.len);
    }

    return kvr_jv_undef;
}


/* python slice indices, as slice.indices(n) computes them */
static void
kvr_jslice_bounds(kvr_jinja_render_t *r, kvr_jv_t *part, int64_t n,
    int64_t *start, int64_t *stop, int64_t *step)
{
    int      ok, k;
    int64_t  v[3];

    for (k = 0; k < 3; k++) {
        if (part[k].type == KVR_JV_NONE || part[k].type == KVR_JV_UNDEF) {
            v[k] = INT64_MIN;
            continue;
        }
        v[k] = kvr_jindex(r, part[k], &ok);
        if (!ok) {
            kvr_jfail(r, KVR_JINJA_ERROR, "slice indices must be integers "
                      "or None");
        }
    }

    *step = (v[2] == INT64_MIN) ? 1 : v[2];
    if (*step == 0) {
        kvr_jfail(r, KVR_JINJA_ERROR, "slice step cannot be zero");
    }

    if (v[0] == INT64_MIN) {
        *start = (*step < 0) ? n - 1 : 0;
    } else {
        *start = v[0] < 0 ? v[0] + n : v[0];
        if (*start < 0) {
            *start = (*step < 0) ? -1 : 0;
        } else if (*start >= n) {
            *start = (*step < 0) ? n - 1 : n;
        }
    }

    if (v[1] == INT64_MIN) {
        *stop = (*step < 0) ? -1 : n;
    } else {
        *stop = v[1] < 0 ? v[1] + n : v[1];
        if (*stop < 0) {
            *stop = (*step < 0) ? -1 : 0;
        } else if (*stop >= n) {
            *stop = (*step < 0) ? n - 1 : n;
        }
    }
}


static kvr_jv_t
kvr_jslice(kvr_jinja_render_t *r, kvr_jv_t obj, kvr_jv_t *part)
{
    int64_t       n, start, stop, step, i, count;
    size_t       *offs, len, k;
    char         *buf;
    kvr_jlist_t  *l;
    kvr_jv_t      out;

    /*
     * jinja subscripts slices directly (TypeError on a bad type), except
     * when its optimizer folds constants (undefined then): refused
     */
    if (obj.type == KVR_JV_LIST && (obj.flags & (KVR_JV_GEN | KVR_JV_VIEW))) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "slice of a generator");
    } else if (obj.type == KVR_JV_LIST) {
        n = obj.u.list->n;
    } else if (obj.type == KVR_JV_STR) {
        n = (int64_t) kvr_jutf8_count(obj.u.s, obj.len);
    } else if (obj.type == KVR_JV_UNDEF) {
        kvr_jfail(r, KVR_JINJA_ERROR, "'%.*s' is undefined",
                  (int) obj.len, obj.u.s ? obj.u.s : "value");
    } else {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "slice of a %s",
                  kvr_jv_type_name(obj));
    }

    kvr_jslice_bounds(r, part, n, &start, &stop, &step);

    count = 0;
    if (step > 0 && start < stop) {
        count = (stop - start + step - 1) / step;
    } else if (step < 0 && start > stop) {
        count = (start - stop + (-step) - 1) / (-step);
    }

    kvr_jstep(r, (uint64_t) count);

    if (obj.type == KVR_JV_LIST) {
        l = kvr_jlist_new(r, (size_t) count);
        for (i = start; l->n < count; i += step) {
            l->items[l->n++] = obj.u.list->items[i];
        }
        out = kvr_jv_list(l);
        out.flags = obj.flags;
        return out;
    }

    if (step == 1) {
        offs = NULL;
        k = kvr_jutf8_offset(obj.u.s, obj.len, (size_t) start);
        len = kvr_jutf8_offset(obj.u.s, obj.len, (size_t) stop);
        return kvr_jv_str(obj.u.s + k, count ? len - k : 0);
    }

    /* code point offsets, then pick */
    offs = kvr_jr_alloc(r, (n + 1) * sizeof(size_t));
    for (k = 0, i = 0; i < n; i++) {
        offs[i] = k;
        kvr_jutf8_next(obj.u.s, obj.len, &k);
    }
    offs[n] = obj.len;

    buf = kvr_jr_alloc(r, obj.len + 1);
    len = 0;
    for (i = start; count > 0; i += step, count--) {
        memcpy(buf + len, obj.u.s + offs[i], offs[i + 1] - offs[i]);
        len += offs[i + 1] - offs[i];
    }

    return kvr_jv_str(buf, len);
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


/* operators */

static void
kvr_jnum_check(kvr_jinja_render_t *r, kvr_jv_t a, kvr_jv_t b, const char *op)
{
    if (a.type == KVR_JV_UNDEF || b.type == KVR_JV_UNDEF) {
        kvr_jfail(r, KVR_JINJA_ERROR, "'%.*s' is undefined",
                  (int) (a.type == KVR_JV_UNDEF ? a.len : b.len),
                  a.type == KVR_JV_UNDEF ? (a.u.s ? a.u.s : "")
                                         : (b.u.s ? b.u.s : ""));
    }

    kvr_jfail(r, KVR_JINJA_ERROR, "unsupported operand type(s) for %s: "
              "'%s' and '%s'", op, kvr_jv_type_name(a), kvr_jv_type_name(b));
}


static int
kvr_jis_num(kvr_jv_t v)
{
    return v.type == KVR_JV_INT || v.type == KVR_JV_BOOL
           || v.type == KVR_JV_FLOAT;
}


static double
kvr_jas_double(kvr_jv_t v)
{
    return v.type == KVR_JV_FLOAT ? v.u.f : (double) v.u.i;
}


static kvr_jv_t
kvr_jrepeat(kvr_jinja_render_t *r, kvr_jv_t seq, int64_t times)
{
    int64_t       i;
    char         *buf;
    kvr_jlist_t  *l;
    kvr_jv_t      out;

    if (times < 0) {
        times = 0;
    }

    if (seq.type == KVR_JV_STR) {
        if (seq.len && (uint64_t) times > r->arena.max / seq.len) {
            kvr_jfail(r, KVR_JINJA_LIMIT, "string repetition too large");
        }
        buf = kvr_jr_alloc(r, seq.len * times + 1);
        for (i = 0; i < times; i++) {
            memcpy(buf + i * seq.len, seq.u.s, seq.len);
        }
        return kvr_jv_str(buf, seq.len * times);
    }

    if (seq.u.list->n && (uint64_t) times > r->arena.max / seq.u.list->n) {
        kvr_jfail(r, KVR_JINJA_LIMIT, "list repetition too large");
    }

    l = kvr_jlist_new(r, (size_t) seq.u.list->n * times);
    for (i = 0; i < times; i++) {
        memcpy(l->items + l->n, seq.u.list->items,
               seq.u.list->n * sizeof(kvr_jv_t));
        l->n += seq.u.list->n;
    }

    out = kvr_jv_list(l);
    out.flags = seq.flags;
    return out;
}


static kvr_jv_t
kvr_jbinop(kvr_jinja_render_t *r, int op, kvr_jv_t a, kvr_jv_t b)
{
    int64_t       x, y, q, m;
    double        fx, fy, fq;
    char         *buf;
    kvr_jlist_t  *l;
    kvr_jv_t      sa, sb, out;
    static const char  *names[] = {
        "", "+", "-", "*", "/", "//", "%", "**"
    };

    /* ranges, generators and views do not add or repeat */
    if (((a.type == KVR_JV_LIST && (a.flags & KVR_JV_OPAQUE))
         || (b.type == KVR_JV_LIST && (b.flags & KVR_JV_OPAQUE)))
        && op != KVR_JOP_CONCAT
        && !(op == KVR_JOP_MOD && a.type == KVR_JV_STR))
    {
        kvr_jfail(r, KVR_JINJA_ERROR, "unsupported operand type(s)");
    }

    if (op == KVR_JOP_CONCAT) {
        sa = kvr_jv_to_string(r, a);
        sb = kvr_jv_to_string(r, b);
        buf = kvr_jr_alloc(r, (size_t) sa.len + sb.len + 1);
        memcpy(buf, sa.u.s, sa.len);
        memcpy(buf + sa.len, sb.u.s, sb.len);
        return kvr_jv_str(buf, (size_t) sa.len + sb.len);
    }

    if (op == KVR_JOP_ADD && a.type == KVR_JV_STR && b.type == KVR_JV_STR) {
        if ((size_t) a.len + b.len > UINT32_MAX - 1) {
            kvr_jfail(r, KVR_JINJA_LIMIT, "string too long");
        }
        buf = kvr_jr_alloc(r, (size_t) a.len + b.len + 1);
        memcpy(buf, a.u.s, a.len);
        memcpy(buf + a.len, b.u.s, b.len);
        return kvr_jv_str(buf, (size_t) a.len + b.len);
    }

    if (op == KVR_JOP_ADD && a.type == KVR_JV_LIST && b.type == KVR_JV_LIST
        && (a.flags & KVR_JV_TUPLE) == (b.flags & KVR_JV_TUPLE))
    {
        l = kvr_jlist_new(r, (size_t) a.u.list->n + b.u.list->n);
        memcpy(l->items, a.u.list->items, a.u.list->n * sizeof(kvr_jv_t));
        memcpy(l->items + a.u.list->n, b.u.list->items,
               b.u.list->n * sizeof(kvr_jv_t));
        l->n = a.u.list->n + b.u.list->n;
        out = kvr_jv_list(l);
        out.flags = a.flags;
        return out;
    }

    if (op == KVR_JOP_MUL) {
        if ((a.type == KVR_JV_STR || a.type == KVR_JV_LIST)
            && (b.type == KVR_JV_INT || b.type == KVR_JV_BOOL))
        {
            return kvr_jrepeat(r, a, b.u.i);
        }
        if ((b.type == KVR_JV_STR || b.type == KVR_JV_LIST)
            && (a.type == KVR_JV_INT || a.type == KVR_JV_BOOL))
        {
            return kvr_jrepeat(r, b, a.u.i);
        }
    }

    if (op == KVR_JOP_MOD && a.type == KVR_JV_STR) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "printf-style string "
                  "formatting is not supported");
    }

    if (!kvr_jis_num(a) || !kvr_jis_num(b)) {
        kvr_jnum_check(r, a, b, names[op]);
    }

    if (a.type != KVR_JV_FLOAT && b.type != KVR_JV_FLOAT
        && op != KVR_JOP_DIV)
    {
        x = a.u.i;
        y = b.u.i;

        switch (op) {
        case KVR_JOP_ADD:
            if (__builtin_add_overflow(x, y, &q)) {
                goto overflow;
            }
            return kvr_jv_int(q);
        case KVR_JOP_SUB:
            if (__builtin_sub_overflow(x, y, &q)) {
                goto overflow;
            }
            return kvr_jv_int(q);
        case KVR_JOP_MUL:
            if (__builtin_mul_overflow(x, y, &q)) {
                goto overflow;
            }
            return kvr_jv_int(q);
        case KVR_JOP_FLOORDIV:
        case KVR_JOP_MOD:
            if (y == 0) {
                kvr_jfail(r, KVR_JINJA_ERROR, "integer division or modulo "
                          "by zero");
            }
            if (x == INT64_MIN && y == -1) {
                goto overflow;
            }
            q = x / y;
            m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) {
                q--;
                m += y;
            }
            return kvr_jv_int(op == KVR_JOP_MOD ? m : q);
        case KVR_JOP_POW:
            if (y < 0) {
                kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "negative power");
            }
            q = 1;
            while (y > 0) {
                if ((y & 1) && __builtin_mul_overflow(q, x, &q)) {
                    goto overflow;
                }
                y >>= 1;
                if (y && __builtin_mul_overflow(x, x, &x)) {
                    goto overflow;
                }
            }
            return kvr_jv_int(q);
        }
    }

    fx = kvr_jas_double(a);
    fy = kvr_jas_double(b);

    switch (op) {
    case KVR_JOP_ADD:
        return kvr_jv_float(fx + fy);
    case KVR_JOP_SUB:
        return kvr_jv_float(fx - fy);
    case KVR_JOP_MUL:
        return kvr_jv_float(fx * fy);
    case KVR_JOP_DIV:
        if (fy == 0) {
            kvr_jfail(r, KVR_JINJA_ERROR, "division by zero");
        }
        if (a.type != KVR_JV_FLOAT && b.type != KVR_JV_FLOAT
            && (a.u.i > (1LL << 53) || a.u.i < -(1LL << 53)
                || b.u.i > (1LL << 53) || b.u.i < -(1LL << 53)))
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "true division of large "
                      "integers");
        }
        return kvr_jv_float(fx / fy);
    case KVR_JOP_FLOORDIV:
    case KVR_JOP_MOD:
        if (fy == 0) {
            kvr_jfail(r, KVR_JINJA_ERROR, "float modulo");
        }
        /* python's float_divmod */
        fq = fmod(fx, fy);
        fx = (fx - fq) / fy;
        if (fq != 0) {
            if ((fy < 0) != (fq < 0)) {
                fq += fy;
                fx -= 1.0;
            }
        } else {
            fq = copysign(0.0, fy);
        }
        if (op == KVR_JOP_MOD) {
            return kvr_jv_float(fq);
        }
        if (fx != 0) {
            fy = floor(fx);
            if (fx - fy > 0.5) {
                fy += 1.0;
            }
            return kvr_jv_float(fy);
        }
        return kvr_jv_float(copysign(0.0, kvr_jas_double(a)
                                          / kvr_jas_double(b)));
    default:
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "float power");
    }

overflow:

    kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "integer beyond 64 bits");
}


static int
kvr_jcontains(kvr_jinja_render_t *r, kvr_jv_t item, kvr_jv_t seq)
{
    uint32_t  i;

    switch (seq.type) {
    case KVR_JV_STR:
        if (item.type != KVR_JV_STR) {
            kvr_jfail(r, KVR_JINJA_ERROR, "'in <string>' requires string as "
                      "left operand, not %s", kvr_jv_type_name(item));
        }
        if (item.len == 0) {
            return 1;
        }
        return memmem(seq.u.s, seq.len, item.u.s, item.len) != NULL;
    case KVR_JV_LIST:
        kvr_jstep(r, seq.u.list->n / 16);
        for (i = 0; i < seq.u.list->n; i++) {
            if (kvr_jv_eq(seq.u.list->items[i], item)) {
                return 1;
            }
        }
        return 0;
    case KVR_JV_DICT:
    case KVR_JV_NS:
        if (!kvr_jv_hashable(item)) {
            kvr_jfail(r, KVR_JINJA_ERROR, "unhashable type: '%s'",
                      kvr_jv_type_name(item));
        }
        return kvr_jdict_get(seq.u.dict, item) != NULL;
    case KVR_JV_UNDEF:
        return 0;
    default:
        kvr_jfail(r, KVR_JINJA_ERROR, "argument of type '%s' is not "
                  "iterable", kvr_jv_type_name(seq));
    }
}


static int
kvr_jcompare(kvr_jinja_render_t *r, int op, kvr_jv_t a, kvr_jv_t b)
{
    switch (op) {
    case KVR_JOP_EQ:
        return kvr_jv_eq(a, b);
    case KVR_JOP_NE:
        return !kvr_jv_eq(a, b);
    case KVR_JOP_LT:
        return kvr_jv_cmp(r, a, b) < 0;
    case KVR_JOP_LE:
        return kvr_jv_cmp(r, a, b) <= 0;
    case KVR_JOP_GT:
        return kvr_jv_cmp(r, a, b) > 0;
    case KVR_JOP_GE:
        return kvr_jv_cmp(r, a, b) >= 0;
    case KVR_JOP_IN:
        return kvr_jcontains(r, a, b);
    default:
        return !kvr_jcontains(r, a, b);
    }
}


/* calls */

static kvr_jv_t kvr_jcall_macro(kvr_jinja_render_t *r, kvr_jmacro_t *m,
    kvr_jv_t *args, uint32_t nargs, const char **kwn, uint32_t *kwl,
    kvr_jv_t *kwv, uint32_t nkw);


kvr_jv_t
kvr_jcall(kvr_jinja_render_t *r, kvr_jv_t fn, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    kvr_jstep(r, 1);

    switch (fn.type) {
    case KVR_JV_FUNC:
        return kvr_jglobal_call(r, (int) fn.u.i, args, nargs, kwn, kwl, kwv,
                                nkw);
    case KVR_JV_METHOD:
        return kvr_jmethod_call(r, fn.u.method, args, nargs, kwn, kwl, kwv,
                                nkw);
    case KVR_JV_MACRO:
        return kvr_jcall_macro(r, fn.u.macro, args, nargs, kwn, kwl, kwv,
                               nkw);
    case KVR_JV_UNDEF:
        kvr_jfail(r, KVR_JINJA_ERROR, "'%.*s' is undefined",
                  (int) fn.len, fn.u.s ? fn.u.s : "value");
    default:
        kvr_jfail(r, KVR_JINJA_ERROR, "'%s' object is not callable",
                  kvr_jv_type_name(fn));
    }
}


static kvr_jv_t
kvr_jcall_macro(kvr_jinja_render_t *r, kvr_jmacro_t *m, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    uint32_t       i, k;
    int            set;
    kvr_jn_t      *def, *param;
    kvr_jsink_t    sink, *saved;
    kvr_jscope_t  *sc;
    kvr_jv_t       v;

    def = m->def;

    if (nargs > def->nargs) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "macro '%.*s' takes %u "
                  "arguments", (int) def->name_len, def->name, def->nargs);
    }

    if (++r->depth > r->limits.max_depth) {
        kvr_jfail(r, KVR_JINJA_LIMIT, "macro calls nested too deep");
    }

    sc = kvr_jscope_new(r, m->scope);

    /*
     * the arguments given first, the others undefined, then the defaults
     * in order: a default sees the parameters as jinja's frame does
     */
    for (i = 0; i < def->nargs; i++) {
        param = def->args[i];
        v = kvr_jv_undef_named(param->name, param->name_len);
        if (i < nargs) {
            v = args[i];
        }
        for (k = 0; k < nkw; k++) {
            if (kwl[k] == param->name_len
                && memcmp(kwn[k], param->name, kwl[k]) == 0)
            {
                v = kwv[k];
            }
        }
        kvr_jscope_set(r, sc, param->name, param->name_len, v);
    }

    for (i = 0; i < def->nargs; i++) {
        param = def->args[i];
        set = 0;

        if (i < nargs) {
            v = args[i];
            set = 1;
        }

        for (k = 0; k < nkw; k++) {
            if (kwl[k] == param->name_len
                && memcmp(kwn[k], param->name, kwl[k]) == 0)
            {
                if (set) {
                    kvr_jfail(r, KVR_JINJA_ERROR, "macro got multiple values "
                              "for argument '%.*s'", (int) kwl[k], kwn[k]);
                }
                v = kwv[k];
                set = 1;
            }
        }

        if (!set) {
            v = def->kwv[i] ? kvr_jeval(r, sc, def->kwv[i])
                            : kvr_jv_undef_named(param->name,
                                                 param->name_len);
        }

        kvr_jscope_set(r, sc, param->name, param->name_len, v);
    }

    for (k = 0; k < nkw; k++) {
        for (i = 0; i < def->nargs; i++) {
            if (kwl[k] == def->args[i]->name_len
                && memcmp(kwn[k], def->args[i]->name, kwl[k]) == 0)
            {
                break;
            }
        }
        if (i == def->nargs) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "macro '%.*s' has no "
                      "argument '%.*s'", (int) def->name_len, def->name,
                      (int) kwl[k], kwn[k]);
        }
    }

    kvr_jsink_grow_init(&sink, r->sink->max);
    saved = r->sink;
    r->sink = &sink;
    kvr_jexec(r, sc, def->b);
    r->sink = saved;
    r->depth--;

    return kvr_jv_str(sink.buf ? sink.buf : "", sink.len);
}


static void
kvr_jeval_args(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *n,
    kvr_jv_t **args, kvr_jv_t **kwv)
{
    uint32_t  i;

    *args = NULL;
    *kwv = NULL;

    if (n->nargs) {
        *args = kvr_jr_alloc(r, n->nargs * sizeof(kvr_jv_t));
        for (i = 0; i < n->nargs; i++) {
            (*args)[i] = kvr_jeval(r, sc, n->args[i]);
        }
    }

    if (n->nkw) {
        *kwv = kvr_jr_alloc(r, n->nkw * sizeof(kvr_jv_t));
        for (i = 0; i < n->nkw; i++) {
            (*kwv)[i] = kvr_jeval(r, sc, n->kwv[i]);
        }
    }
}


kvr_jv_t
kvr_jeval(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *n)
{
    uint32_t       i;
    int            t;
    kvr_jv_t       a, b, *args, *kwv, parts[3], out;
    kvr_jlist_t   *l;
    kvr_jdict_t   *d;

    if (++r->depth > r->limits.max_depth + 200) {
        kvr_jfail(r, KVR_JINJA_LIMIT, "evaluation nested too deep");
    }

    switch (n->kind) {

    case KVR_JN_CONST:
        out = n->cval;
        break;

    case KVR_JN_NAME:
        out = kvr_jscope_get(r, sc, n->name, n->name_len);
        break;

    case KVR_JN_GETATTR:
        out = kvr_jgetattr(r, kvr_jeval(r, sc, n->a), n->name, n->name_len);
        break;

    case KVR_JN_GETITEM:
        a = kvr_jeval(r, sc, n->a);
        out = kvr_jgetitem(r, a, kvr_jeval(r, sc, n->b));
        break;

    case KVR_JN_SLICE:
        a = kvr_jeval(r, sc, n->a);
        parts[0] = n->b ? kvr_jeval(r, sc, n->b) : kvr_jv_none;
        parts[1] = n->c ? kvr_jeval(r, sc, n->c) : kvr_jv_none;
        parts[2] = n->d ? kvr_jeval(r, sc, n->d) : kvr_jv_none;
        out = kvr_jslice(r, a, parts);
        break;

    case KVR_JN_BINOP:
        a = kvr_jeval(r, sc, n->a);
        b = kvr_jeval(r, sc, n->b);
        if (n->op == KVR_JOP_POW && n->id
            && ((a.type == KVR_JV_FLOAT && a.u.f < 0)
                || (a.type == KVR_JV_INT && a.u.i < 0)))
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "negative constant base of "
                      "**");
        }
        out = kvr_jbinop(r, n->op, a, b);
        break;

    case KVR_JN_NEG:
    case KVR_JN_POS:
        a = kvr_jeval(r, sc, n->a);
        if (a.type == KVR_JV_FLOAT) {
            out = kvr_jv_float(n->kind == KVR_JN_NEG ? -a.u.f : a.u.f);
        } else if (a.type == KVR_JV_INT || a.type == KVR_JV_BOOL) {
            if (n->kind == KVR_JN_NEG && a.u.i == INT64_MIN) {
                kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "integer beyond 64 bits");
            }
            out = kvr_jv_int(n->kind == KVR_JN_NEG ? -a.u.i : a.u.i);
        } else {
            kvr_jfail(r, KVR_JINJA_ERROR, "bad operand type for unary %c: "
                      "'%s'", n->kind == KVR_JN_NEG ? '-' : '+',
                      kvr_jv_type_name(a));
        }
        break;

    case KVR_JN_NOT:
        out = kvr_jv_bool(!kvr_jv_truthy(r, kvr_jeval(r, sc, n->a)));
        break;

    case KVR_JN_AND:
        a = kvr_jeval(r, sc, n->a);
        out = kvr_jv_truthy(r, a) ? kvr_jeval(r, sc, n->b) : a;
        break;

    case KVR_JN_OR:
        a = kvr_jeval(r, sc, n->a);
        out = kvr_jv_truthy(r, a) ? a : kvr_jeval(r, sc, n->b);
        break;

    case KVR_JN_COMPARE:
        a = kvr_jeval(r, sc, n->args[0]);
        out = kvr_jv_bool(1);
        for (i = 1; i < n->nargs; i++) {
            b = kvr_jeval(r, sc, n->args[i]);
            if (!kvr_jcompare(r, n->ops[i - 1], a, b)) {
                out = kvr_jv_bool(0);
                break;
            }
            a = b;
        }
        break;

    case KVR_JN_COND:
        if (kvr_jv_truthy(r, kvr_jeval(r, sc, n->a))) {
            out = kvr_jeval(r, sc, n->b);
        } else {
            out = n->c ? kvr_jeval(r, sc, n->c) : kvr_jv_undef;
        }
        break;

    case KVR_JN_LIST:
    case KVR_JN_TUPLE:
        l = kvr_jlist_new(r, n->nargs);
        for (i = 0; i < n->nargs; i++) {
            l->items[l->n++] = kvr_jeval(r, sc, n->args[i]);
        }
        out = kvr_jv_list(l);
        if (n->kind == KVR_JN_TUPLE) {
            out.flags = KVR_JV_TUPLE;
        }
        break;

    case KVR_JN_DICT:
        d = kvr_jdict_new(r, n->nargs / 2);
        for (i = 0; i + 1 < n->nargs; i += 2) {
            a = kvr_jeval(r, sc, n->args[i]);
            if (!kvr_jv_hashable(a) || a.type == KVR_JV_UNDEF) {
                kvr_jfail(r, KVR_JINJA_ERROR, "unhashable dict key");
            }
            kvr_jdict_set(r, d, a, kvr_jeval(r, sc, n->args[i + 1]));
        }
        out = kvr_jv_dict(d);
        break;

    case KVR_JN_CALL:
        a = kvr_jeval(r, sc, n->a);
        kvr_jeval_args(r, sc, n, &args, &kwv);
        out = kvr_jcall(r, a, args, n->nargs, n->kwn, n->kwl, kwv, n->nkw);
        break;

    case KVR_JN_FILTER:
        a = kvr_jeval(r, sc, n->a);
        kvr_jeval_args(r, sc, n, &args, &kwv);
        kvr_jstep(r, 1);
        t = kvr_jfilter_lazy(n->id);
        r->lazy += t;
        out = kvr_jfilter_apply(r, n->id, a, args, n->nargs, n->kwn, n->kwl,
                                kwv, n->nkw);
        r->lazy -= t;
        break;

    case KVR_JN_TEST:
        a = kvr_jeval(r, sc, n->a);
        kvr_jeval_args(r, sc, n, &args, &kwv);
        t = kvr_jtest_apply(r, n->id, a, args, n->nargs);
        out = kvr_jv_bool(n->op ? !t : t);
        break;

    default:
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "bad expression node");
    }

    r->depth--;
    return out;
}


/* statements */

static void
kvr_jassign(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *target,
    kvr_jv_t v)
{
    uint32_t      i;
    kvr_jlist_t  *l;

    if (target->kind == KVR_JN_NAME) {
        kvr_jscope_set(r, sc, target->name, target->name_len, v);
        return;
    }

    /* unpacking */
    if (v.type == KVR_JV_DICT || v.type == KVR_JV_STR
        || v.type == KVR_JV_LIST)
    {
        l = kvr_jiter(r, v);
    } else {
        kvr_jfail(r, KVR_JINJA_ERROR, "cannot unpack non-iterable %s object",
                  kvr_jv_type_name(v));
    }

    if (l->n != target->nargs) {
        kvr_jfail(r, KVR_JINJA_ERROR, "cannot unpack %u values into %u "
                  "names", l->n, target->nargs);
    }

    for (i = 0; i < l->n; i++) {
        kvr_jscope_set(r, sc, target->args[i]->name,
                       target->args[i]->name_len, l->items[i]);
    }
}


static int
kvr_jexec_for(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *n)
{
    uint32_t       i;
    int            rc, completed;
    kvr_jlist_t   *items, *kept;
    kvr_jloop_t   *lp;
    kvr_jscope_t  *body;
    kvr_jv_t       lv;

    items = kvr_jiter(r, kvr_jeval(r, sc, n->a));

    if (n->c) {
        /* "for x in xs if cond": filtered first, loop.length counts kept */
        kept = kvr_jlist_new(r, items->n);
        for (i = 0; i < items->n; i++) {
            kvr_jstep(r, 1);
            body = kvr_jscope_new(r, sc);
            kvr_jassign(r, body, n->d, items->items[i]);
            if (kvr_jv_truthy(r, kvr_jeval(r, body, n->c))) {
                kept->items[kept->n++] = items->items[i];
            }
        }
        items = kept;
    }

    lp = kvr_jr_alloc(r, sizeof(kvr_jloop_t));
    lp->items = items;
    lv = kvr_jv_undef;
    lv.type = KVR_JV_LOOP;
    lv.u.loop = lp;

    /*
     * jinja sets its "iterated" flag at the end of the body: the else
     * block runs unless one iteration got there (no break or continue)
     */
    completed = 0;

    for (i = 0; i < items->n; i++) {
        kvr_jstep(r, 1);
        lp->index0 = i;
        body = kvr_jscope_new(r, sc);
        kvr_jscope_set(r, body, "loop", 4, lv);
        kvr_jassign(r, body, n->d, items->items[i]);

        rc = kvr_jexec(r, body, n->b);
        if (rc == KVR_JEXEC_BREAK) {
            break;
        }
        if (rc == KVR_JEXEC_NORMAL) {
            completed = 1;
        }
    }

    if (!completed && n->nargs) {
        return kvr_jexec(r, sc, n->args[0]);
    }

    return KVR_JEXEC_NORMAL;
}


static int
kvr_jexec(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *n)
{
    int            rc;
    kvr_jv_t       v, *slot;
    kvr_jsink_t    sink, *saved;
    kvr_jscope_t  *s;
    kvr_jmacro_t  *m;

    if (++r->depth > r->limits.max_depth + 200) {
        kvr_jfail(r, KVR_JINJA_LIMIT, "statements nested too deep");
    }

    for ( ; n; n = n->next) {

        switch (n->kind) {

        case KVR_JN_TEXT:
            kvr_jsink_put(r, r->sink, n->cval.u.s, n->cval.len);
            break;

        case KVR_JN_PRINT:
            kvr_jv_write_str(r, r->sink, kvr_jeval(r, sc, n->a));
            break;

        case KVR_JN_IF:
            for ( ;; ) {
                if (kvr_jv_truthy(r, kvr_jeval(r, sc, n->a))) {
                    rc = kvr_jexec(r, sc, n->b);
                    break;
                }
                if (n->c == NULL) {
                    rc = KVR_JEXEC_NORMAL;
                    break;
                }
                if (n->c->kind == KVR_JN_BLOCK) {
                    rc = kvr_jexec(r, sc, n->c->b);
                    break;
                }
                n = n->c;
            }
            if (rc != KVR_JEXEC_NORMAL) {
                r->depth--;
                return rc;
            }
            break;

        case KVR_JN_FOR:
            kvr_jexec_for(r, sc, n);
            break;

        case KVR_JN_SET:
            v = kvr_jeval(r, sc, n->a);
            if (n->d->kind == KVR_JN_GETATTR) {
                /* set ns.attr: the nearest binding of the name */
                for (s = sc; s; s = s->parent) {
                    slot = kvr_jscope_find_local(s, n->d->a->name,
                                                 n->d->a->name_len);
                    if (slot) {
                        break;
                    }
                }
                if (s == NULL || slot->type != KVR_JV_NS) {
                    kvr_jfail(r, KVR_JINJA_ERROR, "can only set attributes "
                              "on namespace objects");
                }
                kvr_jdict_set(r, slot->u.dict,
                              kvr_jv_str(n->d->name, n->d->name_len), v);
            } else {
                kvr_jassign(r, sc, n->d, v);
            }
            break;

        case KVR_JN_SETBLOCK:
            kvr_jsink_grow_init(&sink, r->sink->max);
            saved = r->sink;
            r->sink = &sink;
            kvr_jexec(r, sc, n->b);
            r->sink = saved;
            kvr_jscope_set(r, sc, n->d->name, n->d->name_len,
                           kvr_jv_str(sink.buf ? sink.buf : "", sink.len));
            break;

        case KVR_JN_MACRO:
            m = kvr_jr_alloc(r, sizeof(kvr_jmacro_t));
            m->def = n;
            m->scope = sc;
            v = kvr_jv_undef;
            v.type = KVR_JV_MACRO;
            v.u.macro = m;
            kvr_jscope_set(r, sc, n->name, n->name_len, v);
            break;

        case KVR_JN_BREAK:
            r->depth--;
            return KVR_JEXEC_BREAK;

        case KVR_JN_CONTINUE:
            r->depth--;
            return KVR_JEXEC_CONTINUE;

        case KVR_JN_BLOCK:
            rc = kvr_jexec(r, sc, n->b);
            if (rc != KVR_JEXEC_NORMAL) {
                r->depth--;
                return rc;
            }
            break;

        default:
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "bad statement node");
        }
    }

    r->depth--;
    return KVR_JEXEC_NORMAL;
}


/* the public API */

kvr_jinja_render_t *
kvr_jinja_render_create(const kvr_jinja_limits_t *lim)
{
    kvr_jinja_render_t  *r;

    r = calloc(1, sizeof(kvr_jinja_render_t));
    if (r == NULL) {
        return NULL;
    }

    if (lim) {
        r->limits = *lim;
    }
    if (r->limits.max_memory == 0) {
        r->limits.max_memory = KVR_JINJA_DEFAULT_MEMORY;
    }
    if (r->limits.max_steps == 0) {
        r->limits.max_steps = KVR_JINJA_DEFAULT_STEPS;
    }
    if (r->limits.max_depth == 0) {
        r->limits.max_depth = KVR_JINJA_DEFAULT_DEPTH;
    }

    kvr_jarena_init(&r->arena, r->limits.max_memory, r->err,
                    sizeof(r->err));

    r->globals = kvr_jscope_new(r, NULL);
    if (r->globals == NULL) {
        kvr_jarena_free(&r->arena);
        free(r);
        return NULL;
    }

    return r;
}


void
kvr_jinja_render_destroy(kvr_jinja_render_t *r)
{
    if (r == NULL) {
        return;
    }

    kvr_jarena_free(&r->arena);
    free(r);
}


const char *
kvr_jinja_error(const kvr_jinja_render_t *r)
{
    return r->err;
}


int
kvr_jinja_render(const kvr_jinja_tpl_t *tpl, kvr_jinja_render_t *r,
    char *out, size_t max_out, size_t *out_len)
{
    kvr_jsink_t    sink;
    kvr_jscope_t  *top;

    *out_len = 0;

    if (r->failed) {
        snprintf(r->err, sizeof(r->err), "memory limit reached while "
                 "building the variables");
        return KVR_JINJA_LIMIT;
    }

    sink.buf = out;
    sink.len = 0;
    sink.cap = max_out;
    sink.max = max_out;
    sink.grow = 0;

    r->sink = &sink;
    r->status = KVR_JINJA_OK;
    r->err[0] = '\0';
    r->steps = 0;
    r->depth = 0;
    r->in_render = 1;
    r->arena.fail = &r->jmp;

    if (setjmp(r->jmp)) {
        r->in_render = 0;
        r->arena.fail = NULL;
        if (r->status == KVR_JINJA_OK) {
            r->status = KVR_JINJA_LIMIT;
        }
        *out_len = 0;
        return r->status;
    }

    top = kvr_jscope_new(r, r->globals);
    kvr_jexec(r, top, tpl->body);

    r->in_render = 0;
    r->arena.fail = NULL;
    *out_len = sink.len;

    return KVR_JINJA_OK;
}


/* variables */

void
kvr_jinja_set(kvr_jinja_render_t *r, const char *name, kvr_jv_t *v)
{
    char    *copy;
    size_t   len;

    if (v == NULL) {
        r->failed = 1;
        return;
    }

    len = strlen(name);
    copy = kvr_jr_alloc(r, len + 1);
    if (copy == NULL) {
        return;
    }
    memcpy(copy, name, len + 1);

    kvr_jscope_set(r, r->globals, copy, len, *v);
}


static kvr_jv_t *
kvr_jinja_box(kvr_jinja_render_t *r, kvr_jv_t v)
{
    kvr_jv_t  *p;

    p = kvr_jr_alloc(r, sizeof(kvr_jv_t));
    if (p) {
        *p = v;
    }

    return p;
}


kvr_jv_t *
kvr_jinja_new_none(kvr_jinja_render_t *r)
{
    return kvr_jinja_box(r, kvr_jv_none);
}


kvr_jv_t *
kvr_jinja_new_bool(kvr_jinja_render_t *r, int b)
{
    return kvr_jinja_box(r, kvr_jv_bool(b));
}


kvr_jv_t *
kvr_jinja_new_int(kvr_jinja_render_t *r, int64_t i)
{
    return kvr_jinja_box(r, kvr_jv_int(i));
}


kvr_jv_t *
kvr_jinja_new_float(kvr_jinja_render_t *r, double f)
{
    return kvr_jinja_box(r, kvr_jv_float(f));
}


kvr_jv_t *
kvr_jinja_new_str(kvr_jinja_render_t *r, const char *s, size_t len)
{
    char  *p;

    if (len > UINT32_MAX - 1) {
        r->failed = 1;
        return NULL;
    }

    p = kvr_jr_alloc(r, len + 1);
    if (p == NULL) {
        return NULL;
    }

    memcpy(p, s, len);
    p[len] = '\0';

    return kvr_jinja_box(r, kvr_jv_str(p, len));
}


kvr_jv_t *
kvr_jinja_new_list(kvr_jinja_render_t *r)
{
    kvr_jlist_t  *l;

    l = kvr_jlist_new(r, 0);
    if (l == NULL) {
        return NULL;
    }

    return kvr_jinja_box(r, kvr_jv_list(l));
}


kvr_jv_t *
kvr_jinja_new_dict(kvr_jinja_render_t *r)
{
    kvr_jdict_t  *d;

    d = kvr_jdict_new(r, 0);
    if (d == NULL) {
        return NULL;
    }

    return kvr_jinja_box(r, kvr_jv_dict(d));
}


void
kvr_jinja_list_push(kvr_jinja_render_t *r, kvr_jv_t *list, kvr_jv_t *item)
{
    uint32_t      cap;
    kvr_jlist_t  *l;
    kvr_jv_t     *items;

    if (list == NULL || item == NULL || list->type != KVR_JV_LIST) {
        r->failed = 1;
        return;
    }

    l = list->u.list;

    if (l->n == l->cap) {
        cap = l->cap ? l->cap * 2 : 4;
        items = kvr_jr_alloc(r, cap * sizeof(kvr_jv_t));
        if (items == NULL) {
            return;
        }
        if (l->n) {
            memcpy(items, l->items, l->n * sizeof(kvr_jv_t));
        }
        l->items = items;
        l->cap = cap;
    }

    l->items[l->n++] = *item;
}


void
kvr_jinja_dict_set(kvr_jinja_render_t *r, kvr_jv_t *dict, const char *key,
    size_t key_len, kvr_jv_t *val)
{
    kvr_jv_t  *k;

    if (dict == NULL || val == NULL || dict->type != KVR_JV_DICT) {
        r->failed = 1;
        return;
    }

    k = kvr_jinja_new_str(r, key, key_len);
    if (k == NULL) {
        return;
    }

    kvr_jdict_set(r, dict->u.dict, *k, *val);
}


const char *
kvr_jinja_str_ptr(const kvr_jv_t *v, size_t *len)
{
    if (v == NULL || v->type != KVR_JV_STR) {
        return NULL;
    }

    *len = v->len;
    return v->u.s;
}
