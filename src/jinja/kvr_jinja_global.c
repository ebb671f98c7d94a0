/*
 * Copyright (C) kvroute developers
 *
 * Jinja's global functions: range, namespace and dict, and
 * transformers' raise_exception and strftime_now.
 */

#define _GNU_SOURCE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvr_jinja_builtin.h"


enum {
    G_RANGE = 1, G_NAMESPACE, G_RAISE, G_STRFTIME, G_DICT, G_UNSUPPORTED
};

static const kvr_jname_t  kvr_jglobals[] = {
    { "range", G_RANGE }, { "namespace", G_NAMESPACE },
    { "raise_exception", G_RAISE }, { "strftime_now", G_STRFTIME },
    { "dict", G_DICT }, { "lipsum", G_UNSUPPORTED },
    { "cycler", G_UNSUPPORTED }, { "joiner", G_UNSUPPORTED },
    { NULL, 0 }
};


static kvr_jv_t kvr_jrange(kvr_jinja_render_t *r, kvr_jv_t *args,
    uint32_t nargs);


int
kvr_jglobal_id(const char *name, size_t len)
{
    return kvr_jname_find(kvr_jglobals, name, len);
}


static kvr_jv_t
kvr_jrange(kvr_jinja_render_t *r, kvr_jv_t *args, uint32_t nargs)
{
    int64_t       start, stop, step, n, i;
    uint32_t      k;
    kvr_jlist_t  *l;
    kvr_jv_t      out;

    if (nargs < 1 || nargs > 3) {
        kvr_jfail(r, KVR_JINJA_ERROR, "range expected 1 to 3 arguments");
    }

    for (k = 0; k < nargs; k++) {
        if (args[k].type != KVR_JV_INT && args[k].type != KVR_JV_BOOL) {
            kvr_jfail(r, KVR_JINJA_ERROR, "range() arguments must be "
                      "integers");
        }
    }

    start = (nargs == 1) ? 0 : args[0].u.i;
    stop = (nargs == 1) ? args[0].u.i : args[1].u.i;
    step = (nargs == 3) ? args[2].u.i : 1;

    if (step == 0) {
        kvr_jfail(r, KVR_JINJA_ERROR, "range() arg 3 must not be zero");
    }

    n = 0;
    if (step > 0 && start < stop) {
        n = (int64_t) (((uint64_t) stop - (uint64_t) start - 1)
                       / (uint64_t) step + 1);
    } else if (step < 0 && start > stop) {
        n = (int64_t) (((uint64_t) start - (uint64_t) stop - 1)
                       / (uint64_t) (-step) + 1);
    }

    /* jinja's sandbox refuses ranges above MAX_RANGE (100000) */
    if (n > 100000) {
        kvr_jfail(r, KVR_JINJA_ERROR, "Range too big. The sandbox blocks "
                  "ranges larger than MAX_RANGE (100000).");
    }

    kvr_jstep(r, (uint64_t) n);
    l = kvr_jlist_new(r, (size_t) n);
    for (i = 0; i < n; i++) {
        l->items[l->n++] = kvr_jv_int(start + i * step);
    }

    out = kvr_jv_list(l);
    out.flags = KVR_JV_NOPRINT;

    return out;
}


kvr_jv_t
kvr_jglobal_call(kvr_jinja_render_t *r, int id, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    char          buf[512];
    uint32_t      i;
    time_t        now;
    struct tm     tm;
    size_t        n;
    kvr_jdict_t  *d;
    kvr_jv_t      v, fmt;

    switch (id) {

    case G_RANGE:
        if (nkw) {
            kvr_jfail(r, KVR_JINJA_ERROR, "range() takes no keyword "
                      "arguments");
        }
        return kvr_jrange(r, args, nargs);

    case G_NAMESPACE:
    case G_DICT:
        if (nargs > 1) {
            kvr_jfail(r, KVR_JINJA_ERROR, "expected at most 1 positional "
                      "argument");
        }
        d = kvr_jdict_new(r, 0);
        if (nargs == 1) {
            if (args[0].type != KVR_JV_DICT) {
                kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "namespace() or dict() "
                          "of a non-mapping");
            }
            for (i = 0; i < args[0].u.dict->n; i++) {
                kvr_jdict_set(r, d, args[0].u.dict->keys[i],
                              args[0].u.dict->vals[i]);
            }
        }
        for (i = 0; i < nkw; i++) {
            kvr_jdict_set(r, d, kvr_jv_str(kwn[i], kwl[i]), kwv[i]);
        }
        v = kvr_jv_dict(d);
        if (id == G_NAMESPACE) {
            v.type = KVR_JV_NS;
        }
        return v;

    case G_RAISE:
        if (nargs >= 1) {
            v = kvr_jv_to_string(r, args[0]);
            kvr_jfail(r, KVR_JINJA_RAISED, "raise_exception: %.*s",
                      (int) (v.len > 200 ? 200 : v.len), v.u.s);
        }
        kvr_jfail(r, KVR_JINJA_RAISED, "raise_exception");

    case G_STRFTIME:
        if (nargs != 1 || nkw || args[0].type != KVR_JV_STR) {
            kvr_jfail(r, KVR_JINJA_ERROR, "strftime_now(format)");
        }
        fmt = kvr_jv_strdup(r, args[0].u.s, args[0].len);
        if (strlen(fmt.u.s) != fmt.len) {
            kvr_jfail(r, KVR_JINJA_ERROR, "embedded null character");
        }
        for (i = 0; i + 1 < fmt.len; i++) {
            /* only the conversions glibc and python agree on */
            if (fmt.u.s[i] == '%') {
                i++;
                if (strchr("aAbBcdHIjmMpSUwWxXyYzZ%GuVeCDFgnrRtTh",
                           fmt.u.s[i]) == NULL)
                {
                    kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "strftime "
                              "conversion %%%c", fmt.u.s[i]);
                }
            }
        }
        now = time(NULL);
        if (r->limits.utc) {
            gmtime_r(&now, &tm);
        } else {
            localtime_r(&now, &tm);
        }
        n = strftime(buf, sizeof(buf), fmt.u.s, &tm);
        if (n == 0 && fmt.len) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "strftime result too long");
        }
        return kvr_jv_strdup(r, buf, n);

    default:
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "unsupported global function");
    }
}
