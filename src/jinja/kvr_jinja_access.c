/*
 * Copyright (C) kvroute developers
 *
 * Attribute and item lookup the way Jinja2's sandbox does it (python
 * methods first, then items), the loop object's attributes, and slices.
 */

#define _GNU_SOURCE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvr_jinja_int.h"


static int64_t kvr_jindex(kvr_jinja_render_t *r, kvr_jv_t v, int *ok);
static kvr_jv_t kvr_jloop_attr(kvr_jinja_render_t *r, kvr_jloop_t *lp,
    const char *name, size_t len);


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


kvr_jv_t
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
