/*
 * Copyright (C) kvroute developers
 *
 * The Jinja subset's evaluator: statements, expressions, scopes (a for
 * body gets a fresh scope per iteration, so a set inside it does not
 * leak out, as in Jinja2), macros, and the render entry point with its
 * limits.  Lookups are kvr_jinja_access.c's, operators kvr_jinja_op.c's,
 * the builtins kvr_jinja_filter.c's, _test.c's, _global.c's and
 * _method.c's: they call back into nothing here.
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
static kvr_jv_t kvr_jeval_slice(kvr_jinja_render_t *r, kvr_jscope_t *sc,
    kvr_jn_t *n);
static kvr_jv_t kvr_jeval_binop(kvr_jinja_render_t *r, kvr_jscope_t *sc,
    kvr_jn_t *n);
static kvr_jv_t kvr_jeval_sign(kvr_jinja_render_t *r, kvr_jscope_t *sc,
    kvr_jn_t *n);
static kvr_jv_t kvr_jeval_compare(kvr_jinja_render_t *r, kvr_jscope_t *sc,
    kvr_jn_t *n);
static kvr_jv_t kvr_jeval_display(kvr_jinja_render_t *r, kvr_jscope_t *sc,
    kvr_jn_t *n);
static kvr_jv_t kvr_jeval_call(kvr_jinja_render_t *r, kvr_jscope_t *sc,
    kvr_jn_t *n);


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
    kvr_jv_t  a, out;

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
        out = kvr_jeval_slice(r, sc, n);
        break;

    case KVR_JN_BINOP:
        out = kvr_jeval_binop(r, sc, n);
        break;

    case KVR_JN_NEG:
    case KVR_JN_POS:
        out = kvr_jeval_sign(r, sc, n);
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
        out = kvr_jeval_compare(r, sc, n);
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
    case KVR_JN_DICT:
        out = kvr_jeval_display(r, sc, n);
        break;

    case KVR_JN_CALL:
    case KVR_JN_FILTER:
    case KVR_JN_TEST:
        out = kvr_jeval_call(r, sc, n);
        break;

    default:
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "bad expression node");
    }

    r->depth--;
    return out;
}


/* obj[start:stop:step] */
static kvr_jv_t
kvr_jeval_slice(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *n)
{
    kvr_jv_t  a, parts[3];

    a = kvr_jeval(r, sc, n->a);
    parts[0] = n->b ? kvr_jeval(r, sc, n->b) : kvr_jv_none;
    parts[1] = n->c ? kvr_jeval(r, sc, n->c) : kvr_jv_none;
    parts[2] = n->d ? kvr_jeval(r, sc, n->d) : kvr_jv_none;

    return kvr_jslice(r, a, parts);
}


static kvr_jv_t
kvr_jeval_binop(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *n)
{
    kvr_jv_t  a, b;

    a = kvr_jeval(r, sc, n->a);
    b = kvr_jeval(r, sc, n->b);

    if (n->op == KVR_JOP_POW && n->id
        && ((a.type == KVR_JV_FLOAT && a.u.f < 0)
            || (a.type == KVR_JV_INT && a.u.i < 0)))
    {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "negative constant base of "
                  "**");
    }

    return kvr_jbinop(r, n->op, a, b);
}


/* unary - and + */
static kvr_jv_t
kvr_jeval_sign(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *n)
{
    kvr_jv_t  a;

    a = kvr_jeval(r, sc, n->a);

    if (a.type == KVR_JV_FLOAT) {
        return kvr_jv_float(n->kind == KVR_JN_NEG ? -a.u.f : a.u.f);
    }

    if (a.type == KVR_JV_INT || a.type == KVR_JV_BOOL) {
        if (n->kind == KVR_JN_NEG && a.u.i == INT64_MIN) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "integer beyond 64 bits");
        }
        return kvr_jv_int(n->kind == KVR_JN_NEG ? -a.u.i : a.u.i);
    }

    kvr_jfail(r, KVR_JINJA_ERROR, "bad operand type for unary %c: '%s'",
              n->kind == KVR_JN_NEG ? '-' : '+', kvr_jv_type_name(a));
}


/* a comparison chain: a < b <= c is a < b and b <= c, b evaluated once */
static kvr_jv_t
kvr_jeval_compare(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *n)
{
    uint32_t  i;
    kvr_jv_t  a, b;

    a = kvr_jeval(r, sc, n->args[0]);

    for (i = 1; i < n->nargs; i++) {
        b = kvr_jeval(r, sc, n->args[i]);
        if (!kvr_jcompare(r, n->ops[i - 1], a, b)) {
            return kvr_jv_bool(0);
        }
        a = b;
    }

    return kvr_jv_bool(1);
}


/* list, tuple and dict displays: [a, b], (a, b), {k: v} */
static kvr_jv_t
kvr_jeval_display(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *n)
{
    uint32_t      i;
    kvr_jv_t      k, out;
    kvr_jlist_t  *l;
    kvr_jdict_t  *d;

    if (n->kind == KVR_JN_DICT) {
        d = kvr_jdict_new(r, n->nargs / 2);
        for (i = 0; i + 1 < n->nargs; i += 2) {
            k = kvr_jeval(r, sc, n->args[i]);
            if (!kvr_jv_hashable(k) || k.type == KVR_JV_UNDEF) {
                kvr_jfail(r, KVR_JINJA_ERROR, "unhashable dict key");
            }
            kvr_jdict_set(r, d, k, kvr_jeval(r, sc, n->args[i + 1]));
        }
        return kvr_jv_dict(d);
    }

    l = kvr_jlist_new(r, n->nargs);
    for (i = 0; i < n->nargs; i++) {
        l->items[l->n++] = kvr_jeval(r, sc, n->args[i]);
    }

    out = kvr_jv_list(l);
    if (n->kind == KVR_JN_TUPLE) {
        out.flags = KVR_JV_TUPLE;
    }

    return out;
}


/* f(args), value | filter(args), value is test(args) */
static kvr_jv_t
kvr_jeval_call(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *n)
{
    int        t;
    kvr_jv_t   a, out, *args, *kwv;

    a = kvr_jeval(r, sc, n->a);
    kvr_jeval_args(r, sc, n, &args, &kwv);

    switch (n->kind) {

    case KVR_JN_CALL:
        return kvr_jcall(r, a, args, n->nargs, n->kwn, n->kwl, kwv, n->nkw);

    case KVR_JN_FILTER:
        kvr_jstep(r, 1);
        t = kvr_jfilter_lazy(n->id);
        r->lazy += t;
        out = kvr_jfilter_apply(r, n->id, a, args, n->nargs, n->kwn, n->kwl,
                                kwv, n->nkw);
        r->lazy -= t;
        return out;

    default:
        t = kvr_jtest_apply(r, n->id, a, args, n->nargs);
        return kvr_jv_bool(n->op ? !t : t);
    }
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
    kvr_jn_t      *branch;

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
            /* the elif chain walked aside: n stays this statement */
            for (branch = n; ; branch = branch->c) {
                if (kvr_jv_truthy(r, kvr_jeval(r, sc, branch->a))) {
                    rc = kvr_jexec(r, sc, branch->b);
                    break;
                }
                if (branch->c == NULL) {
                    rc = KVR_JEXEC_NORMAL;
                    break;
                }
                if (branch->c->kind == KVR_JN_BLOCK) {
                    rc = kvr_jexec(r, sc, branch->c->b);
                    break;
                }
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
