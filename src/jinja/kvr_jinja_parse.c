/*
 * Copyright (C) kvroute developers
 *
 * The Jinja subset's parser: the lexer's tokens (kvr_jinja_lex.c) to an
 * AST in the template's arena, following Jinja2's grammar and precedence.
 * Anything outside the subset is a compile error.
 */

#define _GNU_SOURCE

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "kvr_jinja_int.h"
#include "kvr_jinja_lex.h"


#define KVR_JP_MAX_DEPTH  100


static kvr_jn_t *kvr_jp_expr(kvr_jparser_t *p, int with_cond);
static kvr_jn_t *kvr_jp_tuple(kvr_jparser_t *p, int with_cond,
    int explicit_paren, const char *extra_end);
static kvr_jn_t *kvr_jp_unary(kvr_jparser_t *p, int with_filter);
static kvr_jn_t *kvr_jp_body(kvr_jparser_t *p, const char **ends,
    const char **found);


/* parser helpers */

static kvr_jtok_t *
kvr_jp_cur(kvr_jparser_t *p)
{
    return &p->toks[p->pos];
}


static int
kvr_jp_is_op(kvr_jparser_t *p, const char *op)
{
    kvr_jtok_t  *t;

    t = &p->toks[p->pos];

    return t->type == T_OP && t->len == strlen(op)
           && memcmp(t->p, op, t->len) == 0;
}


static int
kvr_jp_is_name(kvr_jparser_t *p, size_t at, const char *name)
{
    kvr_jtok_t  *t;

    t = &p->toks[at];

    return t->type == T_NAME && t->len == strlen(name)
           && memcmp(t->p, name, t->len) == 0;
}


static void
kvr_jp_expect_op(kvr_jparser_t *p, const char *op)
{
    if (!kvr_jp_is_op(p, op)) {
        kvr_jp_error(p, kvr_jp_cur(p)->line, "expected '%s'", op);
    }
    p->pos++;
}


static void
kvr_jp_expect(kvr_jparser_t *p, int type, const char *what)
{
    if (kvr_jp_cur(p)->type != type) {
        kvr_jp_error(p, kvr_jp_cur(p)->line, "expected %s", what);
    }
    p->pos++;
}


static kvr_jn_t *
kvr_jp_node(kvr_jparser_t *p, int kind)
{
    kvr_jn_t  *n;

    n = kvr_jalloc(&p->tpl->arena, sizeof(kvr_jn_t));
    memset(n, 0, sizeof(*n));
    n->kind = kind;
    n->line = kvr_jp_cur(p)->line;

    return n;
}


/* a growable array of node pointers, copied into the arena at the end */
typedef struct {
    kvr_jn_t            *items[64];
    kvr_jn_t           **more;
    uint32_t             n;
} kvr_jnvec_t;


static void
kvr_jp_vec_push(kvr_jparser_t *p, kvr_jnvec_t *v, kvr_jn_t *n)
{
    if (v->n >= 64) {
        kvr_jp_error(p, n->line, "more than 64 items in one list or call");
    }
    (void) v->more;
    v->items[v->n++] = n;
}


static kvr_jn_t **
kvr_jp_vec_done(kvr_jparser_t *p, kvr_jnvec_t *v)
{
    kvr_jn_t  **arr;

    if (v->n == 0) {
        return NULL;
    }

    arr = kvr_jalloc(&p->tpl->arena, v->n * sizeof(kvr_jn_t *));
    memcpy(arr, v->items, v->n * sizeof(kvr_jn_t *));

    return arr;
}


static void
kvr_jp_enter(kvr_jparser_t *p)
{
    if (++p->depth > KVR_JP_MAX_DEPTH) {
        kvr_jp_error(p, kvr_jp_cur(p)->line, "expression nested too deep");
    }
}


/* call arguments after '(' : positional, then name=value */
static void
kvr_jp_call_args(kvr_jparser_t *p, kvr_jn_t *n)
{
    kvr_jnvec_t   args, kwv;
    const char   *kwn[64];
    uint32_t      kwl[64];

    args.n = 0;
    kwv.n = 0;
    p->pos++;

    while (!kvr_jp_is_op(p, ")")) {
        if (args.n + kwv.n) {
            kvr_jp_expect_op(p, ",");
            if (kvr_jp_is_op(p, ")")) {
                break;
            }
        }

        if (kvr_jp_is_op(p, "*") || kvr_jp_is_op(p, "**")) {
            kvr_jp_error(p, kvr_jp_cur(p)->line,
                         "*args and **kwargs are not supported");
        }

        if (kvr_jp_cur(p)->type == T_NAME && p->toks[p->pos + 1].type == T_OP
            && p->toks[p->pos + 1].len == 1 && p->toks[p->pos + 1].p[0] == '=')
        {
            if (kwv.n >= 64) {
                kvr_jp_error(p, n->line, "too many keyword arguments");
            }
            kwn[kwv.n] = kvr_jp_cur(p)->p;
            kwl[kwv.n] = kvr_jp_cur(p)->len;
            p->pos += 2;
            kvr_jp_vec_push(p, &kwv, kvr_jp_expr(p, 1));
            continue;
        }

        if (kwv.n) {
            kvr_jp_error(p, kvr_jp_cur(p)->line,
                         "positional argument after a keyword argument");
        }

        kvr_jp_vec_push(p, &args, kvr_jp_expr(p, 1));
    }

    p->pos++;
    n->nargs = args.n;
    n->args = kvr_jp_vec_done(p, &args);
    n->nkw = kwv.n;
    n->kwv = kvr_jp_vec_done(p, &kwv);

    if (kwv.n) {
        n->kwn = kvr_jalloc(&p->tpl->arena, kwv.n * sizeof(char *));
        n->kwl = kvr_jalloc(&p->tpl->arena, kwv.n * sizeof(uint32_t));
        memcpy(n->kwn, kwn, kwv.n * sizeof(char *));
        memcpy(n->kwl, kwl, kwv.n * sizeof(uint32_t));
    }
}


static kvr_jn_t *
kvr_jp_const(kvr_jparser_t *p, kvr_jv_t v)
{
    kvr_jn_t  *n;

    n = kvr_jp_node(p, KVR_JN_CONST);
    n->cval = v;

    return n;
}


static kvr_jn_t *
kvr_jp_primary(kvr_jparser_t *p)
{
    char         *buf;
    size_t        len, i;
    kvr_jn_t     *n, *k;
    kvr_jtok_t   *t;
    kvr_jnvec_t   items;

    t = kvr_jp_cur(p);

    switch (t->type) {

    case T_NAME:
        p->pos++;
        if ((t->len == 4 && (memcmp(t->p, "true", 4) == 0
             || memcmp(t->p, "True", 4) == 0)))
        {
            return kvr_jp_const(p, kvr_jv_bool(1));
        }
        if ((t->len == 5 && (memcmp(t->p, "false", 5) == 0
             || memcmp(t->p, "False", 5) == 0)))
        {
            return kvr_jp_const(p, kvr_jv_bool(0));
        }
        if ((t->len == 4 && (memcmp(t->p, "none", 4) == 0
             || memcmp(t->p, "None", 4) == 0)))
        {
            return kvr_jp_const(p, kvr_jv_none);
        }
        n = kvr_jp_node(p, KVR_JN_NAME);
        n->name = t->p;
        n->name_len = t->len;
        return n;

    case T_STR:
        len = 0;
        for (i = p->pos; p->toks[i].type == T_STR; i++) {
            len += p->toks[i].len;
        }
        buf = kvr_jalloc(&p->tpl->arena, len + 1);
        len = 0;
        for ( ; p->toks[p->pos].type == T_STR; p->pos++) {
            memcpy(buf + len, p->toks[p->pos].p, p->toks[p->pos].len);
            len += p->toks[p->pos].len;
        }
        return kvr_jp_const(p, kvr_jv_str(buf, len));

    case T_INT:
        p->pos++;
        return kvr_jp_const(p, kvr_jv_int(t->i));

    case T_FLOAT:
        p->pos++;
        return kvr_jp_const(p, kvr_jv_float(t->f));

    default:
        break;
    }

    if (kvr_jp_is_op(p, "(")) {
        p->pos++;
        n = kvr_jp_tuple(p, 1, 1, NULL);
        kvr_jp_expect_op(p, ")");
        return n;
    }

    if (kvr_jp_is_op(p, "[")) {
        n = kvr_jp_node(p, KVR_JN_LIST);
        items.n = 0;
        p->pos++;
        while (!kvr_jp_is_op(p, "]")) {
            if (items.n) {
                kvr_jp_expect_op(p, ",");
                if (kvr_jp_is_op(p, "]")) {
                    break;
                }
            }
            kvr_jp_vec_push(p, &items, kvr_jp_expr(p, 1));
        }
        p->pos++;
        n->nargs = items.n;
        n->args = kvr_jp_vec_done(p, &items);
        return n;
    }

    if (kvr_jp_is_op(p, "{")) {
        n = kvr_jp_node(p, KVR_JN_DICT);
        items.n = 0;
        p->pos++;
        while (!kvr_jp_is_op(p, "}")) {
            if (items.n) {
                kvr_jp_expect_op(p, ",");
                if (kvr_jp_is_op(p, "}")) {
                    break;
                }
            }
            k = kvr_jp_expr(p, 1);
            kvr_jp_expect_op(p, ":");
            kvr_jp_vec_push(p, &items, k);
            kvr_jp_vec_push(p, &items, kvr_jp_expr(p, 1));
        }
        p->pos++;
        n->nargs = items.n;
        n->args = kvr_jp_vec_done(p, &items);
        return n;
    }

    kvr_jp_error(p, t->line, "unexpected token in expression");
}


/* after '[': an expression or a slice */
static kvr_jn_t *
kvr_jp_subscript(kvr_jparser_t *p, kvr_jn_t *obj)
{
    kvr_jn_t  *n, *parts[3];
    int        k;

    parts[0] = parts[1] = parts[2] = NULL;
    p->pos++;

    if (!kvr_jp_is_op(p, ":")) {
        parts[0] = kvr_jp_expr(p, 1);
        if (!kvr_jp_is_op(p, ":")) {
            if (kvr_jp_is_op(p, ",")) {
                kvr_jp_error(p, kvr_jp_cur(p)->line,
                             "tuple subscripts are not supported");
            }
            kvr_jp_expect_op(p, "]");
            n = kvr_jp_node(p, KVR_JN_GETITEM);
            n->a = obj;
            n->b = parts[0];
            return n;
        }
    }

    for (k = 1; k < 3; k++) {
        if (!kvr_jp_is_op(p, ":")) {
            break;
        }
        p->pos++;
        if (!kvr_jp_is_op(p, ":") && !kvr_jp_is_op(p, "]")) {
            parts[k] = kvr_jp_expr(p, 1);
        }
    }

    kvr_jp_expect_op(p, "]");
    n = kvr_jp_node(p, KVR_JN_SLICE);
    n->a = obj;
    n->b = parts[0];
    n->c = parts[1];
    n->d = parts[2];

    return n;
}


static kvr_jn_t *
kvr_jp_postfix(kvr_jparser_t *p, kvr_jn_t *node)
{
    kvr_jn_t    *n;
    kvr_jtok_t  *t;

    for ( ;; ) {
        if (kvr_jp_is_op(p, ".")) {
            p->pos++;
            t = kvr_jp_cur(p);
            if (t->type == T_NAME) {
                n = kvr_jp_node(p, KVR_JN_GETATTR);
                n->a = node;
                n->name = t->p;
                n->name_len = t->len;
            } else if (t->type == T_INT) {
                n = kvr_jp_node(p, KVR_JN_GETITEM);
                n->a = node;
                n->b = kvr_jp_const(p, kvr_jv_int(t->i));
            } else {
                kvr_jp_error(p, t->line, "expected a name after '.'");
            }
            p->pos++;
            node = n;

        } else if (kvr_jp_is_op(p, "[")) {
            node = kvr_jp_subscript(p, node);

        } else if (kvr_jp_is_op(p, "(")) {
            n = kvr_jp_node(p, KVR_JN_CALL);
            n->a = node;
            kvr_jp_call_args(p, n);
            node = n;

        } else {
            return node;
        }
    }
}


/* a filter or test name, possibly dotted */
static void
kvr_jp_dotted_name(kvr_jparser_t *p, kvr_jn_t *n)
{
    kvr_jtok_t  *t;

    t = kvr_jp_cur(p);
    if (t->type != T_NAME) {
        kvr_jp_error(p, t->line, "expected a filter or test name");
    }

    n->name = t->p;
    n->name_len = t->len;
    p->pos++;

    if (kvr_jp_is_op(p, ".")) {
        kvr_jp_error(p, t->line, "dotted filter or test names are not "
                     "supported");
    }
}


static kvr_jn_t *
kvr_jp_filter_expr(kvr_jparser_t *p, kvr_jn_t *node)
{
    int          id;
    kvr_jn_t    *n, *arg;
    kvr_jtok_t  *t;

    for ( ;; ) {
        if (kvr_jp_is_op(p, "|")) {
            p->pos++;
            n = kvr_jp_node(p, KVR_JN_FILTER);
            n->a = node;
            kvr_jp_dotted_name(p, n);
            id = kvr_jfilter_id(n->name, n->name_len);
            if (id < 0) {
                kvr_jp_error(p, n->line, "unknown or unsupported filter "
                             "'%.*s'", (int) n->name_len, n->name);
            }
            n->id = id;
            if (kvr_jp_is_op(p, "(")) {
                kvr_jp_call_args(p, n);
            }
            node = n;

        } else if (kvr_jp_is_name(p, p->pos, "is")) {
            p->pos++;
            n = kvr_jp_node(p, KVR_JN_TEST);
            n->a = node;
            if (kvr_jp_is_name(p, p->pos, "not")) {
                n->op = 1;
                p->pos++;
            }
            kvr_jp_dotted_name(p, n);
            id = kvr_jtest_id(n->name, n->name_len);
            if (id < 0) {
                kvr_jp_error(p, n->line, "unknown or unsupported test "
                             "'%.*s'", (int) n->name_len, n->name);
            }
            n->id = id;
            t = kvr_jp_cur(p);
            if (kvr_jp_is_op(p, "(")) {
                kvr_jp_call_args(p, n);
                if (n->nkw) {
                    kvr_jp_error(p, n->line, "keyword arguments to a test "
                                 "are not supported");
                }
            } else if ((t->type == T_NAME || t->type == T_STR
                        || t->type == T_INT || t->type == T_FLOAT
                        || kvr_jp_is_op(p, "(") || kvr_jp_is_op(p, "[")
                        || kvr_jp_is_op(p, "{"))
                       && !kvr_jp_is_name(p, p->pos, "else")
                       && !kvr_jp_is_name(p, p->pos, "or")
                       && !kvr_jp_is_name(p, p->pos, "and"))
            {
                if (kvr_jp_is_name(p, p->pos, "is")) {
                    kvr_jp_error(p, t->line, "you cannot chain multiple "
                                 "tests with is");
                }
                arg = kvr_jp_postfix(p, kvr_jp_primary(p));
                n->args = kvr_jalloc(&p->tpl->arena, sizeof(kvr_jn_t *));
                n->args[0] = arg;
                n->nargs = 1;
            }
            node = n;

        } else if (kvr_jp_is_op(p, "(")) {
            n = kvr_jp_node(p, KVR_JN_CALL);
            n->a = node;
            kvr_jp_call_args(p, n);
            node = n;

        } else {
            return node;
        }
    }
}


static kvr_jn_t *
kvr_jp_unary(kvr_jparser_t *p, int with_filter)
{
    kvr_jn_t  *n;

    kvr_jp_enter(p);

    if (kvr_jp_is_op(p, "-") || kvr_jp_is_op(p, "+")) {
        n = kvr_jp_node(p, kvr_jp_is_op(p, "-") ? KVR_JN_NEG : KVR_JN_POS);
        p->pos++;
        n->a = kvr_jp_unary(p, 0);
    } else {
        n = kvr_jp_primary(p);
    }

    n = kvr_jp_postfix(p, n);
    if (with_filter) {
        n = kvr_jp_filter_expr(p, n);
    }

    p->depth--;
    return n;
}


static kvr_jn_t *
kvr_jp_binop(kvr_jparser_t *p, int op, kvr_jn_t *a, kvr_jn_t *b)
{
    kvr_jn_t  *n;

    n = kvr_jp_node(p, KVR_JN_BINOP);
    n->op = op;
    n->a = a;
    n->b = b;

    return n;
}


/* an expression jinja's optimizer folds into a constant */
static int
kvr_jp_is_const(kvr_jn_t *n)
{
    switch (n->kind) {
    case KVR_JN_CONST:
        return 1;
    case KVR_JN_NEG:
    case KVR_JN_POS:
    case KVR_JN_NOT:
        return kvr_jp_is_const(n->a);
    case KVR_JN_BINOP:
    case KVR_JN_AND:
    case KVR_JN_OR:
        return kvr_jp_is_const(n->a) && kvr_jp_is_const(n->b);
    default:
        return 0;
    }
}


static kvr_jn_t *
kvr_jp_pow(kvr_jparser_t *p)
{
    kvr_jn_t  *n, *right;

    n = kvr_jp_unary(p, 1);
    while (kvr_jp_is_op(p, "**")) {
        p->pos++;
        right = kvr_jp_unary(p, 1);
        /*
         * jinja writes a folded negative constant unparenthesized into
         * python source: "-1 ** x" then computes -(1 ** x); flagged
         */
        n = kvr_jp_binop(p, KVR_JOP_POW, n, right);
        n->id = kvr_jp_is_const(n->a) && !kvr_jp_is_const(right);
    }

    return n;
}


static kvr_jn_t *
kvr_jp_math2(kvr_jparser_t *p)
{
    int        op;
    kvr_jn_t  *n;

    n = kvr_jp_pow(p);
    for ( ;; ) {
        if (kvr_jp_is_op(p, "*")) {
            op = KVR_JOP_MUL;
        } else if (kvr_jp_is_op(p, "/")) {
            op = KVR_JOP_DIV;
        } else if (kvr_jp_is_op(p, "//")) {
            op = KVR_JOP_FLOORDIV;
        } else if (kvr_jp_is_op(p, "%")) {
            op = KVR_JOP_MOD;
        } else {
            return n;
        }
        p->pos++;
        n = kvr_jp_binop(p, op, n, kvr_jp_pow(p));
    }
}


static kvr_jn_t *
kvr_jp_concat(kvr_jparser_t *p)
{
    kvr_jn_t  *n;

    n = kvr_jp_math2(p);
    while (kvr_jp_is_op(p, "~")) {
        p->pos++;
        n = kvr_jp_binop(p, KVR_JOP_CONCAT, n, kvr_jp_math2(p));
    }

    return n;
}


static kvr_jn_t *
kvr_jp_math1(kvr_jparser_t *p)
{
    int        op;
    kvr_jn_t  *n;

    n = kvr_jp_concat(p);
    for ( ;; ) {
        if (kvr_jp_is_op(p, "+")) {
            op = KVR_JOP_ADD;
        } else if (kvr_jp_is_op(p, "-")) {
            op = KVR_JOP_SUB;
        } else {
            return n;
        }
        p->pos++;
        n = kvr_jp_binop(p, op, n, kvr_jp_concat(p));
    }
}


static kvr_jn_t *
kvr_jp_compare(kvr_jparser_t *p)
{
    int           op;
    uint8_t       ops[64];
    kvr_jn_t     *n, *first;
    kvr_jnvec_t   operands;

    first = kvr_jp_math1(p);
    operands.n = 0;
    kvr_jp_vec_push(p, &operands, first);

    for ( ;; ) {
        if (kvr_jp_is_op(p, "==")) {
            op = KVR_JOP_EQ;
        } else if (kvr_jp_is_op(p, "!=")) {
            op = KVR_JOP_NE;
        } else if (kvr_jp_is_op(p, "<")) {
            op = KVR_JOP_LT;
        } else if (kvr_jp_is_op(p, "<=")) {
            op = KVR_JOP_LE;
        } else if (kvr_jp_is_op(p, ">")) {
            op = KVR_JOP_GT;
        } else if (kvr_jp_is_op(p, ">=")) {
            op = KVR_JOP_GE;
        } else if (kvr_jp_is_name(p, p->pos, "in")) {
            op = KVR_JOP_IN;
        } else if (kvr_jp_is_name(p, p->pos, "not")
                   && kvr_jp_is_name(p, p->pos + 1, "in"))
        {
            op = KVR_JOP_NOTIN;
            p->pos++;
        } else {
            break;
        }
        p->pos++;
        ops[operands.n - 1] = op;
        kvr_jp_vec_push(p, &operands, kvr_jp_math1(p));
    }

    if (operands.n == 1) {
        return first;
    }

    n = kvr_jp_node(p, KVR_JN_COMPARE);
    n->nargs = operands.n;
    n->args = kvr_jp_vec_done(p, &operands);
    n->ops = kvr_jalloc(&p->tpl->arena, operands.n);
    memcpy(n->ops, ops, operands.n - 1);

    return n;
}


static kvr_jn_t *
kvr_jp_not(kvr_jparser_t *p)
{
    kvr_jn_t  *n;

    if (kvr_jp_is_name(p, p->pos, "not")) {
        kvr_jp_enter(p);
        n = kvr_jp_node(p, KVR_JN_NOT);
        p->pos++;
        n->a = kvr_jp_not(p);
        p->depth--;
        return n;
    }

    return kvr_jp_compare(p);
}


static kvr_jn_t *
kvr_jp_and(kvr_jparser_t *p)
{
    kvr_jn_t  *n, *a;

    n = kvr_jp_not(p);
    while (kvr_jp_is_name(p, p->pos, "and")) {
        p->pos++;
        a = kvr_jp_node(p, KVR_JN_AND);
        a->a = n;
        a->b = kvr_jp_not(p);
        n = a;
    }

    return n;
}


static kvr_jn_t *
kvr_jp_or(kvr_jparser_t *p)
{
    kvr_jn_t  *n, *o;

    n = kvr_jp_and(p);
    while (kvr_jp_is_name(p, p->pos, "or")) {
        p->pos++;
        o = kvr_jp_node(p, KVR_JN_OR);
        o->a = n;
        o->b = kvr_jp_and(p);
        n = o;
    }

    return n;
}


static kvr_jn_t *
kvr_jp_expr(kvr_jparser_t *p, int with_cond)
{
    kvr_jn_t  *n, *c;

    kvr_jp_enter(p);

    n = kvr_jp_or(p);

    while (with_cond && kvr_jp_is_name(p, p->pos, "if")) {
        p->pos++;
        c = kvr_jp_node(p, KVR_JN_COND);
        c->b = n;
        c->a = kvr_jp_or(p);
        if (kvr_jp_is_name(p, p->pos, "else")) {
            p->pos++;
            c->c = kvr_jp_expr(p, 1);
        }
        n = c;
    }

    p->depth--;
    return n;
}


static int
kvr_jp_tuple_end(kvr_jparser_t *p, const char *extra_end)
{
    int  type;

    type = kvr_jp_cur(p)->type;

    return type == T_VEND || type == T_BEND || type == T_EOF
           || kvr_jp_is_op(p, ")")
           || (extra_end && kvr_jp_is_name(p, p->pos, extra_end));
}


static kvr_jn_t *
kvr_jp_tuple(kvr_jparser_t *p, int with_cond, int explicit_paren,
    const char *extra_end)
{
    int           is_tuple;
    kvr_jn_t     *n;
    kvr_jnvec_t   items;

    items.n = 0;
    is_tuple = 0;

    for ( ;; ) {
        if (items.n) {
            kvr_jp_expect_op(p, ",");
        }
        if (kvr_jp_tuple_end(p, extra_end)) {
            break;
        }
        kvr_jp_vec_push(p, &items, kvr_jp_expr(p, with_cond));
        if (kvr_jp_is_op(p, ",")) {
            is_tuple = 1;
        } else {
            break;
        }
    }

    if (!is_tuple) {
        if (items.n) {
            return items.items[0];
        }
        if (!explicit_paren) {
            kvr_jp_error(p, kvr_jp_cur(p)->line, "expected an expression");
        }
    }

    n = kvr_jp_node(p, KVR_JN_TUPLE);
    n->nargs = items.n;
    n->args = kvr_jp_vec_done(p, &items);

    return n;
}


/* assignment target: name, name.attr (with_ns) or names with commas */
static kvr_jn_t *
kvr_jp_target(kvr_jparser_t *p, int with_ns)
{
    kvr_jn_t     *n;
    kvr_jtok_t   *t;
    kvr_jnvec_t   names;

    t = kvr_jp_cur(p);
    if (t->type != T_NAME) {
        kvr_jp_error(p, t->line, "expected a name to assign to");
    }

    if (with_ns && p->toks[p->pos + 1].type == T_OP
        && p->toks[p->pos + 1].p[0] == '.')
    {
        n = kvr_jp_node(p, KVR_JN_GETATTR);
        n->name = p->toks[p->pos + 2].p;
        n->name_len = p->toks[p->pos + 2].len;
        n->a = kvr_jp_node(p, KVR_JN_NAME);
        n->a->name = t->p;
        n->a->name_len = t->len;
        if (p->toks[p->pos + 2].type != T_NAME) {
            kvr_jp_error(p, t->line, "expected an attribute name");
        }
        p->pos += 3;
        return n;
    }

    names.n = 0;

    for ( ;; ) {
        t = kvr_jp_cur(p);
        if (t->type != T_NAME) {
            kvr_jp_error(p, t->line, "expected a name to assign to");
        }
        n = kvr_jp_node(p, KVR_JN_NAME);
        n->name = t->p;
        n->name_len = t->len;
        p->pos++;
        kvr_jp_vec_push(p, &names, n);
        if (!kvr_jp_is_op(p, ",")) {
            break;
        }
        p->pos++;
    }

    if (names.n == 1) {
        return names.items[0];
    }

    n = kvr_jp_node(p, KVR_JN_TUPLE);
    n->nargs = names.n;
    n->args = kvr_jp_vec_done(p, &names);

    return n;
}


static kvr_jn_t *
kvr_jp_if(kvr_jparser_t *p)
{
    kvr_jn_t     *n;
    const char   *found;
    static const char  *ends[] = { "elif", "else", "endif", NULL };
    static const char  *ends_else[] = { "endif", NULL };

    n = kvr_jp_node(p, KVR_JN_IF);
    n->a = kvr_jp_tuple(p, 0, 0, NULL);
    kvr_jp_expect(p, T_BEND, "end of tag");
    n->b = kvr_jp_body(p, ends, &found);

    if (strcmp(found, "elif") == 0) {
        n->c = kvr_jp_if(p);
        return n;
    }

    if (strcmp(found, "else") == 0) {
        kvr_jp_expect(p, T_BEND, "end of tag");
        n->c = kvr_jp_node(p, KVR_JN_BLOCK);
        n->c->b = kvr_jp_body(p, ends_else, &found);
    }

    kvr_jp_expect(p, T_BEND, "end of tag");
    return n;
}


static kvr_jn_t *
kvr_jp_for(kvr_jparser_t *p)
{
    kvr_jn_t     *n;
    const char   *found;
    static const char  *ends[] = { "else", "endfor", NULL };
    static const char  *ends_else[] = { "endfor", NULL };

    n = kvr_jp_node(p, KVR_JN_FOR);
    n->d = kvr_jp_target(p, 0);

    if (!kvr_jp_is_name(p, p->pos, "in")) {
        kvr_jp_error(p, n->line, "expected 'in' in a for tag");
    }
    p->pos++;

    n->a = kvr_jp_tuple(p, 0, 0, "recursive");

    if (kvr_jp_is_name(p, p->pos, "if")) {
        p->pos++;
        n->c = kvr_jp_expr(p, 1);
    }

    if (kvr_jp_is_name(p, p->pos, "recursive")) {
        kvr_jp_error(p, n->line, "recursive loops are not supported");
    }

    kvr_jp_expect(p, T_BEND, "end of tag");

    p->loops++;
    n->b = kvr_jp_body(p, ends, &found);
    p->loops--;

    if (strcmp(found, "else") == 0) {
        kvr_jp_expect(p, T_BEND, "end of tag");
        n->nargs = 1;
        n->args = kvr_jalloc(&p->tpl->arena, sizeof(kvr_jn_t *));
        n->args[0] = kvr_jp_body(p, ends_else, &found);
    }

    kvr_jp_expect(p, T_BEND, "end of tag");
    return n;
}


static kvr_jn_t *
kvr_jp_set(kvr_jparser_t *p)
{
    kvr_jn_t     *n, *target;
    const char   *found;
    uint32_t      loops;
    static const char  *ends[] = { "endset", NULL };

    target = kvr_jp_target(p, 1);

    if (kvr_jp_is_op(p, "=")) {
        p->pos++;
        n = kvr_jp_node(p, KVR_JN_SET);
        n->d = target;
        n->a = kvr_jp_tuple(p, 1, 0, NULL);
        kvr_jp_expect(p, T_BEND, "end of tag");
        return n;
    }

    if (target->kind != KVR_JN_NAME) {
        kvr_jp_error(p, target->line, "a block set assigns one name");
    }

    if (kvr_jp_is_op(p, "|")) {
        kvr_jp_error(p, target->line, "filters on a block set are not "
                     "supported");
    }

    kvr_jp_expect(p, T_BEND, "end of tag");
    n = kvr_jp_node(p, KVR_JN_SETBLOCK);
    n->d = target;

    loops = p->loops;
    p->loops = 0;
    n->b = kvr_jp_body(p, ends, &found);
    p->loops = loops;

    kvr_jp_expect(p, T_BEND, "end of tag");

    return n;
}


static kvr_jn_t *
kvr_jp_macro(kvr_jparser_t *p)
{
    kvr_jn_t     *n, *param;
    kvr_jtok_t   *t;
    const char   *found;
    uint32_t      loops;
    int           with_default;
    kvr_jnvec_t   params, defaults;
    static const char  *ends[] = { "endmacro", NULL };

    n = kvr_jp_node(p, KVR_JN_MACRO);
    t = kvr_jp_cur(p);
    kvr_jp_expect(p, T_NAME, "a macro name");
    n->name = t->p;
    n->name_len = t->len;
    kvr_jp_expect_op(p, "(");

    params.n = 0;
    defaults.n = 0;
    with_default = 0;

    while (!kvr_jp_is_op(p, ")")) {
        if (params.n) {
            kvr_jp_expect_op(p, ",");
        }
        t = kvr_jp_cur(p);
        kvr_jp_expect(p, T_NAME, "a parameter name");
        param = kvr_jp_node(p, KVR_JN_NAME);
        param->name = t->p;
        param->name_len = t->len;
        if ((t->len == 6 && memcmp(t->p, "caller", 6) == 0)
            || (t->len == 6 && memcmp(t->p, "kwargs", 6) == 0)
            || (t->len == 7 && memcmp(t->p, "varargs", 7) == 0))
        {
            kvr_jp_error(p, t->line, "macro parameter '%.*s' is not "
                         "supported", (int) t->len, t->p);
        }
        kvr_jp_vec_push(p, &params, param);

        if (kvr_jp_is_op(p, "=")) {
            p->pos++;
            kvr_jp_vec_push(p, &defaults, kvr_jp_expr(p, 1));
            with_default = 1;
        } else if (with_default) {
            kvr_jp_error(p, t->line, "non-default argument follows "
                         "default argument");
        } else {
            kvr_jp_vec_push(p, &defaults, NULL);
        }
    }
    p->pos++;
    kvr_jp_expect(p, T_BEND, "end of tag");

    n->nargs = params.n;
    n->args = kvr_jp_vec_done(p, &params);
    n->nkw = defaults.n;
    n->kwv = kvr_jp_vec_done(p, &defaults);

    loops = p->loops;
    p->loops = 0;
    n->b = kvr_jp_body(p, ends, &found);
    p->loops = loops;

    kvr_jp_expect(p, T_BEND, "end of tag");

    return n;
}


static int
kvr_jp_in_list(kvr_jtok_t *t, const char **names)
{
    size_t  i;

    for (i = 0; names && names[i]; i++) {
        if (t->len == strlen(names[i])
            && memcmp(t->p, names[i], t->len) == 0)
        {
            return (int) i;
        }
    }

    return -1;
}


/*
 * A list of statements up to one of the end tags in ends (then *found is
 * the tag, and the current token follows its name) or to the end.
 */
static kvr_jn_t *
kvr_jp_body(kvr_jparser_t *p, const char **ends, const char **found)
{
    int          k;
    kvr_jn_t    *head, **tail, *n;
    kvr_jtok_t  *t, *name;
    const char  *sub;
    static const char  *gen_ends[] = { "endgeneration", NULL };

    head = NULL;
    tail = &head;
    kvr_jp_enter(p);

    for ( ;; ) {
        t = kvr_jp_cur(p);
        n = NULL;

        switch (t->type) {

        case T_EOF:
            if (ends) {
                kvr_jp_error(p, t->line, "unexpected end of template, "
                             "expected '%s'", ends[0]);
            }
            p->depth--;
            return head;

        case T_DATA:
            n = kvr_jp_node(p, KVR_JN_TEXT);
            n->cval = kvr_jv_str(t->p, t->len);
            p->pos++;
            break;

        case T_VBEGIN:
            p->pos++;
            n = kvr_jp_node(p, KVR_JN_PRINT);
            n->a = kvr_jp_tuple(p, 1, 0, NULL);
            kvr_jp_expect(p, T_VEND, "'}}'");
            break;

        case T_BBEGIN:
            p->pos++;
            name = kvr_jp_cur(p);
            if (name->type != T_NAME) {
                kvr_jp_error(p, name->line, "expected a tag name");
            }

            k = kvr_jp_in_list(name, ends);
            if (k >= 0) {
                *found = ends[k];
                p->pos++;
                p->depth--;
                return head;
            }

            p->pos++;

            if (kvr_jp_is_name(p, p->pos - 1, "if")) {
                n = kvr_jp_if(p);
            } else if (kvr_jp_is_name(p, p->pos - 1, "for")) {
                n = kvr_jp_for(p);
            } else if (kvr_jp_is_name(p, p->pos - 1, "set")) {
                n = kvr_jp_set(p);
            } else if (kvr_jp_is_name(p, p->pos - 1, "macro")) {
                n = kvr_jp_macro(p);
            } else if (kvr_jp_is_name(p, p->pos - 1, "break")
                       || kvr_jp_is_name(p, p->pos - 1, "continue"))
            {
                if (p->loops == 0) {
                    kvr_jp_error(p, name->line, "'%.*s' outside a loop",
                                 (int) name->len, name->p);
                }
                n = kvr_jp_node(p, name->p[0] == 'b' ? KVR_JN_BREAK
                                                     : KVR_JN_CONTINUE);
                kvr_jp_expect(p, T_BEND, "end of tag");
            } else if (kvr_jp_is_name(p, p->pos - 1, "generation")) {
                kvr_jp_expect(p, T_BEND, "end of tag");
                n = kvr_jp_node(p, KVR_JN_BLOCK);
                n->b = kvr_jp_body(p, gen_ends, &sub);
                kvr_jp_expect(p, T_BEND, "end of tag");
            } else {
                kvr_jp_error(p, name->line, "unknown or unsupported tag "
                             "'%.*s'", (int) name->len, name->p);
            }
            break;

        default:
            kvr_jp_error(p, t->line, "unexpected token");
        }

        *tail = n;
        tail = &n->next;
    }
}


kvr_jinja_tpl_t *
kvr_jinja_compile(const char *src, size_t len, char *err, size_t errlen)
{
    char                *norm;
    size_t               i, n;
    kvr_jparser_t        p;
    kvr_jinja_tpl_t     *volatile tpl;

    tpl = calloc(1, sizeof(kvr_jinja_tpl_t));
    if (tpl == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    memset(&p, 0, sizeof(p));
    p.tpl = tpl;
    p.line = 1;
    kvr_jarena_init(&tpl->arena, (size_t) 256 << 20, tpl->err,
                    sizeof(tpl->err));
    tpl->arena.fail = &tpl->jmp;

    if (setjmp(tpl->jmp)) {
        snprintf(err, errlen, "%s", tpl->err);
        free(p.toks);
        kvr_jinja_free(tpl);
        return NULL;
    }

    if (len > ((size_t) 1 << 30)) {
        kvr_jp_error(&p, 1, "template too large");
    }

    /* newlines normalized to \n, one trailing newline dropped */
    norm = kvr_jalloc(&tpl->arena, len + 1);
    n = 0;
    for (i = 0; i < len; i++) {
        if (src[i] == '\r') {
            norm[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') {
                i++;
            }
        } else {
            norm[n++] = src[i];
        }
    }
    if (n && norm[n - 1] == '\n') {
        n--;
    }

    for (i = 0; i < n; ) {
        if (kvr_jutf8_next(norm, n, &i) == (uint32_t) -1) {
            kvr_jp_error(&p, 1, "template is not valid UTF-8");
        }
    }

    p.src = norm;
    p.len = n;

    kvr_jp_lex(&p);
    tpl->body = kvr_jp_body(&p, NULL, NULL);

    free(p.toks);
    tpl->arena.fail = NULL;

    return tpl;
}


void
kvr_jinja_free(kvr_jinja_tpl_t *tpl)
{
    if (tpl == NULL) {
        return;
    }

    kvr_jarena_free(&tpl->arena);
    free(tpl);
}


/* whether expression n reads attribute or item "name" of something */
static int
kvr_jn_reads(kvr_jn_t *n, const char *name, size_t len, int depth)
{
    uint32_t  i;

    if (n == NULL || depth > 200) {
        return 0;
    }

    if ((n->kind == KVR_JN_GETATTR && n->name_len == len
         && memcmp(n->name, name, len) == 0)
        || (n->kind == KVR_JN_GETITEM && n->b->kind == KVR_JN_CONST
            && n->b->cval.type == KVR_JV_STR && n->b->cval.len == len
            && memcmp(n->b->cval.u.s, name, len) == 0))
    {
        return 1;
    }

    if (kvr_jn_reads(n->a, name, len, depth + 1)
        || kvr_jn_reads(n->b, name, len, depth + 1)
        || kvr_jn_reads(n->c, name, len, depth + 1))
    {
        return 1;
    }

    for (i = 0; i < n->nargs; i++) {
        if (kvr_jn_reads(n->args[i], name, len, depth + 1)) {
            return 1;
        }
    }

    return 0;
}


static int
kvr_jn_loops_over(kvr_jn_t *n, const char *name, size_t len, int depth)
{
    uint32_t  i;

    for ( ; n && depth < 200; n = n->next) {
        switch (n->kind) {
        case KVR_JN_FOR:
            if (kvr_jn_reads(n->a, name, len, 0)
                || kvr_jn_loops_over(n->b, name, len, depth + 1))
            {
                return 1;
            }
            for (i = 0; i < n->nargs; i++) {
                if (kvr_jn_loops_over(n->args[i], name, len, depth + 1)) {
                    return 1;
                }
            }
            break;
        case KVR_JN_IF:
            if (kvr_jn_loops_over(n->b, name, len, depth + 1)
                || (n->c && kvr_jn_loops_over(n->c->kind == KVR_JN_BLOCK
                                              ? n->c->b : n->c,
                                              name, len, depth + 1)))
            {
                return 1;
            }
            break;
        case KVR_JN_SETBLOCK:
        case KVR_JN_MACRO:
        case KVR_JN_BLOCK:
            if (kvr_jn_loops_over(n->b, name, len, depth + 1)) {
                return 1;
            }
            break;
        default:
            break;
        }
    }

    return 0;
}


int
kvr_jinja_loops_over(const kvr_jinja_tpl_t *tpl, const char *name)
{
    return kvr_jn_loops_over(tpl->body, name, strlen(name), 0);
}
