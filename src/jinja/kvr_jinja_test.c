/*
 * Copyright (C) kvroute developers
 *
 * Jinja's tests (value is defined, is string, is eq(x), ...).
 */

#define _GNU_SOURCE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvr_jinja_builtin.h"


enum {
    T_DEFINED = 1, T_UNDEFINED, T_NONE, T_BOOLEAN, T_FALSE, T_TRUE,
    T_INTEGER, T_FLOAT, T_NUMBER, T_STRING, T_MAPPING, T_ITERABLE,
    T_SEQUENCE, T_CALLABLE, T_SAMEAS, T_IN, T_EQ, T_NE, T_LT, T_LE, T_GT,
    T_GE, T_ODD, T_EVEN, T_DIVISIBLEBY, T_LOWER, T_UPPER
};

static const kvr_jname_t  kvr_jtests[] = {
    { "defined", T_DEFINED }, { "undefined", T_UNDEFINED },
    { "none", T_NONE }, { "boolean", T_BOOLEAN }, { "false", T_FALSE },
    { "true", T_TRUE }, { "integer", T_INTEGER }, { "float", T_FLOAT },
    { "number", T_NUMBER }, { "string", T_STRING },
    { "mapping", T_MAPPING }, { "iterable", T_ITERABLE },
    { "sequence", T_SEQUENCE }, { "callable", T_CALLABLE },
    { "sameas", T_SAMEAS }, { "in", T_IN },
    { "eq", T_EQ }, { "equalto", T_EQ }, { "==", T_EQ },
    { "ne", T_NE }, { "!=", T_NE },
    { "lt", T_LT }, { "lessthan", T_LT }, { "<", T_LT },
    { "le", T_LE }, { "<=", T_LE },
    { "gt", T_GT }, { "greaterthan", T_GT }, { ">", T_GT },
    { "ge", T_GE }, { ">=", T_GE },
    { "odd", T_ODD }, { "even", T_EVEN }, { "divisibleby", T_DIVISIBLEBY },
    { "lower", T_LOWER }, { "upper", T_UPPER },
    { NULL, 0 }
};

static int kvr_jtest_type(kvr_jinja_render_t *r, int id, kvr_jv_t v);
static int kvr_jtest_value(kvr_jinja_render_t *r, int id, kvr_jv_t v,
    kvr_jv_t *args);


int
kvr_jtest_id(const char *name, size_t len)
{
    return kvr_jname_find(kvr_jtests, name, len);
}


int
kvr_jtest_apply(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jv_t *args,
    uint32_t nargs)
{
    int  rc;

    if (id <= T_CALLABLE && nargs != 0) {
        kvr_jfail(r, KVR_JINJA_ERROR, "test takes 1 positional argument "
                  "but %u were given", nargs + 1);
    }

    rc = kvr_jtest_type(r, id, v);
    if (rc >= 0) {
        return rc;
    }

    if (id == T_ODD || id == T_EVEN || id == T_LOWER || id == T_UPPER) {
        if (nargs != 0) {
            kvr_jfail(r, KVR_JINJA_ERROR, "test takes no arguments");
        }

    } else if (nargs != 1) {
        kvr_jfail(r, KVR_JINJA_ERROR, "test takes one argument");
    }

    return kvr_jtest_value(r, id, v, args);
}


/* the tests of a value's type (no argument); -1 for another test */
static int
kvr_jtest_type(kvr_jinja_render_t *r, int id, kvr_jv_t v)
{
    switch (id) {
    case T_DEFINED:
        return v.type != KVR_JV_UNDEF;
    case T_UNDEFINED:
        return v.type == KVR_JV_UNDEF;
    case T_NONE:
        return v.type == KVR_JV_NONE;
    case T_BOOLEAN:
        return v.type == KVR_JV_BOOL;
    case T_FALSE:
        return v.type == KVR_JV_BOOL && v.u.i == 0;
    case T_TRUE:
        return v.type == KVR_JV_BOOL && v.u.i == 1;
    case T_INTEGER:
        return v.type == KVR_JV_INT;
    case T_FLOAT:
        return v.type == KVR_JV_FLOAT;
    case T_NUMBER:
        return v.type == KVR_JV_INT || v.type == KVR_JV_FLOAT
               || v.type == KVR_JV_BOOL;
    case T_STRING:
        return v.type == KVR_JV_STR;
    case T_MAPPING:
        return v.type == KVR_JV_DICT;
    case T_ITERABLE:
        return v.type == KVR_JV_STR || v.type == KVR_JV_LIST
               || v.type == KVR_JV_DICT || v.type == KVR_JV_UNDEF;
    case T_SEQUENCE:
        if (v.type == KVR_JV_UNDEF || (v.type == KVR_JV_LIST
                                       && (v.flags & KVR_JV_OPAQUE)))
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "sequence test");
        }
        return v.type == KVR_JV_STR || v.type == KVR_JV_LIST
               || v.type == KVR_JV_DICT;
    case T_CALLABLE:
        /* jinja's Undefined has __call__ */
        return v.type == KVR_JV_UNDEF || v.type == KVR_JV_FUNC
               || v.type == KVR_JV_METHOD || v.type == KVR_JV_MACRO
               || v.type == KVR_JV_LOOP;
    default:
        return -1;
    }
}


/* the tests of a value, against args[0] for those that take one */
static int
kvr_jtest_value(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jv_t *args)
{
    uint32_t  i;
    kvr_jv_t  m;

    switch (id) {
    case T_SAMEAS:
        if ((v.type == KVR_JV_NONE || v.type == KVR_JV_BOOL)
            || (args[0].type == KVR_JV_NONE || args[0].type == KVR_JV_BOOL))
        {
            return v.type == args[0].type && v.u.i == args[0].u.i;
        }
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "sameas on objects");
    case T_IN:
        m = args[0];
        if (m.type == KVR_JV_STR) {
            kvr_jneed_str(r, v, "in");
            return v.len == 0 || memmem(m.u.s, m.len, v.u.s, v.len) != NULL;
        }
        if (m.type == KVR_JV_DICT) {
            return kvr_jdict_get(m.u.dict, v) != NULL;
        }
        if (m.type == KVR_JV_LIST) {
            for (i = 0; i < m.u.list->n; i++) {
                if (kvr_jv_eq(m.u.list->items[i], v)) {
                    return 1;
                }
            }
            return 0;
        }
        kvr_jfail(r, KVR_JINJA_ERROR, "argument is not iterable");
    case T_EQ:
        return kvr_jv_eq(v, args[0]);
    case T_NE:
        return !kvr_jv_eq(v, args[0]);
    case T_LT:
        return kvr_jv_cmp(r, v, args[0]) < 0;
    case T_LE:
        return kvr_jv_cmp(r, v, args[0]) <= 0;
    case T_GT:
        return kvr_jv_cmp(r, v, args[0]) > 0;
    case T_GE:
        return kvr_jv_cmp(r, v, args[0]) >= 0;
    case T_ODD:
    case T_EVEN:
        if (v.type != KVR_JV_INT && v.type != KVR_JV_BOOL) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "odd/even of a non-integer");
        }
        return (id == T_ODD) == ((v.u.i & 1) != 0);
    case T_DIVISIBLEBY:
        if ((v.type != KVR_JV_INT && v.type != KVR_JV_BOOL)
            || (args[0].type != KVR_JV_INT && args[0].type != KVR_JV_BOOL))
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "divisibleby of non-integers");
        }
        if (args[0].u.i == 0) {
            kvr_jfail(r, KVR_JINJA_ERROR, "integer modulo by zero");
        }
        if (args[0].u.i == -1) {
            return 1;
        }
        return v.u.i % args[0].u.i == 0;
    case T_LOWER:
    case T_UPPER:
        v = kvr_jv_to_string(r, v);
        m = kvr_jcase(r, v, id == T_LOWER ? 'l' : 'u');
        /* python: at least one cased character and no opposite case */
        for (i = 0; i < v.len; i++) {
            if ((v.u.s[i] | 0x20) >= 'a' && (v.u.s[i] | 0x20) <= 'z') {
                return memcmp(m.u.s, v.u.s, v.len) == 0;
            }
        }
        return 0;
    default:
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "unknown test");
    }
}
