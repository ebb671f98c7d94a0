/*
 * Copyright (C) kvroute developers
 *
 * The python methods of str, dict and list that templates call
 * (message.content.strip(), tools.items(), ...); python's other methods
 * are known by name and refused.
 */

#define _GNU_SOURCE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvr_jinja_builtin.h"


static const kvr_jname_t  kvr_jstr_methods[] = {
    { "startswith", M_STARTSWITH }, { "endswith", M_ENDSWITH },
    { "strip", M_STRIP }, { "lstrip", M_LSTRIP }, { "rstrip", M_RSTRIP },
    { "split", M_SPLIT }, { "rsplit", M_RSPLIT }, { "replace", M_REPLACE },
    { "upper", M_UPPER }, { "lower", M_LOWER }, { "title", M_TITLE },
    { "capitalize", M_CAPITALIZE }, { "find", M_FIND }, { "rfind", M_RFIND },
    { "count", M_COUNT }, { "join", M_JOIN }, { "isdigit", M_ISDIGIT },
    { "isspace", M_ISSPACE }, { "isalpha", M_ISALPHA },
    { "isalnum", M_ISALNUM }, { "removeprefix", M_REMOVEPREFIX },
    { "removesuffix", M_REMOVESUFFIX }, { "splitlines", M_SPLITLINES },
    /* python has these; calling them is refused */
    { "casefold", M_UNSUPPORTED }, { "center", M_UNSUPPORTED },
    { "encode", M_UNSUPPORTED }, { "expandtabs", M_UNSUPPORTED },
    { "format", M_UNSUPPORTED }, { "format_map", M_UNSUPPORTED },
    { "index", M_UNSUPPORTED }, { "isascii", M_UNSUPPORTED },
    { "isdecimal", M_UNSUPPORTED }, { "isidentifier", M_UNSUPPORTED },
    { "islower", M_UNSUPPORTED }, { "isnumeric", M_UNSUPPORTED },
    { "isprintable", M_UNSUPPORTED }, { "istitle", M_UNSUPPORTED },
    { "isupper", M_UNSUPPORTED }, { "ljust", M_UNSUPPORTED },
    { "maketrans", M_UNSUPPORTED }, { "partition", M_UNSUPPORTED },
    { "rindex", M_UNSUPPORTED }, { "rjust", M_UNSUPPORTED },
    { "rpartition", M_UNSUPPORTED }, { "swapcase", M_UNSUPPORTED },
    { "translate", M_UNSUPPORTED }, { "zfill", M_UNSUPPORTED },
    { NULL, 0 }
};

static const kvr_jname_t  kvr_jdict_methods[] = {
    { "items", M_ITEMS }, { "keys", M_KEYS }, { "values", M_VALUES },
    { "get", M_GET },
    { "clear", M_UNSUPPORTED }, { "copy", M_UNSUPPORTED },
    { "fromkeys", M_UNSUPPORTED }, { "pop", M_UNSUPPORTED },
    { "popitem", M_UNSUPPORTED }, { "setdefault", M_UNSUPPORTED },
    { "update", M_UNSUPPORTED },
    { NULL, 0 }
};

static const kvr_jname_t  kvr_jlist_methods[] = {
    { "count", M_LCOUNT }, { "index", M_LINDEX },
    { "append", M_UNSUPPORTED }, { "clear", M_UNSUPPORTED },
    { "copy", M_UNSUPPORTED }, { "extend", M_UNSUPPORTED },
    { "insert", M_UNSUPPORTED }, { "pop", M_UNSUPPORTED },
    { "remove", M_UNSUPPORTED }, { "reverse", M_UNSUPPORTED },
    { "sort", M_UNSUPPORTED },
    { NULL, 0 }
};


kvr_jv_t
kvr_jmethod_lookup(kvr_jinja_render_t *r, kvr_jv_t obj, const char *name,
    size_t len, int *found)
{
    int        id;
    kvr_jv_t   m;

    *found = 0;

    switch (obj.type) {
    case KVR_JV_STR:
        id = kvr_jname_find(kvr_jstr_methods, name, len);
        break;
    case KVR_JV_DICT:
        id = kvr_jname_find(kvr_jdict_methods, name, len);
        break;
    case KVR_JV_LIST:
        if (obj.flags & KVR_JV_OPAQUE) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "attributes of generators "
                      "or views");
        }
        if (obj.flags & KVR_JV_TUPLE) {
            id = (len == 5 && memcmp(name, "count", 5) == 0) ? M_LCOUNT
                 : (len == 5 && memcmp(name, "index", 5) == 0) ? M_LINDEX
                 : -1;
        } else {
            id = kvr_jname_find(kvr_jlist_methods, name, len);
        }
        break;
    case KVR_JV_INT:
    case KVR_JV_FLOAT:
    case KVR_JV_BOOL:
        if ((len == 4 && memcmp(name, "real", 4) == 0)
            || (len == 4 && memcmp(name, "imag", 4) == 0)
            || (len == 9 && memcmp(name, "numerator", 9) == 0)
            || (len == 11 && memcmp(name, "denominator", 11) == 0)
            || (len == 9 && memcmp(name, "conjugate", 9) == 0)
            || (len == 10 && memcmp(name, "is_integer", 10) == 0)
            || (len == 9 && memcmp(name, "bit_count", 9) == 0)
            || (len == 10 && memcmp(name, "bit_length", 10) == 0)
            || (len == 8 && memcmp(name, "to_bytes", 8) == 0)
            || (len == 3 && memcmp(name, "hex", 3) == 0))
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "number attributes");
        }
        return kvr_jv_undef;
    default:
        return kvr_jv_undef;
    }

    if (id < 0) {
        return kvr_jv_undef;
    }

    *found = 1;

    m = kvr_jv_undef;
    m.type = KVR_JV_METHOD;
    m.u.method = kvr_jr_alloc(r, sizeof(kvr_jmethod_t));
    m.u.method->self = obj;
    m.u.method->id = id;

    return m;
}


/*
 * A method's handler: s is the object the method is bound to, call its
 * arguments, already counted against the method's table row; id tells the
 * methods that share a handler apart.
 */
typedef kvr_jv_t (*kvr_jmethod_pt)(kvr_jinja_render_t *r, int id, kvr_jv_t s,
    kvr_jargs_t *call);

typedef struct {
    kvr_jmethod_pt       handler;
    int                  min;       /* positional arguments */
    int                  max;
} kvr_jmethod_spec_t;


/* startswith, endswith */
static kvr_jv_t
kvr_jm_prefix(kvr_jinja_render_t *r, int id, kvr_jv_t s, kvr_jargs_t *call)
{
    return kvr_jv_bool(kvr_jprefix(r, s, call->args[0], id == M_ENDSWITH));
}


/* strip, lstrip, rstrip */
static kvr_jv_t
kvr_jm_strip(kvr_jinja_render_t *r, int id, kvr_jv_t s, kvr_jargs_t *call)
{
    return kvr_jstrip_call(r, s, call->args, call->nargs, id != M_RSTRIP,
                           id != M_LSTRIP);
}


/* split, rsplit */
static kvr_jv_t
kvr_jm_split(kvr_jinja_render_t *r, int id, kvr_jv_t s, kvr_jargs_t *call)
{
    return kvr_jsplit(r, s, call->args, call->nargs, call->kwn, call->kwl,
                      call->kwv, call->nkw, id == M_RSPLIT);
}


static kvr_jv_t
kvr_jm_replace(kvr_jinja_render_t *r, int id, kvr_jv_t s, kvr_jargs_t *call)
{
    int64_t  count;

    (void) id;

    kvr_jneed_str(r, call->args[0], "replace");
    kvr_jneed_str(r, call->args[1], "replace");

    count = -1;

    if (call->nargs == 3) {
        if (call->args[2].type != KVR_JV_INT) {
            kvr_jfail(r, KVR_JINJA_ERROR, "replace count must be int");
        }
        count = call->args[2].u.i;
    }

    return kvr_jreplace(r, s, call->args[0], call->args[1], count);
}


/* upper, lower, title, capitalize */
static kvr_jv_t
kvr_jm_case(kvr_jinja_render_t *r, int id, kvr_jv_t s, kvr_jargs_t *call)
{
    (void) call;

    return kvr_jcase(r, s, (id == M_UPPER) ? 'u' : (id == M_LOWER) ? 'l'
                           : (id == M_TITLE) ? 't' : 'c');
}


/* find, rfind */
static kvr_jv_t
kvr_jm_find(kvr_jinja_render_t *r, int id, kvr_jv_t s, kvr_jargs_t *call)
{
    return kvr_jfind(r, s, call->args[0], id == M_RFIND);
}


static kvr_jv_t
kvr_jm_count(kvr_jinja_render_t *r, int id, kvr_jv_t s, kvr_jargs_t *call)
{
    kvr_jv_t  sub;

    (void) id;

    sub = call->args[0];
    kvr_jneed_str(r, sub, "count");

    if (sub.len == 0) {
        return kvr_jv_int((int64_t) kvr_jutf8_count(s.u.s, s.len) + 1);
    }

    return kvr_jv_int(kvr_jreplace(r, s, sub, kvr_jv_str("", 0), -1).len
                      == s.len ? 0
           : (int64_t) (s.len - kvr_jreplace(r, s, sub, kvr_jv_str("", 0),
                                             -1).len)
             / sub.len);
}


static kvr_jv_t
kvr_jm_join(kvr_jinja_render_t *r, int id, kvr_jv_t s, kvr_jargs_t *call)
{
    (void) id;

    return kvr_jjoin(r, s, kvr_jiter(r, call->args[0]), 1);
}


/* isdigit, isspace, isalpha, isalnum */
static kvr_jv_t
kvr_jm_is_class(kvr_jinja_render_t *r, int id, kvr_jv_t s, kvr_jargs_t *call)
{
    (void) call;

    return kvr_jis_class(r, s, id);
}


/* removeprefix, removesuffix */
static kvr_jv_t
kvr_jm_remove(kvr_jinja_render_t *r, int id, kvr_jv_t s, kvr_jargs_t *call)
{
    kvr_jv_t  affix;

    affix = call->args[0];
    kvr_jneed_str(r, affix, "removeprefix");

    if (kvr_jprefix(r, s, affix, id == M_REMOVESUFFIX)) {
        return (id == M_REMOVEPREFIX)
               ? kvr_jv_str(s.u.s + affix.len, s.len - affix.len)
               : kvr_jv_str(s.u.s, s.len - affix.len);
    }

    return s;
}


static kvr_jv_t
kvr_jm_splitlines(kvr_jinja_render_t *r, int id, kvr_jv_t s,
    kvr_jargs_t *call)
{
    (void) id;
    (void) call;

    return kvr_jv_list(kvr_jsplitlines(r, s));
}


/* dict's items, keys, values */
static kvr_jv_t
kvr_jm_view(kvr_jinja_render_t *r, int id, kvr_jv_t s, kvr_jargs_t *call)
{
    (void) call;

    return kvr_jdict_view(r, s.u.dict, id, KVR_JV_VIEW);
}


static kvr_jv_t
kvr_jm_get(kvr_jinja_render_t *r, int id, kvr_jv_t s, kvr_jargs_t *call)
{
    kvr_jv_t  *found;

    (void) id;

    if (!kvr_jv_hashable(call->args[0])) {
        kvr_jfail(r, KVR_JINJA_ERROR, "unhashable type");
    }

    found = kvr_jdict_get(s.u.dict, call->args[0]);
    if (found) {
        return *found;
    }

    return call->nargs == 2 ? call->args[1] : kvr_jv_none;
}


/* list's (and tuple's) count, index */
static kvr_jv_t
kvr_jm_list_count(kvr_jinja_render_t *r, int id, kvr_jv_t s,
    kvr_jargs_t *call)
{
    int64_t       count;
    uint32_t      i;
    kvr_jlist_t  *l;

    l = s.u.list;
    count = 0;

    for (i = 0; i < l->n; i++) {
        if (kvr_jv_eq(l->items[i], call->args[0])) {
            if (id == M_LINDEX) {
                return kvr_jv_int(i);
            }
            count++;
        }
    }

    if (id == M_LINDEX) {
        kvr_jfail(r, KVR_JINJA_ERROR, "x not in list");
    }

    return kvr_jv_int(count);
}


/* each method id's (M_*) handler and how many arguments it takes */
static const kvr_jmethod_spec_t  kvr_jmethods[] = {
    [M_STARTSWITH] = { kvr_jm_prefix, 1, 1 },
    [M_ENDSWITH] = { kvr_jm_prefix, 1, 1 },
    [M_STRIP] = { kvr_jm_strip, 0, 1 },
    [M_LSTRIP] = { kvr_jm_strip, 0, 1 },
    [M_RSTRIP] = { kvr_jm_strip, 0, 1 },
    [M_SPLIT] = { kvr_jm_split, 0, 2 },
    [M_RSPLIT] = { kvr_jm_split, 0, 2 },
    [M_REPLACE] = { kvr_jm_replace, 2, 3 },
    [M_UPPER] = { kvr_jm_case, 0, 0 },
    [M_LOWER] = { kvr_jm_case, 0, 0 },
    [M_TITLE] = { kvr_jm_case, 0, 0 },
    [M_CAPITALIZE] = { kvr_jm_case, 0, 0 },
    [M_FIND] = { kvr_jm_find, 1, 1 },
    [M_RFIND] = { kvr_jm_find, 1, 1 },
    [M_COUNT] = { kvr_jm_count, 1, 1 },
    [M_JOIN] = { kvr_jm_join, 1, 1 },
    [M_ISDIGIT] = { kvr_jm_is_class, 0, 0 },
    [M_ISSPACE] = { kvr_jm_is_class, 0, 0 },
    [M_ISALPHA] = { kvr_jm_is_class, 0, 0 },
    [M_ISALNUM] = { kvr_jm_is_class, 0, 0 },
    [M_REMOVEPREFIX] = { kvr_jm_remove, 1, 1 },
    [M_REMOVESUFFIX] = { kvr_jm_remove, 1, 1 },
    [M_SPLITLINES] = { kvr_jm_splitlines, 0, 0 },
    [M_ITEMS] = { kvr_jm_view, 0, 0 },
    [M_KEYS] = { kvr_jm_view, 0, 0 },
    [M_VALUES] = { kvr_jm_view, 0, 0 },
    [M_GET] = { kvr_jm_get, 1, 2 },
    [M_LCOUNT] = { kvr_jm_list_count, 1, 1 },
    [M_LINDEX] = { kvr_jm_list_count, 1, 1 }
};


kvr_jv_t
kvr_jmethod_call(kvr_jinja_render_t *r, kvr_jmethod_t *m, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    kvr_jargs_t                call;
    const kvr_jmethod_spec_t  *spec;

    if (m->id == -1) {
        /* loop.cycle(a, b, ...) */
        if (nargs == 0 || nkw) {
            kvr_jfail(r, KVR_JINJA_ERROR, "no items for cycling given");
        }
        return args[m->self.u.loop->index0 % nargs];
    }

    if (m->id == -2 || m->id == M_UNSUPPORTED) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "unsupported method");
    }

    if (m->id != M_SPLIT && m->id != M_RSPLIT && nkw) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "keyword arguments to a method");
    }

    if (m->id <= 0
        || (size_t) m->id >= sizeof(kvr_jmethods) / sizeof(kvr_jmethods[0])
        || kvr_jmethods[m->id].handler == NULL)
    {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "unsupported method");
    }

    spec = &kvr_jmethods[m->id];

    if ((int) nargs < spec->min || (int) nargs > spec->max) {
        kvr_jfail(r, KVR_JINJA_ERROR, "method takes %d to %d arguments "
                  "(%u given)", spec->min, spec->max, nargs);
    }

    call.args = args;
    call.nargs = nargs;
    call.kwn = kwn;
    call.kwl = kwl;
    call.kwv = kwv;
    call.nkw = nkw;

    return spec->handler(r, m->id, m->self, &call);
}
