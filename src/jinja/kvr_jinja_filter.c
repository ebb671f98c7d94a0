/*
 * Copyright (C) kvroute developers
 *
 * Jinja's filters (value | tojson, | map(attribute=...), | sort, ...).
 */

#define _GNU_SOURCE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvr_jinja_builtin.h"


enum {
    F_ABS = 1, F_CAPITALIZE, F_COUNT, F_DEFAULT, F_FIRST, F_FLOAT, F_INDENT,
    F_INT, F_ITEMS, F_JOIN, F_LAST, F_LENGTH, F_LIST, F_LOWER, F_MAP,
    F_REJECT, F_REJECTATTR, F_REPLACE, F_REVERSE, F_SELECT, F_SELECTATTR,
    F_SORT, F_STRING, F_SUM, F_TITLE, F_TOJSON, F_TRIM, F_UPPER, F_DICTSORT
};

static const kvr_jname_t  kvr_jfilters[] = {
    { "abs", F_ABS }, { "capitalize", F_CAPITALIZE }, { "count", F_COUNT },
    { "d", F_DEFAULT }, { "default", F_DEFAULT }, { "first", F_FIRST },
    { "float", F_FLOAT }, { "indent", F_INDENT }, { "int", F_INT },
    { "items", F_ITEMS }, { "join", F_JOIN }, { "last", F_LAST },
    { "length", F_LENGTH }, { "list", F_LIST }, { "lower", F_LOWER },
    { "map", F_MAP }, { "reject", F_REJECT }, { "rejectattr", F_REJECTATTR },
    { "replace", F_REPLACE }, { "reverse", F_REVERSE },
    { "select", F_SELECT }, { "selectattr", F_SELECTATTR },
    { "sort", F_SORT }, { "string", F_STRING }, { "sum", F_SUM },
    { "title", F_TITLE }, { "tojson", F_TOJSON }, { "trim", F_TRIM },
    { "upper", F_UPPER }, { "dictsort", F_DICTSORT },
    { NULL, 0 }
};


static kvr_jv_t kvr_jlength(kvr_jinja_render_t *r, kvr_jv_t v);
static kvr_jv_t kvr_jattr_path(kvr_jinja_render_t *r, kvr_jv_t v,
    kvr_jv_t path);
static kvr_jv_t kvr_jselect(kvr_jinja_render_t *r, kvr_jv_t seq,
    kvr_jv_t *args, uint32_t nargs, int by_attr, int keep);
static kvr_jv_t kvr_jmap(kvr_jinja_render_t *r, kvr_jv_t seq, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw);
static kvr_jv_t kvr_jindent(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw);
static kvr_jv_t kvr_jtojson(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw);
static kvr_jv_t kvr_jto_int(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t def);
static kvr_jv_t kvr_jto_float(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t def);
static void kvr_jsort(kvr_jinja_render_t *r, kvr_jv_t *keys, kvr_jv_t *vals,
    uint32_t n, kvr_jv_t *tk, kvr_jv_t *tv, int reverse);
static kvr_jv_t kvr_jsort_filter(kvr_jinja_render_t *r, kvr_jv_t seq,
    kvr_jv_t *args, uint32_t nargs, const char **kwn, uint32_t *kwl,
    kvr_jv_t *kwv, uint32_t nkw);
static kvr_jv_t kvr_jdictsort(kvr_jinja_render_t *r, kvr_jv_t v,
    kvr_jv_t *args, uint32_t nargs, const char **kwn, uint32_t *kwl,
    kvr_jv_t *kwv, uint32_t nkw);


int
kvr_jfilter_id(const char *name, size_t len)
{
    return kvr_jname_find(kvr_jfilters, name, len);
}


/* filters that are python generators: they raise only when consumed */
int
kvr_jfilter_lazy(int id)
{
    return id == F_MAP || id == F_SELECT || id == F_REJECT
           || id == F_SELECTATTR || id == F_REJECTATTR || id == F_ITEMS;
}


static kvr_jv_t
kvr_jlength(kvr_jinja_render_t *r, kvr_jv_t v)
{
    switch (v.type) {
    case KVR_JV_STR:
        return kvr_jv_int((int64_t) kvr_jutf8_count(v.u.s, v.len));
    case KVR_JV_LIST:
        if (v.flags & KVR_JV_GEN) {
            kvr_jfail(r, KVR_JINJA_ERROR, "object of type 'generator' has "
                      "no len()");
        }
        return kvr_jv_int(v.u.list->n);
    case KVR_JV_DICT:
        return kvr_jv_int(v.u.dict->n);
    case KVR_JV_UNDEF:
        return kvr_jv_int(0);
    default:
        kvr_jfail(r, KVR_JINJA_ERROR, "object of type '%s' has no len()",
                  kvr_jv_type_name(v));
    }
}


/* jinja's make_attrgetter: dotted names, integer parts as indexes */
static kvr_jv_t
kvr_jattr_path(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t path)
{
    size_t    i, start;
    int64_t   idx;
    int       digits;

    if (path.type == KVR_JV_INT) {
        return kvr_jgetitem(r, v, path);
    }

    kvr_jneed_str(r, path, "attribute");

    start = 0;
    for (i = 0; i <= path.len; i++) {
        if (i < path.len && path.u.s[i] != '.') {
            continue;
        }
        digits = (i > start);
        idx = 0;
        for (size_t k = start; k < i; k++) {
            if (path.u.s[k] < '0' || path.u.s[k] > '9' || idx > 100000000) {
                digits = 0;
                break;
            }
            idx = idx * 10 + (path.u.s[k] - '0');
        }
        if (digits) {
            v = kvr_jgetitem(r, v, kvr_jv_int(idx));
        } else {
            v = kvr_jgetitem(r, v, kvr_jv_str(path.u.s + start, i - start));
        }
        start = i + 1;
    }

    return v;
}


/* select / reject / selectattr / rejectattr */
static kvr_jv_t
kvr_jselect(kvr_jinja_render_t *r, kvr_jv_t seq, kvr_jv_t *args,
    uint32_t nargs, int by_attr, int keep)
{
    uint32_t      i, first;
    int           id, ok;
    kvr_jlist_t  *in, *out;
    kvr_jv_t      item, test;

    in = kvr_jiter(r, seq);
    first = 0;

    if (by_attr) {
        if (nargs < 1) {
            kvr_jfail(r, KVR_JINJA_ERROR, "selectattr needs an attribute");
        }
        first = 1;
    }

    id = 0;
    if (nargs > first) {
        test = args[first];
        kvr_jneed_str(r, test, "select");
        id = kvr_jtest_id(test.u.s, test.len);
        if (id < 0) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "no test named '%.*s'",
                      (int) test.len, test.u.s);
        }
    }

    out = kvr_jlist_new(r, in->n);

    for (i = 0; i < in->n; i++) {
        kvr_jstep(r, 1);
        item = in->items[i];
        if (by_attr) {
            item = kvr_jattr_path(r, item, args[0]);
        }
        if (id) {
            ok = kvr_jtest_apply(r, id, item, args + first + 1,
                                 nargs - first - 1);
        } else {
            ok = kvr_jv_truthy(r, item);
        }
        if (ok == keep) {
            out->items[out->n++] = in->items[i];
        }
    }

    item = kvr_jv_list(out);
    item.flags = KVR_JV_GEN;

    return item;
}


static kvr_jv_t
kvr_jmap(kvr_jinja_render_t *r, kvr_jv_t seq, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    uint32_t      i;
    int           id;
    kvr_jlist_t  *in, *out;
    kvr_jv_t      attr, def, item, name;
    static const char  *kw[] = { "attribute", "default", NULL };

    in = kvr_jiter(r, seq);
    out = kvr_jlist_new(r, in->n);

    if (nargs == 0 && kvr_jarg(args, 0, kwn, kwl, kwv, nkw, 0, "attribute",
                               &attr))
    {
        kvr_jcheck_kw(r, "map", kwn, kwl, nkw, kw);
        if (!kvr_jarg(args, 0, kwn, kwl, kwv, nkw, 0, "default", &def)) {
            def = kvr_jv_undef;
        }
        for (i = 0; i < in->n; i++) {
            kvr_jstep(r, 1);
            item = kvr_jattr_path(r, in->items[i], attr);
            if (item.type == KVR_JV_UNDEF && def.type != KVR_JV_UNDEF) {
                item = def;
            }
            out->items[out->n++] = item;
        }
    } else {
        if (nargs == 0) {
            kvr_jfail(r, KVR_JINJA_ERROR, "map requires a filter argument");
        }
        name = args[0];
        kvr_jneed_str(r, name, "map");
        id = kvr_jfilter_id(name.u.s, name.len);
        if (id < 0) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "no filter named '%.*s'",
                      (int) name.len, name.u.s);
        }
        for (i = 0; i < in->n; i++) {
            kvr_jstep(r, 1);
            out->items[out->n++] = kvr_jfilter_apply(r, id, in->items[i],
                                                     args + 1, nargs - 1,
                                                     kwn, kwl, kwv, nkw);
        }
    }

    item = kvr_jv_list(out);
    item.flags = KVR_JV_GEN;

    return item;
}


static kvr_jv_t
kvr_jindent(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    int64_t       width, k;
    int           first, blank;
    uint32_t      i;
    kvr_jsink_t   out, pad;
    kvr_jlist_t  *lines;
    kvr_jv_t      w, f, b, t;
    static const char  *kw[] = { "width", "first", "blank", NULL };

    kvr_jcheck_kw(r, "indent", kwn, kwl, nkw, kw);

    kvr_jsink_grow_init(&pad, 4096);
    if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "width", &w)) {
        if (w.type == KVR_JV_STR) {
            kvr_jsink_put(r, &pad, w.u.s, w.len);
        } else if (w.type == KVR_JV_INT) {
            width = w.u.i;
            for (k = 0; k < width && k < 4096; k++) {
                kvr_jsink_put(r, &pad, " ", 1);
            }
        } else {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "indent width type");
        }
    } else {
        kvr_jsink_put(r, &pad, "    ", 4);
    }

    first = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1, "first", &f)
            && kvr_jv_truthy(r, f);
    blank = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 2, "blank", &b)
            && kvr_jv_truthy(r, b);

    /* s += "\n" then splitlines, as jinja does */
    kvr_jsink_grow_init(&out, r->arena.max);
    kvr_jsink_put(r, &out, s.u.s, s.len);
    kvr_jsink_put(r, &out, "\n", 1);
    lines = kvr_jsplitlines(r, kvr_jv_str(out.buf, out.len));

    kvr_jsink_grow_init(&out, r->arena.max);
    if (first) {
        kvr_jsink_put(r, &out, pad.buf, pad.len);
    }

    for (i = 0; i < lines->n; i++) {
        t = lines->items[i];
        if (i) {
            kvr_jsink_put(r, &out, "\n", 1);
            if (blank || t.len) {
                kvr_jsink_put(r, &out, pad.buf, pad.len);
            }
        }
        kvr_jsink_put(r, &out, t.u.s, t.len);
    }

    return kvr_jv_str(out.buf ? out.buf : "", out.len);
}


static kvr_jv_t
kvr_jtojson(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    int           indent, sort_keys;
    const char   *item_sep, *key_sep;
    char         *p;
    kvr_jsink_t   out;
    kvr_jv_t      a, sep;
    static const char  *kw[] = {
        "ensure_ascii", "indent", "separators", "sort_keys", NULL
    };

    kvr_jcheck_kw(r, "tojson", kwn, kwl, nkw, kw);

    if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "ensure_ascii", &a)
        && kvr_jv_truthy(r, a))
    {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "tojson ensure_ascii=True");
    }

    indent = -1;
    if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1, "indent", &a)
        && a.type != KVR_JV_NONE)
    {
        if (a.type != KVR_JV_INT || a.u.i < 0 || a.u.i > 64) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "tojson indent other than "
                      "a small integer");
        }
        indent = (int) a.u.i;
    }

    item_sep = (indent >= 0) ? "," : ", ";
    key_sep = ": ";

    if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 2, "separators", &a)
        && a.type != KVR_JV_NONE)
    {
        if (a.type != KVR_JV_LIST || a.u.list->n != 2
            || a.u.list->items[0].type != KVR_JV_STR
            || a.u.list->items[1].type != KVR_JV_STR)
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "tojson separators");
        }
        sep = a.u.list->items[0];
        p = kvr_jr_alloc(r, sep.len + 1);
        memcpy(p, sep.u.s, sep.len);
        p[sep.len] = '\0';
        item_sep = p;
        sep = a.u.list->items[1];
        p = kvr_jr_alloc(r, sep.len + 1);
        memcpy(p, sep.u.s, sep.len);
        p[sep.len] = '\0';
        key_sep = p;
        if (strlen(item_sep) != a.u.list->items[0].len
            || strlen(key_sep) != a.u.list->items[1].len)
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "nul in tojson separators");
        }
    }

    sort_keys = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 3, "sort_keys", &a)
                && kvr_jv_truthy(r, a);

    if (nargs > 4) {
        kvr_jfail(r, KVR_JINJA_ERROR, "tojson: too many arguments");
    }

    kvr_jsink_grow_init(&out, r->arena.max);
    kvr_jv_write_json(r, &out, v, indent, item_sep, key_sep, sort_keys, 0);

    return kvr_jv_str(out.buf ? out.buf : "", out.len);
}


/* jinja's int filter: int(s), else int(float(s)), else the default */
static kvr_jv_t
kvr_jto_int(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t def)
{
    char       buf[64], *end;
    size_t     n, k, sign;
    double     f;
    kvr_jv_t   s;

    switch (v.type) {
    case KVR_JV_INT:
        return v;
    case KVR_JV_BOOL:
        return kvr_jv_int(v.u.i);
    case KVR_JV_FLOAT:
        if (isnan(v.u.f) || isinf(v.u.f) || fabs(v.u.f) > 9.2e18) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "int() of a huge float");
        }
        return kvr_jv_int((int64_t) v.u.f);
    case KVR_JV_STR:
        break;
    default:
        return def;
    }

    s = kvr_jstrip(v, NULL, 1, 1);
    n = s.len;

    if (n == 0) {
        return def;
    }
    if (n >= sizeof(buf) || memchr(s.u.s, '_', n)) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "int() of this string");
    }

    memcpy(buf, s.u.s, n);
    buf[n] = '\0';

    sign = (buf[0] == '+' || buf[0] == '-');
    for (k = sign; k < n && buf[k] >= '0' && buf[k] <= '9'; k++) {
        /* digits */
    }

    if (k == n && n > sign) {
        if (n - sign > 18) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "int() of a long number");
        }
        return kvr_jv_int(strtoll(buf, &end, 10));
    }

    for (k = 0; k < n; k++) {
        if (!((buf[k] >= '0' && buf[k] <= '9') || buf[k] == '.'
              || buf[k] == 'e' || buf[k] == 'E' || buf[k] == '+'
              || buf[k] == '-'))
        {
            /* words (inf, nan) and other forms: not reproduced */
            if ((buf[k] | 0x20) == 'i' || (buf[k] | 0x20) == 'n') {
                kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "int() of this string");
            }
            return def;
        }
    }

    f = strtod(buf, &end);
    if (end != buf + n) {
        return def;
    }
    if (isinf(f) || fabs(f) > 9.2e18) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "int() of a huge number");
    }

    return kvr_jv_int((int64_t) f);
}


static kvr_jv_t
kvr_jto_float(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t def)
{
    char       buf[64], *end;
    size_t     k;
    kvr_jv_t   s;

    switch (v.type) {
    case KVR_JV_FLOAT:
        return v;
    case KVR_JV_INT:
    case KVR_JV_BOOL:
        return kvr_jv_float((double) v.u.i);
    case KVR_JV_STR:
        break;
    default:
        return def;
    }

    s = kvr_jstrip(v, NULL, 1, 1);
    if (s.len == 0) {
        return def;
    }
    if (s.len >= sizeof(buf)) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "float() of this string");
    }
    memcpy(buf, s.u.s, s.len);
    buf[s.len] = '\0';

    for (k = 0; k < s.len; k++) {
        if (!((buf[k] >= '0' && buf[k] <= '9') || buf[k] == '.'
              || buf[k] == 'e' || buf[k] == 'E' || buf[k] == '+'
              || buf[k] == '-'))
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "float() of this string");
        }
    }

    v = kvr_jv_float(strtod(buf, &end));
    return (end == buf + s.len) ? v : def;
}


/* stable merge sort of values (python's sorted) */
static void
kvr_jsort(kvr_jinja_render_t *r, kvr_jv_t *keys, kvr_jv_t *vals, uint32_t n,
    kvr_jv_t *tk, kvr_jv_t *tv, int reverse)
{
    uint32_t  h, i, j, k;
    int       c;

    if (n < 2) {
        return;
    }

    h = n / 2;
    kvr_jsort(r, keys, vals, h, tk, tv, reverse);
    kvr_jsort(r, keys + h, vals + h, n - h, tk, tv, reverse);

    memcpy(tk, keys, n * sizeof(kvr_jv_t));
    memcpy(tv, vals, n * sizeof(kvr_jv_t));

    for (i = 0, j = h, k = 0; k < n; k++) {
        if (i < h && j < n) {
            c = kvr_jv_cmp(r, tk[j], tk[i]);
            if (reverse ? c > 0 : c < 0) {
                keys[k] = tk[j];
                vals[k] = tv[j++];
            } else {
                keys[k] = tk[i];
                vals[k] = tv[i++];
            }
        } else if (i < h) {
            keys[k] = tk[i];
            vals[k] = tv[i++];
        } else {
            keys[k] = tk[j];
            vals[k] = tv[j++];
        }
    }
}


static kvr_jv_t
kvr_jsort_filter(kvr_jinja_render_t *r, kvr_jv_t seq, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    int           reverse, case_sensitive;
    uint32_t      i, n;
    kvr_jlist_t  *in, *out;
    kvr_jv_t     *keys, *tk, *tv, a, attr;
    static const char  *kw[] = {
        "reverse", "case_sensitive", "attribute", NULL
    };

    kvr_jcheck_kw(r, "sort", kwn, kwl, nkw, kw);

    reverse = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "reverse", &a)
              && kvr_jv_truthy(r, a);
    case_sensitive = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1,
                              "case_sensitive", &a) && kvr_jv_truthy(r, a);
    if (!kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 2, "attribute", &attr)) {
        attr = kvr_jv_none;
    }

    in = kvr_jiter(r, seq);
    n = in->n;
    kvr_jstep(r, n);

    out = kvr_jlist_new(r, n);
    keys = kvr_jr_alloc(r, (n + 1) * sizeof(kvr_jv_t));
    tk = kvr_jr_alloc(r, (n + 1) * sizeof(kvr_jv_t));
    tv = kvr_jr_alloc(r, (n + 1) * sizeof(kvr_jv_t));

    for (i = 0; i < n; i++) {
        out->items[i] = in->items[i];
        keys[i] = (attr.type == KVR_JV_NONE) ? in->items[i]
                  : kvr_jattr_path(r, in->items[i], attr);
        if (!case_sensitive && keys[i].type == KVR_JV_STR) {
            keys[i] = kvr_jcase(r, keys[i], 'l');
        }
    }
    out->n = n;

    kvr_jsort(r, keys, out->items, n, tk, tv, reverse);

    return kvr_jv_list(out);
}


static kvr_jv_t
kvr_jdictsort(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    int           case_sensitive, reverse, by_value;
    uint32_t      i, n;
    kvr_jlist_t  *out;
    kvr_jv_t     *keys, *tk, *tv, a;
    static const char  *kw[] = { "case_sensitive", "by", "reverse", NULL };

    kvr_jcheck_kw(r, "dictsort", kwn, kwl, nkw, kw);

    if (v.type != KVR_JV_DICT) {
        kvr_jfail(r, KVR_JINJA_ERROR, "dictsort of a non-mapping");
    }

    case_sensitive = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0,
                              "case_sensitive", &a) && kvr_jv_truthy(r, a);
    by_value = 0;
    if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1, "by", &a)) {
        if (kvr_jv_is_str(a, "value")) {
            by_value = 1;
        } else if (!kvr_jv_is_str(a, "key")) {
            kvr_jfail(r, KVR_JINJA_ERROR, "You can only sort by either "
                      "\"key\" or \"value\"");
        }
    }
    reverse = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 2, "reverse", &a)
              && kvr_jv_truthy(r, a);

    n = v.u.dict->n;
    kvr_jstep(r, n);
    out = kvr_jlist_new(r, n);
    keys = kvr_jr_alloc(r, (n + 1) * sizeof(kvr_jv_t));
    tk = kvr_jr_alloc(r, (n + 1) * sizeof(kvr_jv_t));
    tv = kvr_jr_alloc(r, (n + 1) * sizeof(kvr_jv_t));

    for (i = 0; i < n; i++) {
        out->items[i] = kvr_jtuple2(r, v.u.dict->keys[i], v.u.dict->vals[i]);
        keys[i] = by_value ? v.u.dict->vals[i] : v.u.dict->keys[i];
        if (!case_sensitive && keys[i].type == KVR_JV_STR) {
            keys[i] = kvr_jcase(r, keys[i], 'l');
        }
    }
    out->n = n;

    kvr_jsort(r, keys, out->items, n, tk, tv, reverse);

    return kvr_jv_list(out);
}


/*
 * A filter's handler: v is the value filtered, call its arguments; id
 * tells the filters that share a handler apart.
 */
typedef kvr_jv_t (*kvr_jfilter_pt)(kvr_jinja_render_t *r, int id, kvr_jv_t v,
    kvr_jargs_t *call);


static kvr_jv_t
kvr_jf_tojson(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    (void) id;

    return kvr_jtojson(r, v, call->args, call->nargs, call->kwn, call->kwl,
                       call->kwv, call->nkw);
}


static kvr_jv_t
kvr_jf_length(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    (void) id;
    (void) call;

    return kvr_jlength(r, v);
}


static kvr_jv_t
kvr_jf_trim(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    kvr_jv_t  chars;
    static const char  *kw[] = { "chars", NULL };

    (void) id;

    kvr_jargs_check(r, "trim", call, kw);
    v = kvr_jv_to_string(r, v);

    if (kvr_jargs_get(call, 0, "chars", &chars)
        && chars.type != KVR_JV_NONE)
    {
        kvr_jneed_str(r, chars, "trim");
        return kvr_jstrip(v, &chars, 1, 1);
    }

    return kvr_jstrip(v, NULL, 1, 1);
}


static kvr_jv_t
kvr_jf_string(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    (void) id;
    (void) call;

    return kvr_jv_to_string(r, v);
}


/* upper, lower, capitalize */
static kvr_jv_t
kvr_jf_case(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    (void) call;

    return kvr_jcase(r, kvr_jv_to_string(r, v),
                     (id == F_UPPER) ? 'u' : (id == F_LOWER) ? 'l' : 'c');
}


static kvr_jv_t
kvr_jf_title(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    (void) id;
    (void) call;

    return kvr_jtitle_filter(r, kvr_jv_to_string(r, v));
}


static kvr_jv_t
kvr_jf_default(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    kvr_jv_t  def, boolean;
    static const char  *kw[] = { "default_value", "boolean", NULL };

    (void) id;

    kvr_jargs_check(r, "default", call, kw);

    if (!kvr_jargs_get(call, 0, "default_value", &def)) {
        def = kvr_jv_str("", 0);
    }

    if (kvr_jargs_get(call, 1, "boolean", &boolean)
        && kvr_jv_truthy(r, boolean))
    {
        return kvr_jv_truthy(r, v) ? v : def;
    }

    return (v.type == KVR_JV_UNDEF) ? def : v;
}


static kvr_jv_t
kvr_jf_join(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    uint32_t      i;
    kvr_jv_t      sep, attr;
    kvr_jlist_t  *in, *l;
    static const char  *kw[] = { "d", "attribute", NULL };

    (void) id;

    kvr_jargs_check(r, "join", call, kw);

    if (!kvr_jargs_get(call, 0, "d", &sep)) {
        sep = kvr_jv_str("", 0);
    }

    sep = kvr_jv_to_string(r, sep);
    in = kvr_jiter(r, v);

    if (kvr_jargs_get(call, 1, "attribute", &attr)
        && attr.type != KVR_JV_NONE)
    {
        l = kvr_jlist_new(r, in->n);
        for (i = 0; i < in->n; i++) {
            l->items[l->n++] = kvr_jattr_path(r, in->items[i], attr);
        }
        in = l;
    }

    return kvr_jjoin(r, sep, in, 0);
}


static kvr_jv_t
kvr_jf_items(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    kvr_jv_t  out;

    (void) id;
    (void) call;

    if (v.type == KVR_JV_UNDEF) {
        out = kvr_jv_list(kvr_jlist_new(r, 0));
        out.flags = KVR_JV_GEN;
        return out;
    }

    if (v.type != KVR_JV_DICT) {
        kvr_jfail(r, KVR_JINJA_ERROR, "Can only get item pairs from a "
                  "mapping.");
    }

    return kvr_jdict_view(r, v.u.dict, M_ITEMS, KVR_JV_GEN);
}


static kvr_jv_t
kvr_jf_list(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    kvr_jlist_t  *in, *l;

    (void) id;
    (void) call;

    in = kvr_jiter(r, v);
    l = kvr_jlist_new(r, in->n);
    memcpy(l->items, in->items, in->n * sizeof(kvr_jv_t));
    l->n = in->n;

    return kvr_jv_list(l);
}


static kvr_jv_t
kvr_jf_first(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    kvr_jlist_t  *in;

    (void) id;
    (void) call;

    in = kvr_jiter(r, v);

    return in->n ? in->items[0] : kvr_jv_undef_named("first", 5);
}


static kvr_jv_t
kvr_jf_last(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    kvr_jlist_t  *in;

    (void) id;
    (void) call;

    if (v.type == KVR_JV_LIST && (v.flags & KVR_JV_GEN)) {
        kvr_jfail(r, KVR_JINJA_ERROR, "last of a generator");
    }

    if (v.type == KVR_JV_UNDEF || v.type == KVR_JV_DICT) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "last of this value");
    }

    in = kvr_jiter(r, v);

    return in->n ? in->items[in->n - 1] : kvr_jv_undef_named("last", 4);
}


static kvr_jv_t
kvr_jf_reverse(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    uint32_t      i;
    kvr_jv_t      out;
    kvr_jlist_t  *in, *l;

    (void) id;
    (void) call;

    in = kvr_jiter(r, v);
    l = kvr_jlist_new(r, in->n);

    for (i = in->n; i > 0; i--) {
        l->items[l->n++] = in->items[i - 1];
    }

    if (v.type == KVR_JV_STR) {
        return kvr_jjoin(r, kvr_jv_str("", 0), l, 0);
    }

    out = kvr_jv_list(l);
    out.flags = (v.type == KVR_JV_LIST && !(v.flags & KVR_JV_GEN))
                ? KVR_JV_GEN : 0;

    if (v.type != KVR_JV_LIST) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "reverse of this value");
    }

    return out;
}


/* select, reject, selectattr, rejectattr */
static kvr_jv_t
kvr_jf_select(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    int  by_attr;

    by_attr = (id == F_SELECTATTR || id == F_REJECTATTR);

    if (call->nkw) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "keyword arguments to %s",
                  by_attr ? "selectattr" : "select");
    }

    return kvr_jselect(r, v, call->args, call->nargs, by_attr,
                       id == F_SELECT || id == F_SELECTATTR);
}


static kvr_jv_t
kvr_jf_map(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    (void) id;

    return kvr_jmap(r, v, call->args, call->nargs, call->kwn, call->kwl,
                    call->kwv, call->nkw);
}


static kvr_jv_t
kvr_jf_replace(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    int64_t   count;
    kvr_jv_t  c;
    static const char  *kw[] = { "count", NULL };

    (void) id;

    kvr_jargs_check(r, "replace", call, kw);

    if (call->nargs < 2) {
        kvr_jfail(r, KVR_JINJA_ERROR, "replace needs two arguments");
    }

    count = -1;

    if (kvr_jargs_get(call, 2, "count", &c) && c.type != KVR_JV_NONE) {
        if (c.type != KVR_JV_INT) {
            kvr_jfail(r, KVR_JINJA_ERROR, "replace count must be int");
        }
        count = c.u.i;
    }

    return kvr_jreplace(r, kvr_jv_to_string(r, v),
                        kvr_jv_to_string(r, call->args[0]),
                        kvr_jv_to_string(r, call->args[1]), count);
}


static kvr_jv_t
kvr_jf_int(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    kvr_jv_t  def, base;
    static const char  *kw[] = { "default", "base", NULL };

    (void) id;

    kvr_jargs_check(r, "int", call, kw);

    if (v.type == KVR_JV_UNDEF) {
        kvr_jfail(r, KVR_JINJA_ERROR, "int of an undefined value");
    }

    if (!kvr_jargs_get(call, 0, "default", &def)) {
        def = kvr_jv_int(0);
    }

    if (kvr_jargs_get(call, 1, "base", &base)
        && !(base.type == KVR_JV_INT && base.u.i == 10))
    {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "int base other than 10");
    }

    return kvr_jto_int(r, v, def);
}


static kvr_jv_t
kvr_jf_float(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    kvr_jv_t  def;
    static const char  *kw[] = { "default", "base", NULL };

    (void) id;

    kvr_jargs_check(r, "float", call, kw);

    if (v.type == KVR_JV_UNDEF) {
        kvr_jfail(r, KVR_JINJA_ERROR, "float of an undefined value");
    }

    if (!kvr_jargs_get(call, 0, "default", &def)) {
        def = kvr_jv_float(0.0);
    }

    return kvr_jto_float(r, v, def);
}


static kvr_jv_t
kvr_jf_abs(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    (void) id;
    (void) call;

    if (v.type == KVR_JV_INT || v.type == KVR_JV_BOOL) {
        if (v.u.i == INT64_MIN) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "integer beyond 64 bits");
        }
        return kvr_jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
    }

    if (v.type == KVR_JV_FLOAT) {
        return kvr_jv_float(fabs(v.u.f));
    }

    kvr_jfail(r, KVR_JINJA_ERROR, "bad operand type for abs()");
}


static kvr_jv_t
kvr_jf_sum(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    int64_t       sum;
    uint32_t      i;
    kvr_jv_t      item, attr, out;
    kvr_jlist_t  *in;
    static const char  *kw[] = { "attribute", "start", NULL };

    (void) id;

    kvr_jargs_check(r, "sum", call, kw);

    if (!kvr_jargs_get(call, 1, "start", &out)) {
        out = kvr_jv_int(0);
    }

    if (!kvr_jargs_get(call, 0, "attribute", &attr)) {
        attr = kvr_jv_none;
    }

    in = kvr_jiter(r, v);

    for (i = 0; i < in->n; i++) {
        item = (attr.type == KVR_JV_NONE) ? in->items[i]
               : kvr_jattr_path(r, in->items[i], attr);

        if (!((item.type == KVR_JV_INT || item.type == KVR_JV_BOOL
               || item.type == KVR_JV_FLOAT)
              && (out.type == KVR_JV_INT || out.type == KVR_JV_BOOL
                  || out.type == KVR_JV_FLOAT)))
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "sum of non-numbers");
        }

        if (item.type == KVR_JV_FLOAT || out.type == KVR_JV_FLOAT) {
            out = kvr_jv_float((out.type == KVR_JV_FLOAT ? out.u.f
                                : (double) out.u.i)
                               + (item.type == KVR_JV_FLOAT ? item.u.f
                                  : (double) item.u.i));

        } else if (__builtin_add_overflow(out.u.i, item.u.i, &sum)) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "integer beyond 64 bits");

        } else {
            out = kvr_jv_int(sum);
        }
    }

    return out;
}


static kvr_jv_t
kvr_jf_indent(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    (void) id;

    /* jinja appends "\n" to the value: only strings work */
    if (v.type != KVR_JV_STR) {
        kvr_jfail(r, KVR_JINJA_ERROR, "indent of a %s", kvr_jv_type_name(v));
    }

    return kvr_jindent(r, v, call->args, call->nargs, call->kwn, call->kwl,
                       call->kwv, call->nkw);
}


static kvr_jv_t
kvr_jf_sort(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    (void) id;

    return kvr_jsort_filter(r, v, call->args, call->nargs, call->kwn,
                            call->kwl, call->kwv, call->nkw);
}


static kvr_jv_t
kvr_jf_dictsort(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jargs_t *call)
{
    (void) id;

    return kvr_jdictsort(r, v, call->args, call->nargs, call->kwn, call->kwl,
                         call->kwv, call->nkw);
}


/* the handler of each filter id (F_*) */
static const kvr_jfilter_pt  kvr_jfilter_handlers[] = {
    [F_ABS] = kvr_jf_abs,
    [F_CAPITALIZE] = kvr_jf_case,
    [F_COUNT] = kvr_jf_length,
    [F_DEFAULT] = kvr_jf_default,
    [F_FIRST] = kvr_jf_first,
    [F_FLOAT] = kvr_jf_float,
    [F_INDENT] = kvr_jf_indent,
    [F_INT] = kvr_jf_int,
    [F_ITEMS] = kvr_jf_items,
    [F_JOIN] = kvr_jf_join,
    [F_LAST] = kvr_jf_last,
    [F_LENGTH] = kvr_jf_length,
    [F_LIST] = kvr_jf_list,
    [F_LOWER] = kvr_jf_case,
    [F_MAP] = kvr_jf_map,
    [F_REJECT] = kvr_jf_select,
    [F_REJECTATTR] = kvr_jf_select,
    [F_REPLACE] = kvr_jf_replace,
    [F_REVERSE] = kvr_jf_reverse,
    [F_SELECT] = kvr_jf_select,
    [F_SELECTATTR] = kvr_jf_select,
    [F_SORT] = kvr_jf_sort,
    [F_STRING] = kvr_jf_string,
    [F_SUM] = kvr_jf_sum,
    [F_TITLE] = kvr_jf_title,
    [F_TOJSON] = kvr_jf_tojson,
    [F_TRIM] = kvr_jf_trim,
    [F_UPPER] = kvr_jf_case,
    [F_DICTSORT] = kvr_jf_dictsort
};


kvr_jv_t
kvr_jfilter_apply(kvr_jinja_render_t *r, int id, kvr_jv_t v,
    kvr_jv_t *args, uint32_t nargs, const char **kwn, uint32_t *kwl,
    kvr_jv_t *kwv, uint32_t nkw)
{
    kvr_jargs_t  call;

    if (id <= 0
        || (size_t) id >= sizeof(kvr_jfilter_handlers)
                          / sizeof(kvr_jfilter_handlers[0])
        || kvr_jfilter_handlers[id] == NULL)
    {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "unknown filter");
    }

    call.args = args;
    call.nargs = nargs;
    call.kwn = kwn;
    call.kwl = kwl;
    call.kwv = kwv;
    call.nkw = nkw;

    return kvr_jfilter_handlers[id](r, id, v, &call);
}
