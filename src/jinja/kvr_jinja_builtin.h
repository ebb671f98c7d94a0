/*
 * Copyright (C) kvroute developers
 *
 * What the Jinja subset's builtins share: names looked up in tables,
 * arguments bound by position or keyword, python's str operations
 * (kvr_jinja_str.c) and the method ids (kvr_jinja_method.c) that the
 * filters also use.  For kvr_jinja_builtin.c, _str.c, _method.c, _test.c,
 * _filter.c and _global.c only.
 */

#ifndef _KVR_JINJA_BUILTIN_H_INCLUDED_
#define _KVR_JINJA_BUILTIN_H_INCLUDED_


#include "kvr_jinja_int.h"


/* a row of a table of names (filters, tests, globals, methods) */
typedef struct {
    const char  *name;
    int          id;
} kvr_jname_t;


/* the arguments of a builtin's call, as the template gave them */
typedef struct {
    kvr_jv_t            *args;      /* positional */
    uint32_t             nargs;
    const char         **kwn;       /* keyword names, lengths, values */
    uint32_t            *kwl;
    kvr_jv_t            *kwv;
    uint32_t             nkw;
} kvr_jargs_t;


/* methods; negative ids are the loop's (cycle, changed) */
enum {
    M_UNSUPPORTED = 1,
    M_STARTSWITH, M_ENDSWITH, M_STRIP, M_LSTRIP, M_RSTRIP, M_SPLIT,
    M_RSPLIT, M_REPLACE, M_UPPER, M_LOWER, M_TITLE, M_CAPITALIZE, M_FIND,
    M_RFIND, M_COUNT, M_JOIN, M_ISDIGIT, M_ISSPACE, M_ISALPHA, M_ISALNUM,
    M_REMOVEPREFIX, M_REMOVESUFFIX, M_SPLITLINES,
    M_ITEMS, M_KEYS, M_VALUES, M_GET,
    M_LCOUNT, M_LINDEX
};


int kvr_jname_find(const kvr_jname_t *table, const char *name, size_t len);
int kvr_jarg(kvr_jv_t *args, uint32_t nargs, const char **kwn, uint32_t *kwl,
    kvr_jv_t *kwv, uint32_t nkw, uint32_t pos, const char *name,
    kvr_jv_t *out);
void kvr_jcheck_kw(kvr_jinja_render_t *r, const char *what, const char **kwn,
    uint32_t *kwl, uint32_t nkw, const char *const *allowed);
int kvr_jargs_get(kvr_jargs_t *call, uint32_t pos, const char *name,
    kvr_jv_t *out);
void kvr_jargs_check(kvr_jinja_render_t *r, const char *what,
    kvr_jargs_t *call, const char *const *allowed);
void kvr_jneed_str(kvr_jinja_render_t *r, kvr_jv_t v, const char *what);
kvr_jv_t kvr_jtuple2(kvr_jinja_render_t *r, kvr_jv_t a, kvr_jv_t b);
kvr_jv_t kvr_jdict_view(kvr_jinja_render_t *r, kvr_jdict_t *d, int what,
    int flags);
kvr_jv_t kvr_jstrip(kvr_jv_t s, const kvr_jv_t *chars, int left, int right);
kvr_jv_t kvr_jstrip_call(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t *args,
    uint32_t nargs, int left, int right);
kvr_jv_t kvr_jcase(kvr_jinja_render_t *r, kvr_jv_t s, int how);
kvr_jv_t kvr_jtitle_filter(kvr_jinja_render_t *r, kvr_jv_t s);
kvr_jv_t kvr_jreplace(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t old,
    kvr_jv_t new, int64_t count);
kvr_jv_t kvr_jsplit(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw, int reverse);
kvr_jlist_t *kvr_jsplitlines(kvr_jinja_render_t *r, kvr_jv_t s);
int kvr_jprefix(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t arg, int suffix);
kvr_jv_t kvr_jjoin(kvr_jinja_render_t *r, kvr_jv_t sep, kvr_jlist_t *items,
    int need_str);
kvr_jv_t kvr_jfind(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t sub,
    int reverse);
kvr_jv_t kvr_jis_class(kvr_jinja_render_t *r, kvr_jv_t s, int id);


#endif /* _KVR_JINJA_BUILTIN_H_INCLUDED_ */
