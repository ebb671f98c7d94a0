/*
 * Copyright (C) kvroute developers
 *
 * The Jinja subset's tokens and the state the lexer (kvr_jinja_lex.c)
 * and the parser (kvr_jinja_parse.c) share.  Not for use outside them.
 */

#ifndef _KVR_JINJA_LEX_H_INCLUDED_
#define _KVR_JINJA_LEX_H_INCLUDED_


#include "kvr_jinja_int.h"


typedef enum {
    T_EOF = 0,
    T_DATA,
    T_VBEGIN,
    T_VEND,
    T_BBEGIN,
    T_BEND,
    T_NAME,
    T_STR,
    T_INT,
    T_FLOAT,
    T_OP
} kvr_jtok_type_e;


typedef struct {
    uint8_t              type;
    uint32_t             line;
    const char          *p;         /* names, operators, decoded strings */
    size_t               len;
    int64_t              i;
    double               f;
} kvr_jtok_t;


typedef struct {
    kvr_jinja_tpl_t     *tpl;
    const char          *src;
    size_t               len;
    kvr_jtok_t          *toks;
    size_t               n;
    size_t               cap;
    size_t               pos;
    uint32_t             line;
    uint32_t             depth;
    uint32_t             loops;     /* enclosing for bodies */
} kvr_jparser_t;


/* a compile error at line: never returns (longjmp to kvr_jinja_compile) */
void kvr_jp_error(kvr_jparser_t *p, uint32_t line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

/* the whole source to p->toks, ending with T_EOF */
void kvr_jp_lex(kvr_jparser_t *p);


#endif /* _KVR_JINJA_LEX_H_INCLUDED_ */
