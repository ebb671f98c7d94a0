/*
 * Copyright (C) kvroute developers
 *
 * What the Jinja subset's builtins share (kvr_jinja_builtin.h): names
 * to ids, arguments bound by position or keyword, and the tuples and dict
 * views that methods and filters both make.  The builtins themselves are
 * in kvr_jinja_filter.c, _test.c, _global.c and _method.c; each follows
 * Jinja2 3.1 and CPython, and where exactness would need Unicode tables
 * (case mapping of non-ASCII letters) the render fails instead of
 * guessing.
 */

#define _GNU_SOURCE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvr_jinja_builtin.h"


int
kvr_jname_find(const kvr_jname_t *table, const char *name, size_t len)
{
    for ( ; table->name; table++) {
        if (strlen(table->name) == len && memcmp(table->name, name, len) == 0)
        {
            return table->id;
        }
    }

    return -1;
}


/* argument binding: positional index pos or keyword name */
int
kvr_jarg(kvr_jv_t *args, uint32_t nargs, const char **kwn, uint32_t *kwl,
    kvr_jv_t *kwv, uint32_t nkw, uint32_t pos, const char *name,
    kvr_jv_t *out)
{
    uint32_t  k;

    if (pos < nargs) {
        *out = args[pos];
        return 1;
    }

    for (k = 0; k < nkw; k++) {
        if (kwl[k] == strlen(name) && memcmp(kwn[k], name, kwl[k]) == 0) {
            *out = kwv[k];
            return 1;
        }
    }

    return 0;
}


/* refuses keyword names that are not in the list */
void
kvr_jcheck_kw(kvr_jinja_render_t *r, const char *what, const char **kwn,
    uint32_t *kwl, uint32_t nkw, const char *const *allowed)
{
    uint32_t  k, i;

    for (k = 0; k < nkw; k++) {
        for (i = 0; allowed && allowed[i]; i++) {
            if (kwl[k] == strlen(allowed[i])
                && memcmp(kwn[k], allowed[i], kwl[k]) == 0)
            {
                break;
            }
        }
        if (allowed == NULL || allowed[i] == NULL) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "%s: unsupported keyword "
                      "argument '%.*s'", what, (int) kwl[k], kwn[k]);
        }
    }
}


/* kvr_jarg() on a call's arguments */
int
kvr_jargs_get(kvr_jargs_t *call, uint32_t pos, const char *name,
    kvr_jv_t *out)
{
    return kvr_jarg(call->args, call->nargs, call->kwn, call->kwl, call->kwv,
                    call->nkw, pos, name, out);
}


/* kvr_jcheck_kw() on a call's keywords */
void
kvr_jargs_check(kvr_jinja_render_t *r, const char *what, kvr_jargs_t *call,
    const char *const *allowed)
{
    kvr_jcheck_kw(r, what, call->kwn, call->kwl, call->nkw, allowed);
}


void
kvr_jneed_str(kvr_jinja_render_t *r, kvr_jv_t v, const char *what)
{
    if (v.type != KVR_JV_STR) {
        kvr_jfail(r, KVR_JINJA_ERROR, "%s: expected a string, got %s", what,
                  kvr_jv_type_name(v));
    }
}


kvr_jv_t
kvr_jtuple2(kvr_jinja_render_t *r, kvr_jv_t a, kvr_jv_t b)
{
    kvr_jlist_t  *t;
    kvr_jv_t      v;

    t = kvr_jlist_new(r, 2);
    t->items[0] = a;
    t->items[1] = b;
    t->n = 2;
    v = kvr_jv_list(t);
    v.flags = KVR_JV_TUPLE;

    return v;
}


kvr_jv_t
kvr_jdict_view(kvr_jinja_render_t *r, kvr_jdict_t *d, int what, int flags)
{
    uint32_t      i;
    kvr_jlist_t  *l;
    kvr_jv_t      v;

    l = kvr_jlist_new(r, d->n);
    for (i = 0; i < d->n; i++) {
        if (what == M_ITEMS) {
            l->items[i] = kvr_jtuple2(r, d->keys[i], d->vals[i]);
        } else {
            l->items[i] = (what == M_KEYS) ? d->keys[i] : d->vals[i];
        }
    }
    l->n = d->n;

    v = kvr_jv_list(l);
    v.flags = flags;

    return v;
}
