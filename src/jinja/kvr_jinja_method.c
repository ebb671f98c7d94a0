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


kvr_jv_t
kvr_jmethod_call(kvr_jinja_render_t *r, kvr_jmethod_t *m, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    int64_t       count;
    uint32_t      i;
    kvr_jv_t      s, v, *found;
    kvr_jloop_t  *lp;
    kvr_jlist_t  *l;

    s = m->self;

    if (m->id == -1) {
        /* loop.cycle(a, b, ...) */
        lp = s.u.loop;
        if (nargs == 0 || nkw) {
            kvr_jfail(r, KVR_JINJA_ERROR, "no items for cycling given");
        }
        return args[lp->index0 % nargs];
    }

    if (m->id == -2 || m->id == M_UNSUPPORTED) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "unsupported method");
    }

    if (m->id != M_SPLIT && m->id != M_RSPLIT && nkw) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "keyword arguments to a method");
    }

#define KVR_JNARGS(lo, hi)                                                 \
    if ((int) nargs < (lo) || (int) nargs > (hi)) {                        \
        kvr_jfail(r, KVR_JINJA_ERROR, "method takes %d to %d arguments "   \
                  "(%u given)", (lo), (hi), nargs);                        \
    }

    switch (m->id) {

    case M_STARTSWITH:
    case M_ENDSWITH:
        KVR_JNARGS(1, 1);
        return kvr_jv_bool(kvr_jprefix(r, s, args[0], m->id == M_ENDSWITH));

    case M_STRIP:
        KVR_JNARGS(0, 1);
        return kvr_jstrip_call(r, s, args, nargs, 1, 1);
    case M_LSTRIP:
        KVR_JNARGS(0, 1);
        return kvr_jstrip_call(r, s, args, nargs, 1, 0);
    case M_RSTRIP:
        KVR_JNARGS(0, 1);
        return kvr_jstrip_call(r, s, args, nargs, 0, 1);

    case M_SPLIT:
    case M_RSPLIT:
        KVR_JNARGS(0, 2);
        return kvr_jsplit(r, s, args, nargs, kwn, kwl, kwv, nkw,
                          m->id == M_RSPLIT);

    case M_REPLACE:
        KVR_JNARGS(2, 3);
        kvr_jneed_str(r, args[0], "replace");
        kvr_jneed_str(r, args[1], "replace");
        count = -1;
        if (nargs == 3) {
            if (args[2].type != KVR_JV_INT) {
                kvr_jfail(r, KVR_JINJA_ERROR, "replace count must be int");
            }
            count = args[2].u.i;
        }
        return kvr_jreplace(r, s, args[0], args[1], count);

    case M_UPPER:
        KVR_JNARGS(0, 0);
        return kvr_jcase(r, s, 'u');
    case M_LOWER:
        KVR_JNARGS(0, 0);
        return kvr_jcase(r, s, 'l');
    case M_TITLE:
        KVR_JNARGS(0, 0);
        return kvr_jcase(r, s, 't');
    case M_CAPITALIZE:
        KVR_JNARGS(0, 0);
        return kvr_jcase(r, s, 'c');

    case M_FIND:
    case M_RFIND:
        KVR_JNARGS(1, 1);
        return kvr_jfind(r, s, args[0], m->id == M_RFIND);

    case M_COUNT:
        KVR_JNARGS(1, 1);
        kvr_jneed_str(r, args[0], "count");
        if (args[0].len == 0) {
            return kvr_jv_int((int64_t) kvr_jutf8_count(s.u.s, s.len) + 1);
        }
        return kvr_jv_int(kvr_jreplace(r, s, args[0], kvr_jv_str("", 0),
                                       -1).len == s.len ? 0
               : (int64_t) (s.len - kvr_jreplace(r, s, args[0],
                                                 kvr_jv_str("", 0), -1).len)
                 / args[0].len);

    case M_JOIN:
        KVR_JNARGS(1, 1);
        return kvr_jjoin(r, s, kvr_jiter(r, args[0]), 1);

    case M_ISDIGIT:
    case M_ISSPACE:
    case M_ISALPHA:
    case M_ISALNUM:
        KVR_JNARGS(0, 0);
        return kvr_jis_class(r, s, m->id);

    case M_REMOVEPREFIX:
    case M_REMOVESUFFIX:
        KVR_JNARGS(1, 1);
        kvr_jneed_str(r, args[0], "removeprefix");
        if (kvr_jprefix(r, s, args[0], m->id == M_REMOVESUFFIX)) {
            return (m->id == M_REMOVEPREFIX)
                   ? kvr_jv_str(s.u.s + args[0].len, s.len - args[0].len)
                   : kvr_jv_str(s.u.s, s.len - args[0].len);
        }
        return s;

    case M_SPLITLINES:
        KVR_JNARGS(0, 0);
        return kvr_jv_list(kvr_jsplitlines(r, s));

    case M_ITEMS:
    case M_KEYS:
    case M_VALUES:
        KVR_JNARGS(0, 0);
        return kvr_jdict_view(r, s.u.dict, m->id, KVR_JV_VIEW);

    case M_GET:
        KVR_JNARGS(1, 2);
        if (!kvr_jv_hashable(args[0])) {
            kvr_jfail(r, KVR_JINJA_ERROR, "unhashable type");
        }
        found = kvr_jdict_get(s.u.dict, args[0]);
        if (found) {
            return *found;
        }
        return nargs == 2 ? args[1] : kvr_jv_none;

    case M_LCOUNT:
    case M_LINDEX:
        KVR_JNARGS(1, 1);
        l = s.u.list;
        count = 0;
        for (i = 0; i < l->n; i++) {
            if (kvr_jv_eq(l->items[i], args[0])) {
                if (m->id == M_LINDEX) {
                    return kvr_jv_int(i);
                }
                count++;
            }
        }
        if (m->id == M_LINDEX) {
            kvr_jfail(r, KVR_JINJA_ERROR, "x not in list");
        }
        return kvr_jv_int(count);

    default:
        break;
    }

#undef KVR_JNARGS

    v = kvr_jv_undef;
    kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "unsupported method");
    return v;
}
