/*
 * Copyright (C) kvroute developers
 *
 * Internals of the Jinja subset shared by its parser, value model,
 * evaluator and builtins.  Errors unwind with longjmp to the compile or
 * render entry point: every allocation lives in an arena that is dropped
 * as a whole, so nothing leaks on the way out.
 */

#ifndef _KVR_JINJA_INT_H_INCLUDED_
#define _KVR_JINJA_INT_H_INCLUDED_


#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "kvr_jinja.h"


/* arena: chunks of at least KVR_JARENA_CHUNK bytes, bounded in total */
#define KVR_JARENA_CHUNK  16384

typedef struct kvr_jchunk_s  kvr_jchunk_t;

struct kvr_jchunk_s {
    kvr_jchunk_t        *next;
    size_t               size;
    size_t               used;
};

typedef struct {
    kvr_jchunk_t        *head;
    size_t               total;
    size_t               max;
    jmp_buf             *fail;      /* where an exhausted arena jumps */
    char                *err;       /* message buffer of the owner */
    size_t               errlen;
} kvr_jarena_t;


/* value types; the order matters for nothing */
typedef enum {
    KVR_JV_UNDEF = 0,
    KVR_JV_NONE,
    KVR_JV_BOOL,
    KVR_JV_INT,
    KVR_JV_FLOAT,
    KVR_JV_STR,
    KVR_JV_LIST,
    KVR_JV_DICT,
    KVR_JV_NS,
    KVR_JV_FUNC,        /* a global function, u.i is its id */
    KVR_JV_METHOD,      /* a bound method, u.method */
    KVR_JV_MACRO,       /* u.macro */
    KVR_JV_LOOP         /* the loop variable, u.loop */
} kvr_jv_type_e;

/* list flags */
#define KVR_JV_TUPLE    0x01    /* prints as a tuple */
#define KVR_JV_GEN      0x02    /* a python generator: truthy, no len */
#define KVR_JV_VIEW     0x04    /* a dict view: no indexing */
#define KVR_JV_NOPRINT  0x08    /* a range: printing not reproduced */
#define KVR_JV_OPAQUE   (KVR_JV_GEN | KVR_JV_VIEW | KVR_JV_NOPRINT)

typedef struct kvr_jlist_s    kvr_jlist_t;
typedef struct kvr_jdict_s    kvr_jdict_t;
typedef struct kvr_jmethod_s  kvr_jmethod_t;
typedef struct kvr_jmacro_s   kvr_jmacro_t;
typedef struct kvr_jloop_s    kvr_jloop_t;
typedef struct kvr_jn_s       kvr_jn_t;
typedef struct kvr_jscope_s   kvr_jscope_t;

struct kvr_jv_s {
    uint8_t              type;
    uint8_t              flags;
    uint32_t             len;       /* string bytes; undefined: name len */
    union {
        int64_t          i;
        double           f;
        const char      *s;         /* strings; undefined: its name */
        kvr_jlist_t     *list;
        kvr_jdict_t     *dict;      /* dicts and namespaces */
        kvr_jmethod_t   *method;
        kvr_jmacro_t    *macro;
        kvr_jloop_t     *loop;
    } u;
};

struct kvr_jlist_s {
    uint32_t             n;
    uint32_t             cap;
    uint32_t             consumed;  /* generators iterate once */
    kvr_jv_t            *items;
};

struct kvr_jdict_s {
    uint32_t             n;
    uint32_t             cap;
    kvr_jv_t            *keys;
    kvr_jv_t            *vals;
    uint32_t            *index;     /* open addressing, slot = pos + 1 */
    uint32_t             index_cap;
};

struct kvr_jmethod_s {
    kvr_jv_t             self;
    int                  id;
};

struct kvr_jmacro_s {
    kvr_jn_t            *def;
    kvr_jscope_t        *scope;     /* where it was defined */
};

struct kvr_jloop_s {
    kvr_jlist_t         *items;
    uint32_t             index0;
};


/* output sink: the caller's buffer (fixed) or an arena-grown one */
typedef struct {
    char                *buf;
    size_t               len;
    size_t               cap;
    size_t               max;
    unsigned             grow:1;
} kvr_jsink_t;


/* AST */
typedef enum {
    /* expressions */
    KVR_JN_CONST = 1,
    KVR_JN_NAME,
    KVR_JN_GETATTR,
    KVR_JN_GETITEM,
    KVR_JN_SLICE,
    KVR_JN_BINOP,
    KVR_JN_NEG,
    KVR_JN_POS,
    KVR_JN_NOT,
    KVR_JN_AND,
    KVR_JN_OR,
    KVR_JN_COMPARE,
    KVR_JN_COND,
    KVR_JN_LIST,
    KVR_JN_TUPLE,
    KVR_JN_DICT,
    KVR_JN_CALL,
    KVR_JN_FILTER,
    KVR_JN_TEST,
    /* statements */
    KVR_JN_TEXT,
    KVR_JN_PRINT,
    KVR_JN_IF,
    KVR_JN_FOR,
    KVR_JN_SET,
    KVR_JN_SETBLOCK,
    KVR_JN_MACRO,
    KVR_JN_BREAK,
    KVR_JN_CONTINUE,
    KVR_JN_BLOCK        /* a plain body ({% generation %}) */
} kvr_jn_kind_e;

/* binary and comparison operators */
enum {
    KVR_JOP_ADD = 1, KVR_JOP_SUB, KVR_JOP_MUL, KVR_JOP_DIV, KVR_JOP_FLOORDIV,
    KVR_JOP_MOD, KVR_JOP_POW, KVR_JOP_CONCAT,
    KVR_JOP_EQ, KVR_JOP_NE, KVR_JOP_LT, KVR_JOP_LE, KVR_JOP_GT, KVR_JOP_GE,
    KVR_JOP_IN, KVR_JOP_NOTIN
};

struct kvr_jn_s {
    uint8_t              kind;
    uint8_t              op;        /* operator; test: negated */
    uint16_t             id;        /* builtin filter / test id */
    uint32_t             line;
    const char          *name;      /* name, attribute, filter, test */
    uint32_t             name_len;
    kvr_jv_t             cval;      /* constants */
    kvr_jn_t            *a;
    kvr_jn_t            *b;
    kvr_jn_t            *c;
    kvr_jn_t            *d;
    kvr_jn_t           **args;      /* operands, items, arguments */
    uint32_t             nargs;
    uint32_t             nkw;
    kvr_jn_t           **kwv;       /* keyword argument values */
    const char         **kwn;       /* keyword names */
    uint32_t            *kwl;
    uint8_t             *ops;       /* comparison chain operators */
    kvr_jn_t            *next;      /* next statement of a body */
};


struct kvr_jinja_tpl_s {
    kvr_jarena_t         arena;
    kvr_jn_t            *body;
    char                 err[256];
    jmp_buf              jmp;
};


/* variable scope: for bodies, macro calls, the globals */
struct kvr_jscope_s {
    kvr_jscope_t        *parent;
    uint32_t             n;
    uint32_t             cap;
    const char         **names;
    uint32_t            *lens;
    kvr_jv_t            *vals;
};


struct kvr_jinja_render_s {
    kvr_jarena_t         arena;
    kvr_jinja_limits_t   limits;
    jmp_buf              jmp;
    int                  in_render;
    int                  failed;    /* a value constructor ran out */
    kvr_jsink_t         *sink;
    kvr_jscope_t        *globals;
    uint64_t             steps;
    uint32_t             depth;
    uint32_t             lazy;      /* inside a filter python runs lazily */
    int                  status;
    char                 err[256];

    /*
     * the last string + or ~ made, and the room reserved behind it: a
     * chain a + b + c appends in place instead of copying a again
     */
    char                *tail;
    size_t               tail_len;
    size_t               tail_room;
};


/* arena */
void kvr_jarena_init(kvr_jarena_t *a, size_t max, char *err, size_t errlen);
void kvr_jarena_free(kvr_jarena_t *a);
void *kvr_jalloc(kvr_jarena_t *a, size_t size);

/* render errors: never return */
void kvr_jfail(kvr_jinja_render_t *r, int status, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
void *kvr_jr_alloc(kvr_jinja_render_t *r, size_t size);

/* values */
extern const kvr_jv_t  kvr_jv_undef;
extern const kvr_jv_t  kvr_jv_none;

kvr_jv_t kvr_jv_bool(int b);
kvr_jv_t kvr_jv_int(int64_t i);
kvr_jv_t kvr_jv_float(double f);
kvr_jv_t kvr_jv_str(const char *s, size_t len);
kvr_jv_t kvr_jv_strdup(kvr_jinja_render_t *r, const char *s, size_t len);
kvr_jv_t kvr_jv_undef_named(const char *name, size_t len);
kvr_jlist_t *kvr_jlist_new(kvr_jinja_render_t *r, size_t n);
kvr_jv_t kvr_jv_list(kvr_jlist_t *l);
kvr_jdict_t *kvr_jdict_new(kvr_jinja_render_t *r, size_t cap);
kvr_jv_t kvr_jv_dict(kvr_jdict_t *d);
void kvr_jdict_set(kvr_jinja_render_t *r, kvr_jdict_t *d, kvr_jv_t key,
    kvr_jv_t val);
kvr_jv_t *kvr_jdict_get(kvr_jdict_t *d, kvr_jv_t key);
kvr_jv_t *kvr_jdict_get_str(kvr_jdict_t *d, const char *s, size_t len);

int kvr_jv_truthy(kvr_jinja_render_t *r, kvr_jv_t v);
int kvr_jv_eq(kvr_jv_t a, kvr_jv_t b);
int kvr_jv_cmp(kvr_jinja_render_t *r, kvr_jv_t a, kvr_jv_t b);
int kvr_jv_is_str(kvr_jv_t v, const char *s);
int kvr_jv_hashable(kvr_jv_t v);
const char *kvr_jv_type_name(kvr_jv_t v);

/* python str(), repr() and transformers' tojson, into a sink */
void kvr_jsink_put(kvr_jinja_render_t *r, kvr_jsink_t *s, const char *p,
    size_t len);
void kvr_jv_write_str(kvr_jinja_render_t *r, kvr_jsink_t *s, kvr_jv_t v);
void kvr_jv_write_repr(kvr_jinja_render_t *r, kvr_jsink_t *s, kvr_jv_t v);
void kvr_jv_write_json(kvr_jinja_render_t *r, kvr_jsink_t *s, kvr_jv_t v,
    int indent, const char *item_sep, const char *key_sep, int sort_keys,
    int level);
void kvr_jfloat_repr(double f, char *buf, size_t size);
kvr_jv_t kvr_jv_to_string(kvr_jinja_render_t *r, kvr_jv_t v);
void kvr_jsink_grow_init(kvr_jsink_t *s, size_t max);

/* utf-8 and python whitespace */
uint32_t kvr_jutf8_next(const char *s, size_t len, size_t *pos);
size_t kvr_jutf8_count(const char *s, size_t len);
size_t kvr_jutf8_offset(const char *s, size_t len, size_t cp_index);
int kvr_jpy_space(uint32_t cp);
int kvr_jpy_space_at(const char *s, size_t len, size_t pos, size_t *clen);

/* iteration, and the work bound every step counts against */
kvr_jlist_t *kvr_jiter(kvr_jinja_render_t *r, kvr_jv_t v);
void kvr_jstep(kvr_jinja_render_t *r, uint64_t n);

/* attributes, items and slices (kvr_jinja_access.c) */
kvr_jv_t kvr_jgetattr(kvr_jinja_render_t *r, kvr_jv_t obj, const char *name,
    size_t len);
kvr_jv_t kvr_jgetitem(kvr_jinja_render_t *r, kvr_jv_t obj, kvr_jv_t key);
kvr_jv_t kvr_jslice(kvr_jinja_render_t *r, kvr_jv_t obj, kvr_jv_t *part);

/* operators (kvr_jinja_op.c): KVR_JOP_* */
kvr_jv_t kvr_jbinop(kvr_jinja_render_t *r, int op, kvr_jv_t a, kvr_jv_t b);
int kvr_jcompare(kvr_jinja_render_t *r, int op, kvr_jv_t a, kvr_jv_t b);

/* evaluator */
kvr_jv_t kvr_jeval(kvr_jinja_render_t *r, kvr_jscope_t *sc, kvr_jn_t *n);
kvr_jv_t kvr_jcall(kvr_jinja_render_t *r, kvr_jv_t fn, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw);

/* builtins: ids looked up at compile time (-1 when unknown) */
int kvr_jfilter_id(const char *name, size_t len);
int kvr_jtest_id(const char *name, size_t len);
int kvr_jglobal_id(const char *name, size_t len);
int kvr_jfilter_lazy(int id);
kvr_jv_t kvr_jfilter_apply(kvr_jinja_render_t *r, int id, kvr_jv_t v,
    kvr_jv_t *args, uint32_t nargs, const char **kwn, uint32_t *kwl,
    kvr_jv_t *kwv, uint32_t nkw);
int kvr_jtest_apply(kvr_jinja_render_t *r, int id, kvr_jv_t v,
    kvr_jv_t *args, uint32_t nargs);
kvr_jv_t kvr_jglobal_call(kvr_jinja_render_t *r, int id, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw);
kvr_jv_t kvr_jmethod_lookup(kvr_jinja_render_t *r, kvr_jv_t obj,
    const char *name, size_t len, int *found);
kvr_jv_t kvr_jmethod_call(kvr_jinja_render_t *r, kvr_jmethod_t *m,
    kvr_jv_t *args, uint32_t nargs, const char **kwn, uint32_t *kwl,
    kvr_jv_t *kwv, uint32_t nkw);


#endif /* _KVR_JINJA_INT_H_INCLUDED_ */
