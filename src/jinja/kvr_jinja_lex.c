/*
 * Copyright (C) kvroute developers
 *
 * The Jinja subset's lexer: source text to tokens.  It applies Jinja2's
 * whitespace rules as transformers configures them (trim_blocks,
 * lstrip_blocks, "-" and "+" modifiers, newlines normalized, one trailing
 * newline dropped).
 */

#define _GNU_SOURCE

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "kvr_jinja_int.h"
#include "kvr_jinja_lex.h"


/* the operators, the two-character ones first */
static const char  *kvr_jp_ops[] = {
    "//", "**", "==", "!=", "<=", ">=",
    "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", "<", ">",
    "=", ".", ":", "|", ",", NULL
};


static kvr_jtok_t *kvr_jp_push(kvr_jparser_t *p, int type);
static void kvr_jp_count_lines(kvr_jparser_t *p, size_t from, size_t to);
static size_t kvr_jp_skip_space(kvr_jparser_t *p, size_t pos);
static size_t kvr_jp_rstrip(kvr_jparser_t *p, size_t from, size_t to);
static void kvr_jp_string(kvr_jparser_t *p, size_t *pos);
static void kvr_jp_number(kvr_jparser_t *p, size_t *pos);
static size_t kvr_jp_tag(kvr_jparser_t *p, size_t pos, int block);


void
kvr_jp_error(kvr_jparser_t *p, uint32_t line, const char *fmt, ...)
{
    va_list  ap;
    int      n;

    n = snprintf(p->tpl->err, sizeof(p->tpl->err), "line %u: ", line);
    va_start(ap, fmt);
    vsnprintf(p->tpl->err + n, sizeof(p->tpl->err) - n, fmt, ap);
    va_end(ap);
    longjmp(p->tpl->jmp, 1);
}


static kvr_jtok_t *
kvr_jp_push(kvr_jparser_t *p, int type)
{
    kvr_jtok_t  *t;

    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 256;
        t = realloc(p->toks, p->cap * sizeof(kvr_jtok_t));
        if (t == NULL) {
            kvr_jp_error(p, p->line, "out of memory");
        }
        p->toks = t;
    }

    t = &p->toks[p->n++];
    memset(t, 0, sizeof(*t));
    t->type = type;
    t->line = p->line;

    return t;
}


static void
kvr_jp_count_lines(kvr_jparser_t *p, size_t from, size_t to)
{
    for ( ; from < to; from++) {
        if (p->src[from] == '\n') {
            p->line++;
        }
    }
}


/* skips python whitespace from pos */
static size_t
kvr_jp_skip_space(kvr_jparser_t *p, size_t pos)
{
    size_t  clen;

    while (pos < p->len && kvr_jpy_space_at(p->src, p->len, pos, &clen)) {
        pos += clen;
    }

    return pos;
}


/* python str.rstrip() of src[from..to): returns the new end */
static size_t
kvr_jp_rstrip(kvr_jparser_t *p, size_t from, size_t to)
{
    size_t  pos, last, clen;

    last = from;
    pos = from;

    while (pos < to) {
        if (kvr_jpy_space_at(p->src, to, pos, &clen)) {
            pos += clen;
            continue;
        }
        kvr_jutf8_next(p->src, to, &pos);
        last = pos;
    }

    return last;
}


static void
kvr_jp_string(kvr_jparser_t *p, size_t *pos)
{
    char        quote, c, *buf;
    size_t      i, n, end, k;
    uint32_t    cp, digits;
    kvr_jtok_t  *t;

    quote = p->src[*pos];
    end = *pos + 1;

    while (end < p->len && p->src[end] != quote) {
        end += (p->src[end] == '\\') ? 2 : 1;
    }

    if (end >= p->len) {
        kvr_jp_error(p, p->line, "unterminated string");
    }

    buf = kvr_jalloc(&p->tpl->arena, end - *pos + 1);
    n = 0;

    for (i = *pos + 1; i < end; i++) {
        c = p->src[i];

        if (c != '\\') {
            buf[n++] = c;
            continue;
        }

        c = p->src[++i];
        cp = 0;
        digits = 0;

        switch (c) {
        case '\n': continue;
        case '\\': buf[n++] = '\\'; continue;
        case '\'': buf[n++] = '\''; continue;
        case '"': buf[n++] = '"'; continue;
        case 'a': buf[n++] = '\a'; continue;
        case 'b': buf[n++] = '\b'; continue;
        case 'f': buf[n++] = '\f'; continue;
        case 'n': buf[n++] = '\n'; continue;
        case 'r': buf[n++] = '\r'; continue;
        case 't': buf[n++] = '\t'; continue;
        case 'v': buf[n++] = '\v'; continue;
        case 'x': digits = 2; break;
        case 'u': digits = 4; break;
        case 'U': digits = 8; break;
        case 'N':
            kvr_jp_error(p, p->line, "\\N{} escapes are not supported");
        default:
            if (c >= '0' && c <= '7') {
                for (k = 0; k < 3 && i < end && p->src[i] >= '0'
                     && p->src[i] <= '7'; k++, i++)
                {
                    cp = cp * 8 + (p->src[i] - '0');
                }
                i--;
                digits = 0;
                goto put;
            }
            buf[n++] = '\\';
            buf[n++] = c;
            continue;
        }

        for (k = 0; k < digits; k++) {
            c = (i + 1 < end) ? p->src[++i] : 0;
            if (c >= '0' && c <= '9') {
                cp = cp * 16 + (c - '0');
            } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
                cp = cp * 16 + ((c | 0x20) - 'a' + 10);
            } else {
                kvr_jp_error(p, p->line, "truncated \\%c escape",
                             digits == 2 ? 'x' : (digits == 4 ? 'u' : 'U'));
            }
        }

    put:

        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            kvr_jp_error(p, p->line, "escape outside unicode scalars");
        }

        if (cp < 0x80) {
            buf[n++] = (char) cp;
        } else if (cp < 0x800) {
            buf[n++] = (char) (0xc0 | (cp >> 6));
            buf[n++] = (char) (0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            buf[n++] = (char) (0xe0 | (cp >> 12));
            buf[n++] = (char) (0x80 | ((cp >> 6) & 0x3f));
            buf[n++] = (char) (0x80 | (cp & 0x3f));
        } else {
            buf[n++] = (char) (0xf0 | (cp >> 18));
            buf[n++] = (char) (0x80 | ((cp >> 12) & 0x3f));
            buf[n++] = (char) (0x80 | ((cp >> 6) & 0x3f));
            buf[n++] = (char) (0x80 | (cp & 0x3f));
        }
    }

    t = kvr_jp_push(p, T_STR);
    t->p = buf;
    t->len = n;
    kvr_jp_count_lines(p, *pos, end);
    *pos = end + 1;
}


static void
kvr_jp_number(kvr_jparser_t *p, size_t *pos)
{
    char         buf[64], *end;
    size_t       i, n;
    int          is_float;
    kvr_jtok_t  *t;

    i = *pos;
    is_float = 0;

    while (i < p->len && p->src[i] >= '0' && p->src[i] <= '9') {
        i++;
    }

    if (i + 1 < p->len && p->src[i] == '.' && p->src[i + 1] >= '0'
        && p->src[i + 1] <= '9')
    {
        is_float = 1;
        for (i++; i < p->len && p->src[i] >= '0' && p->src[i] <= '9'; i++) {
            /* fraction digits */
        }
    }

    if (i < p->len && (p->src[i] | 0x20) == 'e') {
        n = i + 1;
        if (n < p->len && (p->src[n] == '+' || p->src[n] == '-')) {
            n++;
        }
        if (n < p->len && p->src[n] >= '0' && p->src[n] <= '9') {
            is_float = 1;
            for (i = n; i < p->len && p->src[i] >= '0' && p->src[i] <= '9';
                 i++)
            {
                /* exponent digits */
            }
        }
    }

    if (i < p->len && (p->src[i] == '_' || ((p->src[i] | 0x20) >= 'a'
        && (p->src[i] | 0x20) <= 'z')))
    {
        kvr_jp_error(p, p->line, "unsupported number literal");
    }

    n = i - *pos;
    if (n >= sizeof(buf)) {
        kvr_jp_error(p, p->line, "number literal too long");
    }

    memcpy(buf, p->src + *pos, n);
    buf[n] = '\0';

    if (!is_float && n > 1 && buf[0] == '0') {
        kvr_jp_error(p, p->line, "unsupported number literal");
    }

    errno = 0;
    if (is_float) {
        t = kvr_jp_push(p, T_FLOAT);
        t->f = strtod(buf, &end);
    } else {
        t = kvr_jp_push(p, T_INT);
        t->i = strtoll(buf, &end, 10);
    }

    if (errno) {
        kvr_jp_error(p, p->line, "number literal out of range");
    }

    *pos = i;
}


/* the tokens of a tag up to and including its end; returns the end */
static size_t
kvr_jp_tag(kvr_jparser_t *p, size_t pos, int block)
{
    char         c;
    size_t       i, n, start;
    int          balance;
    kvr_jtok_t  *t;

    balance = 0;

    for ( ;; ) {
        start = pos;
        pos = kvr_jp_skip_space(p, pos);
        kvr_jp_count_lines(p, start, pos);

        if (pos >= p->len) {
            kvr_jp_error(p, p->line, "unexpected end of template in a tag");
        }

        c = p->src[pos];

        if (balance == 0) {
            if (block && c == '-' && pos + 2 < p->len + 0
                && p->src[pos + 1] == '%' && p->src[pos + 2] == '}')
            {
                kvr_jp_push(p, T_BEND);
                return kvr_jp_skip_space(p, pos + 3);
            }
            if (block && c == '+' && pos + 2 < p->len
                && p->src[pos + 1] == '%' && p->src[pos + 2] == '}')
            {
                kvr_jp_push(p, T_BEND);
                return pos + 3;
            }
            if (block && c == '%' && pos + 1 < p->len
                && p->src[pos + 1] == '}')
            {
                kvr_jp_push(p, T_BEND);
                pos += 2;
                return (pos < p->len && p->src[pos] == '\n') ? pos + 1 : pos;
            }
            if (!block && c == '-' && pos + 2 < p->len
                && p->src[pos + 1] == '}' && p->src[pos + 2] == '}')
            {
                kvr_jp_push(p, T_VEND);
                return kvr_jp_skip_space(p, pos + 3);
            }
            if (!block && c == '}' && pos + 1 < p->len
                && p->src[pos + 1] == '}')
            {
                kvr_jp_push(p, T_VEND);
                return pos + 2;
            }
        }

        if (c == '\'' || c == '"') {
            kvr_jp_string(p, &pos);
            continue;
        }

        if (c >= '0' && c <= '9') {
            kvr_jp_number(p, &pos);
            continue;
        }

        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') {
            i = pos;
            while (i < p->len && (((p->src[i] | 0x20) >= 'a'
                   && (p->src[i] | 0x20) <= 'z') || p->src[i] == '_'
                   || (p->src[i] >= '0' && p->src[i] <= '9')))
            {
                i++;
            }
            t = kvr_jp_push(p, T_NAME);
            t->p = p->src + pos;
            t->len = i - pos;
            pos = i;
            continue;
        }

        if (c == '_') {
            kvr_jp_error(p, p->line, "names starting with '_' are refused "
                         "(the sandbox blocks them)");
        }

        for (i = 0; kvr_jp_ops[i]; i++) {
            n = strlen(kvr_jp_ops[i]);
            if (pos + n <= p->len && memcmp(p->src + pos, kvr_jp_ops[i], n)
                == 0)
            {
                break;
            }
        }

        if (kvr_jp_ops[i] == NULL) {
            kvr_jp_error(p, p->line, "unexpected character '%c'", c);
        }

        if (c == '(' || c == '[' || c == '{') {
            balance++;
        } else if ((c == ')' || c == ']' || c == '}') && balance > 0) {
            balance--;
        }

        t = kvr_jp_push(p, T_OP);
        t->p = kvr_jp_ops[i];
        t->len = n;
        pos += n;
    }
}


void
kvr_jp_lex(kvr_jparser_t *p)
{
    char         kind, sign;
    size_t       pos, tag, text_end, lpos, i, clen, e;
    int          line_starting, all_space;
    kvr_jtok_t  *t;

    pos = 0;
    line_starting = 1;

    while (pos < p->len) {
        for (tag = pos; tag + 1 < p->len; tag++) {
            if (p->src[tag] == '{' && (p->src[tag + 1] == '{'
                || p->src[tag + 1] == '%' || p->src[tag + 1] == '#'))
            {
                break;
            }
        }

        if (tag + 1 >= p->len) {
            t = kvr_jp_push(p, T_DATA);
            t->p = p->src + pos;
            t->len = p->len - pos;
            kvr_jp_count_lines(p, pos, p->len);
            break;
        }

        kind = p->src[tag + 1];
        sign = (tag + 2 < p->len) ? p->src[tag + 2] : 0;
        if (sign != '-' && sign != '+') {
            sign = 0;
        }

        text_end = tag;

        if (sign == '-') {
            text_end = kvr_jp_rstrip(p, pos, tag);

        } else if (sign == 0 && kind != '{') {
            lpos = pos;
            for (i = pos; i < tag; i++) {
                if (p->src[i] == '\n') {
                    lpos = i + 1;
                }
            }

            if ((lpos > pos || line_starting) && lpos < tag) {
                all_space = 1;
                for (i = lpos; i < tag; i += clen) {
                    if (!kvr_jpy_space_at(p->src, tag, i, &clen)) {
                        all_space = 0;
                        break;
                    }
                }
                if (all_space) {
                    text_end = lpos;
                }
            }
        }

        if (text_end > pos) {
            t = kvr_jp_push(p, T_DATA);
            t->p = p->src + pos;
            t->len = text_end - pos;
        }

        kvr_jp_count_lines(p, pos, tag);
        pos = tag + 2 + (sign ? 1 : 0);

        if (kind == '#') {
            for (e = pos; e + 1 < p->len; e++) {
                if (p->src[e] == '#' && p->src[e + 1] == '}') {
                    break;
                }
            }
            if (e + 1 >= p->len) {
                kvr_jp_error(p, p->line, "missing end of comment tag");
            }
            kvr_jp_count_lines(p, pos, e);

            if (e > pos && p->src[e - 1] == '-') {
                pos = kvr_jp_skip_space(p, e + 2);
            } else if (e > pos && p->src[e - 1] == '+') {
                pos = e + 2;
            } else {
                pos = e + 2;
                if (pos < p->len && p->src[pos] == '\n') {
                    pos++;
                }
            }

        } else {
            kvr_jp_push(p, kind == '{' ? T_VBEGIN : T_BBEGIN);
            e = pos;
            pos = kvr_jp_tag(p, pos, kind == '%');
            (void) e;
        }

        kvr_jp_count_lines(p, tag, 0);
        line_starting = (p->src[pos - 1] == '\n');
    }

    kvr_jp_push(p, T_EOF);
}
