/*
 * Copyright (C) kvroute developers
 *
 * Python's operators on values: arithmetic as CPython does it on 64-bit
 * ints (beyond them the render refuses) and floats, sequence
 * concatenation and repetition, comparison chains' operators and "in".
 */

#define _GNU_SOURCE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvr_jinja_int.h"


static int kvr_jbinop_seq(kvr_jinja_render_t *r, int op, kvr_jv_t a,
    kvr_jv_t b, kvr_jv_t *out);
static int kvr_jbinop_int(kvr_jinja_render_t *r, int op, int64_t x,
    int64_t y, kvr_jv_t *out);
static kvr_jv_t kvr_jbinop_float(kvr_jinja_render_t *r, int op, kvr_jv_t a,
    kvr_jv_t b);


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


kvr_jv_t
kvr_jbinop(kvr_jinja_render_t *r, int op, kvr_jv_t a, kvr_jv_t b)
{
    kvr_jv_t  out;
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

    if (kvr_jbinop_seq(r, op, a, b, &out)) {
        return out;
    }

    if (!kvr_jis_num(a) || !kvr_jis_num(b)) {
        kvr_jnum_check(r, a, b, names[op]);
    }

    if (a.type != KVR_JV_FLOAT && b.type != KVR_JV_FLOAT
        && op != KVR_JOP_DIV
        && kvr_jbinop_int(r, op, a.u.i, b.u.i, &out))
    {
        return out;
    }

    return kvr_jbinop_float(r, op, a, b);
}


/*
 * a + b of two strings.  When a is the last result of this function and
 * its reserved room holds b, b is appended in place: bytes beyond a are
 * owned by that result alone, so no other value sees them change.  A new
 * result of more than 256 bytes reserves half its size again.
 */
static kvr_jv_t
kvr_jstr_join(kvr_jinja_render_t *r, kvr_jv_t a, kvr_jv_t b)
{
    char    *buf;
    size_t   len, cap;

    len = (size_t) a.len + b.len;

    if (len > UINT32_MAX - 1) {
        kvr_jfail(r, KVR_JINJA_LIMIT, "string too long");
    }

    if (a.u.s == r->tail && a.len == r->tail_len && b.len <= r->tail_room) {
        memcpy(r->tail + a.len, b.u.s, b.len);
        r->tail_len = len;
        r->tail_room -= b.len;
        return kvr_jv_str(r->tail, len);
    }

    cap = len + 1;
    if (len > 256 && r->arena.total + cap + cap / 2 <= r->arena.max) {
        cap += cap / 2;
    }

    buf = kvr_jr_alloc(r, cap);
    memcpy(buf, a.u.s, a.len);
    memcpy(buf + a.len, b.u.s, b.len);

    r->tail = buf;
    r->tail_len = len;
    r->tail_room = cap - len;

    return kvr_jv_str(buf, len);
}


/*
 * The operators on strings and lists: ~, + of two strings or two lists
 * of one kind, * by an int, and % of a string (refused).  0 when the
 * operands are not such.
 */
static int
kvr_jbinop_seq(kvr_jinja_render_t *r, int op, kvr_jv_t a, kvr_jv_t b,
    kvr_jv_t *out)
{
    kvr_jlist_t  *l;
    kvr_jv_t      sa, sb;

    if (op == KVR_JOP_CONCAT) {
        sa = kvr_jv_to_string(r, a);
        sb = kvr_jv_to_string(r, b);
        *out = kvr_jstr_join(r, sa, sb);
        return 1;
    }

    if (op == KVR_JOP_ADD && a.type == KVR_JV_STR && b.type == KVR_JV_STR) {
        *out = kvr_jstr_join(r, a, b);
        return 1;
    }

    if (op == KVR_JOP_ADD && a.type == KVR_JV_LIST && b.type == KVR_JV_LIST
        && (a.flags & KVR_JV_TUPLE) == (b.flags & KVR_JV_TUPLE))
    {
        l = kvr_jlist_new(r, (size_t) a.u.list->n + b.u.list->n);
        memcpy(l->items, a.u.list->items, a.u.list->n * sizeof(kvr_jv_t));
        memcpy(l->items + a.u.list->n, b.u.list->items,
               b.u.list->n * sizeof(kvr_jv_t));
        l->n = a.u.list->n + b.u.list->n;
        *out = kvr_jv_list(l);
        out->flags = a.flags;
        return 1;
    }

    if (op == KVR_JOP_MUL) {
        if ((a.type == KVR_JV_STR || a.type == KVR_JV_LIST)
            && (b.type == KVR_JV_INT || b.type == KVR_JV_BOOL))
        {
            *out = kvr_jrepeat(r, a, b.u.i);
            return 1;
        }
        if ((b.type == KVR_JV_STR || b.type == KVR_JV_LIST)
            && (a.type == KVR_JV_INT || a.type == KVR_JV_BOOL))
        {
            *out = kvr_jrepeat(r, b, a.u.i);
            return 1;
        }
    }

    if (op == KVR_JOP_MOD && a.type == KVR_JV_STR) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "printf-style string "
                  "formatting is not supported");
    }

    return 0;
}


/* python's int operators on 64 bits (beyond them: refused); 0: not one */
static int
kvr_jbinop_int(kvr_jinja_render_t *r, int op, int64_t x, int64_t y,
    kvr_jv_t *out)
{
    int64_t  q, m;

    switch (op) {
    case KVR_JOP_ADD:
        if (__builtin_add_overflow(x, y, &q)) {
            goto overflow;
        }
        break;
    case KVR_JOP_SUB:
        if (__builtin_sub_overflow(x, y, &q)) {
            goto overflow;
        }
        break;
    case KVR_JOP_MUL:
        if (__builtin_mul_overflow(x, y, &q)) {
            goto overflow;
        }
        break;
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
        if (op == KVR_JOP_MOD) {
            q = m;
        }
        break;
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
        break;
    default:
        return 0;
    }

    *out = kvr_jv_int(q);

    return 1;

overflow:

    kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "integer beyond 64 bits");
}


/* python's float operators, on ints too (a true division) */
static kvr_jv_t
kvr_jbinop_float(kvr_jinja_render_t *r, int op, kvr_jv_t a, kvr_jv_t b)
{
    double  fx, fy, fq;

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


int
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
