/*
 * Copyright (C) kvroute developers
 *
 * The Jinja subset's builtins: filters, tests, global functions
 * (transformers' raise_exception and strftime_now among them) and the
 * python methods of str, dict and list.  Each follows Jinja2 3.1 and
 * CPython; where exactness would need Unicode tables (case mapping of
 * non-ASCII letters) the render fails instead of guessing.
 */

#define _GNU_SOURCE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvr_jinja_int.h"


typedef struct {
    const char  *name;
    int          id;
} kvr_jname_t;


enum {
    F_ABS = 1, F_CAPITALIZE, F_COUNT, F_DEFAULT, F_FIRST, F_FLOAT, F_INDENT,
    F_INT, F_ITEMS, F_JOIN, F_LAST, F_LENGTH, F_LIST, F_LOWER, F_MAP,
    F_REJECT, F_REJECTATTR, F_REPLACE, F_REVERSE, F_SELECT, F_SELECTATTR,
    F_SORT, F_STRING, F_SUM, F_TITLE, F_TOJSON, F_TRIM, F_UPPER, F_DICTSORT
};

static const kvr_jname_t  kvr_jfilters[] = {
    { "abs", F_ABS }, { "capitalize", F_CAPITALIZE }, { "count", F_COUNT },
    { "d", F_DEFAULT }, { "default", F_DEFAULT }, { "first", F_FIRST },
    { "float", F_FLOAT }, { "indent", F_INDENT }, { "int", F_INT },
    { "items", F_ITEMS }, { "join", F_JOIN }, { "last", F_LAST },
    { "length", F_LENGTH }, { "list", F_LIST }, { "lower", F_LOWER },
    { "map", F_MAP }, { "reject", F_REJECT }, { "rejectattr", F_REJECTATTR },
    { "replace", F_REPLACE }, { "reverse", F_REVERSE },
    { "select", F_SELECT }, { "selectattr", F_SELECTATTR },
    { "sort", F_SORT }, { "string", F_STRING }, { "sum", F_SUM },
    { "title", F_TITLE }, { "tojson", F_TOJSON }, { "trim", F_TRIM },
    { "upper", F_UPPER }, { "dictsort", F_DICTSORT },
    { NULL, 0 }
};


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


enum {
    G_RANGE = 1, G_NAMESPACE, G_RAISE, G_STRFTIME, G_DICT, G_UNSUPPORTED
};

static const kvr_jname_t  kvr_jglobals[] = {
    { "range", G_RANGE }, { "namespace", G_NAMESPACE },
    { "raise_exception", G_RAISE }, { "strftime_now", G_STRFTIME },
    { "dict", G_DICT }, { "lipsum", G_UNSUPPORTED },
    { "cycler", G_UNSUPPORTED }, { "joiner", G_UNSUPPORTED },
    { NULL, 0 }
};


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


static int
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


int
kvr_jfilter_id(const char *name, size_t len)
{
    return kvr_jname_find(kvr_jfilters, name, len);
}


/* filters that are python generators: they raise only when consumed */
int
kvr_jfilter_lazy(int id)
{
    return id == F_MAP || id == F_SELECT || id == F_REJECT
           || id == F_SELECTATTR || id == F_REJECTATTR || id == F_ITEMS;
}


int
kvr_jtest_id(const char *name, size_t len)
{
    return kvr_jname_find(kvr_jtests, name, len);
}


int
kvr_jglobal_id(const char *name, size_t len)
{
    return kvr_jname_find(kvr_jglobals, name, len);
}


/* argument binding: positional index pos or keyword name */
static int
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
static void
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


static void
kvr_jneed_str(kvr_jinja_render_t *r, kvr_jv_t v, const char *what)
{
    if (v.type != KVR_JV_STR) {
        kvr_jfail(r, KVR_JINJA_ERROR, "%s: expected a string, got %s", what,
                  kvr_jv_type_name(v));
    }
}


/* strings */

static int
kvr_jin_chars(uint32_t cp, kvr_jv_t chars)
{
    size_t    i;
    uint32_t  c;

    for (i = 0; i < chars.len; ) {
        c = kvr_jutf8_next(chars.u.s, chars.len, &i);
        if (c == cp) {
            return 1;
        }
    }

    return 0;
}


/* python str.strip / lstrip / rstrip; chars NULL = whitespace */
static kvr_jv_t
kvr_jstrip(kvr_jv_t s, const kvr_jv_t *chars, int left, int right)
{
    size_t    start, end, i, last;
    uint32_t  cp;
    int       strip;

    start = 0;
    end = s.len;

    if (left) {
        while (start < end) {
            i = start;
            cp = kvr_jutf8_next(s.u.s, s.len, &i);
            strip = chars ? kvr_jin_chars(cp, *chars) : kvr_jpy_space(cp);
            if (!strip) {
                break;
            }
            start = i;
        }
    }

    if (right) {
        /* forward scan: the end of the last kept code point */
        last = start;
        for (i = start; i < end; ) {
            cp = kvr_jutf8_next(s.u.s, s.len, &i);
            strip = chars ? kvr_jin_chars(cp, *chars) : kvr_jpy_space(cp);
            if (!strip) {
                last = i;
            }
        }
        end = last;
    }

    return kvr_jv_str(s.u.s + start, end - start);
}


static kvr_jv_t
kvr_jstrip_call(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t *args,
    uint32_t nargs, int left, int right)
{
    if (nargs == 0 || args[0].type == KVR_JV_NONE) {
        return kvr_jstrip(s, NULL, left, right);
    }

    kvr_jneed_str(r, args[0], "strip");
    return kvr_jstrip(s, &args[0], left, right);
}


static int
kvr_jcaseless(kvr_jv_t s)
{
    size_t    i;
    uint32_t  cp;

    for (i = 0; i < s.len; ) {
        cp = kvr_jutf8_next(s.u.s, s.len, &i);
        if (cp < 0x80 || (cp >= 0x2000 && cp <= 0x206f)
            || (cp >= 0x3000 && cp <= 0x9fff) || (cp >= 0xac00 && cp <= 0xd7a3)
            || (cp >= 0x1f000 && cp <= 0x1faff))
        {
            continue;
        }
        return 0;
    }

    return 1;
}


/* case mapping: 'u' upper, 'l' lower, 't' python title, 'c' capitalize */
static kvr_jv_t
kvr_jcase(kvr_jinja_render_t *r, kvr_jv_t s, int how)
{
    char    *buf, c;
    size_t   i;
    int      prev_cased;

    if (!kvr_jcaseless(s)) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "case mapping of non-ASCII "
                  "letters");
    }

    buf = kvr_jr_alloc(r, s.len + 1);
    prev_cased = 0;

    for (i = 0; i < s.len; i++) {
        c = s.u.s[i];
        switch (how) {
        case 'u':
            c = (c >= 'a' && c <= 'z') ? c - 32 : c;
            break;
        case 'l':
            c = (c >= 'A' && c <= 'Z') ? c + 32 : c;
            break;
        case 't':
            if (prev_cased) {
                c = (c >= 'A' && c <= 'Z') ? c + 32 : c;
            } else {
                c = (c >= 'a' && c <= 'z') ? c - 32 : c;
            }
            break;
        default:
            if (i == 0) {
                c = (c >= 'a' && c <= 'z') ? c - 32 : c;
            } else {
                c = (c >= 'A' && c <= 'Z') ? c + 32 : c;
            }
        }
        prev_cased = ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
        buf[i] = c;
    }

    return kvr_jv_str(buf, s.len);
}


/* jinja's title filter: words start after whitespace and -([{< */
static kvr_jv_t
kvr_jtitle_filter(kvr_jinja_render_t *r, kvr_jv_t s)
{
    char    *buf, c;
    size_t   i, clen;
    int      start;

    if (!kvr_jcaseless(s)) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "case mapping of non-ASCII "
                  "letters");
    }

    buf = kvr_jr_alloc(r, s.len + 1);
    start = 1;

    for (i = 0; i < s.len; i++) {
        c = s.u.s[i];
        if (kvr_jpy_space_at(s.u.s, s.len, i, &clen) || c == '-' || c == '('
            || c == '{' || c == '[' || c == '<')
        {
            memcpy(buf + i, s.u.s + i, clen ? clen : 1);
            i += (clen ? clen : 1) - 1;
            start = 1;
            continue;
        }
        if (start) {
            c = (c >= 'a' && c <= 'z') ? c - 32 : c;
        } else {
            c = (c >= 'A' && c <= 'Z') ? c + 32 : c;
        }
        start = 0;
        buf[i] = c;
    }

    return kvr_jv_str(buf, s.len);
}


static kvr_jv_t
kvr_jreplace(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t old, kvr_jv_t new,
    int64_t count)
{
    kvr_jsink_t   out;
    size_t        i, next;
    const char   *hit;

    kvr_jsink_grow_init(&out, r->arena.max);

    if (count < 0) {
        count = INT64_MAX;
    }

    if (old.len == 0) {
        for (i = 0; i <= s.len; ) {
            if (count > 0) {
                kvr_jsink_put(r, &out, new.u.s, new.len);
                count--;
            }
            if (i == s.len) {
                break;
            }
            next = i;
            kvr_jutf8_next(s.u.s, s.len, &next);
            kvr_jsink_put(r, &out, s.u.s + i, next - i);
            i = next;
        }
        return kvr_jv_str(out.buf ? out.buf : "", out.len);
    }

    i = 0;
    while (count > 0 && (hit = memmem(s.u.s + i, s.len - i, old.u.s,
                                      old.len)) != NULL)
    {
        kvr_jsink_put(r, &out, s.u.s + i, hit - (s.u.s + i));
        kvr_jsink_put(r, &out, new.u.s, new.len);
        i = (hit - s.u.s) + old.len;
        count--;
    }
    kvr_jsink_put(r, &out, s.u.s + i, s.len - i);

    return kvr_jv_str(out.buf ? out.buf : "", out.len);
}


static void
kvr_jlist_add(kvr_jinja_render_t *r, kvr_jlist_t *l, kvr_jv_t v)
{
    uint32_t   cap;
    kvr_jv_t  *items;

    if (l->n == l->cap) {
        cap = l->cap ? l->cap * 2 : 8;
        items = kvr_jr_alloc(r, cap * sizeof(kvr_jv_t));
        if (l->n) {
            memcpy(items, l->items, l->n * sizeof(kvr_jv_t));
        }
        l->items = items;
        l->cap = cap;
    }

    l->items[l->n++] = v;
}


/* python str.split / rsplit (rsplit only without maxsplit limits) */
static kvr_jv_t
kvr_jsplit(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw, int reverse)
{
    int64_t        maxsplit;
    size_t         i, start, clen;
    const char    *hit;
    kvr_jv_t       sep, ms;
    kvr_jlist_t   *l;
    static const char  *kw[] = { "sep", "maxsplit", NULL };

    kvr_jcheck_kw(r, "split", kwn, kwl, nkw, kw);

    if (!kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "sep", &sep)) {
        sep = kvr_jv_none;
    }
    maxsplit = -1;
    if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1, "maxsplit", &ms)) {
        if (ms.type != KVR_JV_INT) {
            kvr_jfail(r, KVR_JINJA_ERROR, "maxsplit must be an integer");
        }
        maxsplit = ms.u.i;
    }

    if (reverse && maxsplit >= 0) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "rsplit with maxsplit");
    }

    l = kvr_jlist_new(r, 0);

    if (sep.type == KVR_JV_NONE) {
        /* runs of whitespace; no empty strings */
        i = 0;
        for ( ;; ) {
            while (i < s.len && kvr_jpy_space_at(s.u.s, s.len, i, &clen)) {
                i += clen;
            }
            if (i >= s.len) {
                break;
            }
            if (maxsplit == 0) {
                start = s.len;
                while (start > i
                       && kvr_jstrip(kvr_jv_str(s.u.s + i, s.len - i), NULL,
                                     0, 1).len != start - i)
                {
                    start = i + kvr_jstrip(kvr_jv_str(s.u.s + i, s.len - i),
                                           NULL, 0, 1).len;
                }
                kvr_jlist_add(r, l, kvr_jv_str(s.u.s + i, start - i));
                break;
            }
            start = i;
            while (i < s.len && !kvr_jpy_space_at(s.u.s, s.len, i, &clen)) {
                kvr_jutf8_next(s.u.s, s.len, &i);
            }
            kvr_jlist_add(r, l, kvr_jv_str(s.u.s + start, i - start));
            kvr_jstep(r, 1);
            if (maxsplit > 0) {
                maxsplit--;
            }
        }
        return kvr_jv_list(l);
    }

    kvr_jneed_str(r, sep, "split");
    if (sep.len == 0) {
        kvr_jfail(r, KVR_JINJA_ERROR, "empty separator");
    }

    i = 0;
    while (maxsplit != 0 && (hit = memmem(s.u.s + i, s.len - i, sep.u.s,
                                          sep.len)) != NULL)
    {
        kvr_jlist_add(r, l, kvr_jv_str(s.u.s + i, hit - (s.u.s + i)));
        i = (hit - s.u.s) + sep.len;
        kvr_jstep(r, 1);
        if (maxsplit > 0) {
            maxsplit--;
        }
    }
    kvr_jlist_add(r, l, kvr_jv_str(s.u.s + i, s.len - i));

    return kvr_jv_list(l);
}


/* python str.splitlines() boundaries */
static size_t
kvr_jline_break(const char *s, size_t len, size_t i)
{
    size_t    next;
    uint32_t  cp;

    next = i;
    cp = kvr_jutf8_next(s, len, &next);

    if (cp == '\r' && next < len && s[next] == '\n') {
        return 2;
    }

    if (cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c
        || (cp >= 0x1c && cp <= 0x1e) || cp == 0x85 || cp == 0x2028
        || cp == 0x2029)
    {
        return next - i;
    }

    return 0;
}


static kvr_jlist_t *
kvr_jsplitlines(kvr_jinja_render_t *r, kvr_jv_t s)
{
    size_t        i, start, b;
    kvr_jlist_t  *l;

    l = kvr_jlist_new(r, 0);
    start = 0;

    for (i = 0; i < s.len; ) {
        b = kvr_jline_break(s.u.s, s.len, i);
        if (b) {
            kvr_jlist_add(r, l, kvr_jv_str(s.u.s + start, i - start));
            i += b;
            start = i;
            continue;
        }
        kvr_jutf8_next(s.u.s, s.len, &i);
    }

    if (start < s.len) {
        kvr_jlist_add(r, l, kvr_jv_str(s.u.s + start, s.len - start));
    }

    return l;
}


static int
kvr_jprefix(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t arg, int suffix)
{
    uint32_t  i;

    if (arg.type == KVR_JV_LIST && (arg.flags & KVR_JV_TUPLE)) {
        for (i = 0; i < arg.u.list->n; i++) {
            if (kvr_jprefix(r, s, arg.u.list->items[i], suffix)) {
                return 1;
            }
        }
        return 0;
    }

    kvr_jneed_str(r, arg, suffix ? "endswith" : "startswith");

    if (arg.len > s.len) {
        return 0;
    }

    return memcmp(suffix ? s.u.s + s.len - arg.len : s.u.s, arg.u.s,
                  arg.len) == 0;
}


static kvr_jv_t
kvr_jjoin(kvr_jinja_render_t *r, kvr_jv_t sep, kvr_jlist_t *items,
    int need_str)
{
    uint32_t      i;
    kvr_jsink_t   out;
    kvr_jv_t      v;

    kvr_jsink_grow_init(&out, r->arena.max);

    for (i = 0; i < items->n; i++) {
        if (i) {
            kvr_jsink_put(r, &out, sep.u.s, sep.len);
        }
        v = items->items[i];
        if (need_str && v.type != KVR_JV_STR) {
            kvr_jfail(r, KVR_JINJA_ERROR, "sequence item %u: expected str "
                      "instance, %s found", i, kvr_jv_type_name(v));
        }
        kvr_jv_write_str(r, &out, v);
    }

    return kvr_jv_str(out.buf ? out.buf : "", out.len);
}


static kvr_jv_t
kvr_jfind(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t sub, int reverse)
{
    const char  *hit, *last;
    size_t       i;

    kvr_jneed_str(r, sub, "find");

    last = NULL;
    for (i = 0; i <= s.len; ) {
        hit = memmem(s.u.s + i, s.len - i, sub.u.s, sub.len);
        if (hit == NULL) {
            break;
        }
        last = hit;
        if (!reverse) {
            break;
        }
        i = (hit - s.u.s) + 1;
        kvr_jstep(r, 1);
    }

    if (last == NULL) {
        return kvr_jv_int(-1);
    }

    return kvr_jv_int((int64_t) kvr_jutf8_count(s.u.s, last - s.u.s));
}


/* ascii-only character class predicates; others refuse */
static kvr_jv_t
kvr_jis_class(kvr_jinja_render_t *r, kvr_jv_t s, int id)
{
    size_t   i, clen;
    char     c;
    int      ok;

    if (s.len == 0) {
        return kvr_jv_bool(0);
    }

    for (i = 0; i < s.len; i++) {
        c = s.u.s[i];
        if ((uint8_t) c >= 0x80) {
            if (id == M_ISSPACE) {
                if (!kvr_jpy_space_at(s.u.s, s.len, i, &clen)) {
                    return kvr_jv_bool(0);
                }
                i += clen - 1;
                continue;
            }
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "character classes of "
                      "non-ASCII text");
        }
        switch (id) {
        case M_ISDIGIT:
            ok = (c >= '0' && c <= '9');
            break;
        case M_ISSPACE:
            ok = kvr_jpy_space((uint8_t) c);
            break;
        case M_ISALPHA:
            ok = ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
            break;
        default:
            ok = ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
                 || (c >= '0' && c <= '9');
        }
        if (!ok) {
            return kvr_jv_bool(0);
        }
    }

    return kvr_jv_bool(1);
}


static kvr_jv_t
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


static kvr_jv_t
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


/* tests */

int
kvr_jtest_apply(kvr_jinja_render_t *r, int id, kvr_jv_t v, kvr_jv_t *args,
    uint32_t nargs)
{
    kvr_jv_t  m;

    if (id <= T_CALLABLE && nargs != 0) {
        kvr_jfail(r, KVR_JINJA_ERROR, "test takes 1 positional argument "
                  "but %u were given", nargs + 1);
    }

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
        break;
    }

    if (id == T_ODD || id == T_EVEN || id == T_LOWER || id == T_UPPER) {
        if (nargs != 0) {
            kvr_jfail(r, KVR_JINJA_ERROR, "test takes no arguments");
        }
    } else if (nargs != 1) {
        kvr_jfail(r, KVR_JINJA_ERROR, "test takes one argument");
    }

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
            for (nargs = 0; nargs < m.u.list->n; nargs++) {
                if (kvr_jv_eq(m.u.list->items[nargs], v)) {
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
        for (nargs = 0; nargs < v.len; nargs++) {
            if ((v.u.s[nargs] | 0x20) >= 'a' && (v.u.s[nargs] | 0x20) <= 'z') {
                return memcmp(m.u.s, v.u.s, v.len) == 0;
            }
        }
        return 0;
    default:
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "unknown test");
    }
}


/* filters */

static kvr_jv_t
kvr_jlength(kvr_jinja_render_t *r, kvr_jv_t v)
{
    switch (v.type) {
    case KVR_JV_STR:
        return kvr_jv_int((int64_t) kvr_jutf8_count(v.u.s, v.len));
    case KVR_JV_LIST:
        if (v.flags & KVR_JV_GEN) {
            kvr_jfail(r, KVR_JINJA_ERROR, "object of type 'generator' has "
                      "no len()");
        }
        return kvr_jv_int(v.u.list->n);
    case KVR_JV_DICT:
        return kvr_jv_int(v.u.dict->n);
    case KVR_JV_UNDEF:
        return kvr_jv_int(0);
    default:
        kvr_jfail(r, KVR_JINJA_ERROR, "object of type '%s' has no len()",
                  kvr_jv_type_name(v));
    }
}


/* jinja's make_attrgetter: dotted names, integer parts as indexes */
static kvr_jv_t
kvr_jattr_path(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t path)
{
    size_t    i, start;
    int64_t   idx;
    int       digits;

    if (path.type == KVR_JV_INT) {
        return kvr_jgetitem(r, v, path);
    }

    kvr_jneed_str(r, path, "attribute");

    start = 0;
    for (i = 0; i <= path.len; i++) {
        if (i < path.len && path.u.s[i] != '.') {
            continue;
        }
        digits = (i > start);
        idx = 0;
        for (size_t k = start; k < i; k++) {
            if (path.u.s[k] < '0' || path.u.s[k] > '9' || idx > 100000000) {
                digits = 0;
                break;
            }
            idx = idx * 10 + (path.u.s[k] - '0');
        }
        if (digits) {
            v = kvr_jgetitem(r, v, kvr_jv_int(idx));
        } else {
            v = kvr_jgetitem(r, v, kvr_jv_str(path.u.s + start, i - start));
        }
        start = i + 1;
    }

    return v;
}


/* select / reject / selectattr / rejectattr */
static kvr_jv_t
kvr_jselect(kvr_jinja_render_t *r, kvr_jv_t seq, kvr_jv_t *args,
    uint32_t nargs, int by_attr, int keep)
{
    uint32_t      i, first;
    int           id, ok;
    kvr_jlist_t  *in, *out;
    kvr_jv_t      item, test;

    in = kvr_jiter(r, seq);
    first = 0;

    if (by_attr) {
        if (nargs < 1) {
            kvr_jfail(r, KVR_JINJA_ERROR, "selectattr needs an attribute");
        }
        first = 1;
    }

    id = 0;
    if (nargs > first) {
        test = args[first];
        kvr_jneed_str(r, test, "select");
        id = kvr_jtest_id(test.u.s, test.len);
        if (id < 0) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "no test named '%.*s'",
                      (int) test.len, test.u.s);
        }
    }

    out = kvr_jlist_new(r, in->n);

    for (i = 0; i < in->n; i++) {
        kvr_jstep(r, 1);
        item = in->items[i];
        if (by_attr) {
            item = kvr_jattr_path(r, item, args[0]);
        }
        if (id) {
            ok = kvr_jtest_apply(r, id, item, args + first + 1,
                                 nargs - first - 1);
        } else {
            ok = kvr_jv_truthy(r, item);
        }
        if (ok == keep) {
            out->items[out->n++] = in->items[i];
        }
    }

    item = kvr_jv_list(out);
    item.flags = KVR_JV_GEN;

    return item;
}


static kvr_jv_t
kvr_jmap(kvr_jinja_render_t *r, kvr_jv_t seq, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    uint32_t      i;
    int           id;
    kvr_jlist_t  *in, *out;
    kvr_jv_t      attr, def, item, name;
    static const char  *kw[] = { "attribute", "default", NULL };

    in = kvr_jiter(r, seq);
    out = kvr_jlist_new(r, in->n);

    if (nargs == 0 && kvr_jarg(args, 0, kwn, kwl, kwv, nkw, 0, "attribute",
                               &attr))
    {
        kvr_jcheck_kw(r, "map", kwn, kwl, nkw, kw);
        if (!kvr_jarg(args, 0, kwn, kwl, kwv, nkw, 0, "default", &def)) {
            def = kvr_jv_undef;
        }
        for (i = 0; i < in->n; i++) {
            kvr_jstep(r, 1);
            item = kvr_jattr_path(r, in->items[i], attr);
            if (item.type == KVR_JV_UNDEF && def.type != KVR_JV_UNDEF) {
                item = def;
            }
            out->items[out->n++] = item;
        }
    } else {
        if (nargs == 0) {
            kvr_jfail(r, KVR_JINJA_ERROR, "map requires a filter argument");
        }
        name = args[0];
        kvr_jneed_str(r, name, "map");
        id = kvr_jfilter_id(name.u.s, name.len);
        if (id < 0) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "no filter named '%.*s'",
                      (int) name.len, name.u.s);
        }
        for (i = 0; i < in->n; i++) {
            kvr_jstep(r, 1);
            out->items[out->n++] = kvr_jfilter_apply(r, id, in->items[i],
                                                     args + 1, nargs - 1,
                                                     kwn, kwl, kwv, nkw);
        }
    }

    item = kvr_jv_list(out);
    item.flags = KVR_JV_GEN;

    return item;
}


static kvr_jv_t
kvr_jindent(kvr_jinja_render_t *r, kvr_jv_t s, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    int64_t       width, k;
    int           first, blank;
    uint32_t      i;
    kvr_jsink_t   out, pad;
    kvr_jlist_t  *lines;
    kvr_jv_t      w, f, b, t;
    static const char  *kw[] = { "width", "first", "blank", NULL };

    kvr_jcheck_kw(r, "indent", kwn, kwl, nkw, kw);

    kvr_jsink_grow_init(&pad, 4096);
    if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "width", &w)) {
        if (w.type == KVR_JV_STR) {
            kvr_jsink_put(r, &pad, w.u.s, w.len);
        } else if (w.type == KVR_JV_INT) {
            width = w.u.i;
            for (k = 0; k < width && k < 4096; k++) {
                kvr_jsink_put(r, &pad, " ", 1);
            }
        } else {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "indent width type");
        }
    } else {
        kvr_jsink_put(r, &pad, "    ", 4);
    }

    first = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1, "first", &f)
            && kvr_jv_truthy(r, f);
    blank = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 2, "blank", &b)
            && kvr_jv_truthy(r, b);

    /* s += "\n" then splitlines, as jinja does */
    kvr_jsink_grow_init(&out, r->arena.max);
    kvr_jsink_put(r, &out, s.u.s, s.len);
    kvr_jsink_put(r, &out, "\n", 1);
    lines = kvr_jsplitlines(r, kvr_jv_str(out.buf, out.len));

    kvr_jsink_grow_init(&out, r->arena.max);
    if (first) {
        kvr_jsink_put(r, &out, pad.buf, pad.len);
    }

    for (i = 0; i < lines->n; i++) {
        t = lines->items[i];
        if (i) {
            kvr_jsink_put(r, &out, "\n", 1);
            if (blank || t.len) {
                kvr_jsink_put(r, &out, pad.buf, pad.len);
            }
        }
        kvr_jsink_put(r, &out, t.u.s, t.len);
    }

    return kvr_jv_str(out.buf ? out.buf : "", out.len);
}


static kvr_jv_t
kvr_jtojson(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    int           indent, sort_keys;
    const char   *item_sep, *key_sep;
    char         *p;
    kvr_jsink_t   out;
    kvr_jv_t      a, sep;
    static const char  *kw[] = {
        "ensure_ascii", "indent", "separators", "sort_keys", NULL
    };

    kvr_jcheck_kw(r, "tojson", kwn, kwl, nkw, kw);

    if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "ensure_ascii", &a)
        && kvr_jv_truthy(r, a))
    {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "tojson ensure_ascii=True");
    }

    indent = -1;
    if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1, "indent", &a)
        && a.type != KVR_JV_NONE)
    {
        if (a.type != KVR_JV_INT || a.u.i < 0 || a.u.i > 64) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "tojson indent other than "
                      "a small integer");
        }
        indent = (int) a.u.i;
    }

    item_sep = (indent >= 0) ? "," : ", ";
    key_sep = ": ";

    if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 2, "separators", &a)
        && a.type != KVR_JV_NONE)
    {
        if (a.type != KVR_JV_LIST || a.u.list->n != 2
            || a.u.list->items[0].type != KVR_JV_STR
            || a.u.list->items[1].type != KVR_JV_STR)
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "tojson separators");
        }
        sep = a.u.list->items[0];
        p = kvr_jr_alloc(r, sep.len + 1);
        memcpy(p, sep.u.s, sep.len);
        p[sep.len] = '\0';
        item_sep = p;
        sep = a.u.list->items[1];
        p = kvr_jr_alloc(r, sep.len + 1);
        memcpy(p, sep.u.s, sep.len);
        p[sep.len] = '\0';
        key_sep = p;
        if (strlen(item_sep) != a.u.list->items[0].len
            || strlen(key_sep) != a.u.list->items[1].len)
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "nul in tojson separators");
        }
    }

    sort_keys = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 3, "sort_keys", &a)
                && kvr_jv_truthy(r, a);

    if (nargs > 4) {
        kvr_jfail(r, KVR_JINJA_ERROR, "tojson: too many arguments");
    }

    kvr_jsink_grow_init(&out, r->arena.max);
    kvr_jv_write_json(r, &out, v, indent, item_sep, key_sep, sort_keys, 0);

    return kvr_jv_str(out.buf ? out.buf : "", out.len);
}


/* jinja's int filter: int(s), else int(float(s)), else the default */
static kvr_jv_t
kvr_jto_int(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t def)
{
    char       buf[64], *end;
    size_t     n, k, sign;
    double     f;
    kvr_jv_t   s;

    switch (v.type) {
    case KVR_JV_INT:
        return v;
    case KVR_JV_BOOL:
        return kvr_jv_int(v.u.i);
    case KVR_JV_FLOAT:
        if (isnan(v.u.f) || isinf(v.u.f) || fabs(v.u.f) > 9.2e18) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "int() of a huge float");
        }
        return kvr_jv_int((int64_t) v.u.f);
    case KVR_JV_STR:
        break;
    default:
        return def;
    }

    s = kvr_jstrip(v, NULL, 1, 1);
    n = s.len;

    if (n == 0) {
        return def;
    }
    if (n >= sizeof(buf) || memchr(s.u.s, '_', n)) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "int() of this string");
    }

    memcpy(buf, s.u.s, n);
    buf[n] = '\0';

    sign = (buf[0] == '+' || buf[0] == '-');
    for (k = sign; k < n && buf[k] >= '0' && buf[k] <= '9'; k++) {
        /* digits */
    }

    if (k == n && n > sign) {
        if (n - sign > 18) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "int() of a long number");
        }
        return kvr_jv_int(strtoll(buf, &end, 10));
    }

    for (k = 0; k < n; k++) {
        if (!((buf[k] >= '0' && buf[k] <= '9') || buf[k] == '.'
              || buf[k] == 'e' || buf[k] == 'E' || buf[k] == '+'
              || buf[k] == '-'))
        {
            /* words (inf, nan) and other forms: not reproduced */
            if ((buf[k] | 0x20) == 'i' || (buf[k] | 0x20) == 'n') {
                kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "int() of this string");
            }
            return def;
        }
    }

    f = strtod(buf, &end);
    if (end != buf + n) {
        return def;
    }
    if (isinf(f) || fabs(f) > 9.2e18) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "int() of a huge number");
    }

    return kvr_jv_int((int64_t) f);
}


static kvr_jv_t
kvr_jto_float(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t def)
{
    char       buf[64], *end;
    size_t     k;
    kvr_jv_t   s;

    switch (v.type) {
    case KVR_JV_FLOAT:
        return v;
    case KVR_JV_INT:
    case KVR_JV_BOOL:
        return kvr_jv_float((double) v.u.i);
    case KVR_JV_STR:
        break;
    default:
        return def;
    }

    s = kvr_jstrip(v, NULL, 1, 1);
    if (s.len == 0) {
        return def;
    }
    if (s.len >= sizeof(buf)) {
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "float() of this string");
    }
    memcpy(buf, s.u.s, s.len);
    buf[s.len] = '\0';

    for (k = 0; k < s.len; k++) {
        if (!((buf[k] >= '0' && buf[k] <= '9') || buf[k] == '.'
              || buf[k] == 'e' || buf[k] == 'E' || buf[k] == '+'
              || buf[k] == '-'))
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "float() of this string");
        }
    }

    v = kvr_jv_float(strtod(buf, &end));
    return (end == buf + s.len) ? v : def;
}


/* stable merge sort of values (python's sorted) */
static void
kvr_jsort(kvr_jinja_render_t *r, kvr_jv_t *keys, kvr_jv_t *vals, uint32_t n,
    kvr_jv_t *tk, kvr_jv_t *tv, int reverse)
{
    uint32_t  h, i, j, k;
    int       c;

    if (n < 2) {
        return;
    }

    h = n / 2;
    kvr_jsort(r, keys, vals, h, tk, tv, reverse);
    kvr_jsort(r, keys + h, vals + h, n - h, tk, tv, reverse);

    memcpy(tk, keys, n * sizeof(kvr_jv_t));
    memcpy(tv, vals, n * sizeof(kvr_jv_t));

    for (i = 0, j = h, k = 0; k < n; k++) {
        if (i < h && j < n) {
            c = kvr_jv_cmp(r, tk[j], tk[i]);
            if (reverse ? c > 0 : c < 0) {
                keys[k] = tk[j];
                vals[k] = tv[j++];
            } else {
                keys[k] = tk[i];
                vals[k] = tv[i++];
            }
        } else if (i < h) {
            keys[k] = tk[i];
            vals[k] = tv[i++];
        } else {
            keys[k] = tk[j];
            vals[k] = tv[j++];
        }
    }
}


static kvr_jv_t
kvr_jsort_filter(kvr_jinja_render_t *r, kvr_jv_t seq, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    int           reverse, case_sensitive;
    uint32_t      i, n;
    kvr_jlist_t  *in, *out;
    kvr_jv_t     *keys, *tk, *tv, a, attr;
    static const char  *kw[] = {
        "reverse", "case_sensitive", "attribute", NULL
    };

    kvr_jcheck_kw(r, "sort", kwn, kwl, nkw, kw);

    reverse = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "reverse", &a)
              && kvr_jv_truthy(r, a);
    case_sensitive = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1,
                              "case_sensitive", &a) && kvr_jv_truthy(r, a);
    if (!kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 2, "attribute", &attr)) {
        attr = kvr_jv_none;
    }

    in = kvr_jiter(r, seq);
    n = in->n;
    kvr_jstep(r, n);

    out = kvr_jlist_new(r, n);
    keys = kvr_jr_alloc(r, (n + 1) * sizeof(kvr_jv_t));
    tk = kvr_jr_alloc(r, (n + 1) * sizeof(kvr_jv_t));
    tv = kvr_jr_alloc(r, (n + 1) * sizeof(kvr_jv_t));

    for (i = 0; i < n; i++) {
        out->items[i] = in->items[i];
        keys[i] = (attr.type == KVR_JV_NONE) ? in->items[i]
                  : kvr_jattr_path(r, in->items[i], attr);
        if (!case_sensitive && keys[i].type == KVR_JV_STR) {
            keys[i] = kvr_jcase(r, keys[i], 'l');
        }
    }
    out->n = n;

    kvr_jsort(r, keys, out->items, n, tk, tv, reverse);

    return kvr_jv_list(out);
}


static kvr_jv_t
kvr_jdictsort(kvr_jinja_render_t *r, kvr_jv_t v, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    int           case_sensitive, reverse, by_value;
    uint32_t      i, n;
    kvr_jlist_t  *out;
    kvr_jv_t     *keys, *tk, *tv, a;
    static const char  *kw[] = { "case_sensitive", "by", "reverse", NULL };

    kvr_jcheck_kw(r, "dictsort", kwn, kwl, nkw, kw);

    if (v.type != KVR_JV_DICT) {
        kvr_jfail(r, KVR_JINJA_ERROR, "dictsort of a non-mapping");
    }

    case_sensitive = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0,
                              "case_sensitive", &a) && kvr_jv_truthy(r, a);
    by_value = 0;
    if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1, "by", &a)) {
        if (kvr_jv_is_str(a, "value")) {
            by_value = 1;
        } else if (!kvr_jv_is_str(a, "key")) {
            kvr_jfail(r, KVR_JINJA_ERROR, "You can only sort by either "
                      "\"key\" or \"value\"");
        }
    }
    reverse = kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 2, "reverse", &a)
              && kvr_jv_truthy(r, a);

    n = v.u.dict->n;
    kvr_jstep(r, n);
    out = kvr_jlist_new(r, n);
    keys = kvr_jr_alloc(r, (n + 1) * sizeof(kvr_jv_t));
    tk = kvr_jr_alloc(r, (n + 1) * sizeof(kvr_jv_t));
    tv = kvr_jr_alloc(r, (n + 1) * sizeof(kvr_jv_t));

    for (i = 0; i < n; i++) {
        out->items[i] = kvr_jtuple2(r, v.u.dict->keys[i], v.u.dict->vals[i]);
        keys[i] = by_value ? v.u.dict->vals[i] : v.u.dict->keys[i];
        if (!case_sensitive && keys[i].type == KVR_JV_STR) {
            keys[i] = kvr_jcase(r, keys[i], 'l');
        }
    }
    out->n = n;

    kvr_jsort(r, keys, out->items, n, tk, tv, reverse);

    return kvr_jv_list(out);
}


kvr_jv_t
kvr_jfilter_apply(kvr_jinja_render_t *r, int id, kvr_jv_t v,
    kvr_jv_t *args, uint32_t nargs, const char **kwn, uint32_t *kwl,
    kvr_jv_t *kwv, uint32_t nkw)
{
    uint32_t      i;
    int64_t       count;
    kvr_jlist_t  *l, *in;
    kvr_jv_t      a, b, out;
    static const char  *kw_default[] = { "default_value", "boolean", NULL };
    static const char  *kw_join[] = { "d", "attribute", NULL };
    static const char  *kw_num[] = { "default", "base", NULL };
    static const char  *kw_trim[] = { "chars", NULL };
    static const char  *kw_sum[] = { "attribute", "start", NULL };
    static const char  *kw_replace[] = { "count", NULL };

    switch (id) {

    case F_TOJSON:
        return kvr_jtojson(r, v, args, nargs, kwn, kwl, kwv, nkw);

    case F_LENGTH:
    case F_COUNT:
        return kvr_jlength(r, v);

    case F_TRIM:
        kvr_jcheck_kw(r, "trim", kwn, kwl, nkw, kw_trim);
        v = kvr_jv_to_string(r, v);
        if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "chars", &a)
            && a.type != KVR_JV_NONE)
        {
            kvr_jneed_str(r, a, "trim");
            return kvr_jstrip(v, &a, 1, 1);
        }
        return kvr_jstrip(v, NULL, 1, 1);

    case F_STRING:
        return kvr_jv_to_string(r, v);

    case F_UPPER:
        return kvr_jcase(r, kvr_jv_to_string(r, v), 'u');
    case F_LOWER:
        return kvr_jcase(r, kvr_jv_to_string(r, v), 'l');
    case F_CAPITALIZE:
        return kvr_jcase(r, kvr_jv_to_string(r, v), 'c');
    case F_TITLE:
        return kvr_jtitle_filter(r, kvr_jv_to_string(r, v));

    case F_DEFAULT:
        kvr_jcheck_kw(r, "default", kwn, kwl, nkw, kw_default);
        if (!kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "default_value",
                      &a))
        {
            a = kvr_jv_str("", 0);
        }
        if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1, "boolean", &b)
            && kvr_jv_truthy(r, b))
        {
            return kvr_jv_truthy(r, v) ? v : a;
        }
        return (v.type == KVR_JV_UNDEF) ? a : v;

    case F_JOIN:
        kvr_jcheck_kw(r, "join", kwn, kwl, nkw, kw_join);
        if (!kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "d", &a)) {
            a = kvr_jv_str("", 0);
        }
        a = kvr_jv_to_string(r, a);
        in = kvr_jiter(r, v);
        if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1, "attribute", &b)
            && b.type != KVR_JV_NONE)
        {
            l = kvr_jlist_new(r, in->n);
            for (i = 0; i < in->n; i++) {
                l->items[l->n++] = kvr_jattr_path(r, in->items[i], b);
            }
            in = l;
        }
        return kvr_jjoin(r, a, in, 0);

    case F_ITEMS:
        if (v.type == KVR_JV_UNDEF) {
            out = kvr_jv_list(kvr_jlist_new(r, 0));
            out.flags = KVR_JV_GEN;
            return out;
        }
        if (v.type != KVR_JV_DICT) {
            kvr_jfail(r, KVR_JINJA_ERROR, "Can only get item pairs from a "
                      "mapping.");
        }
        return kvr_jdict_view(r, v.u.dict, M_ITEMS, KVR_JV_GEN);

    case F_LIST:
        in = kvr_jiter(r, v);
        l = kvr_jlist_new(r, in->n);
        memcpy(l->items, in->items, in->n * sizeof(kvr_jv_t));
        l->n = in->n;
        return kvr_jv_list(l);

    case F_FIRST:
        in = kvr_jiter(r, v);
        return in->n ? in->items[0]
                     : kvr_jv_undef_named("first", 5);

    case F_LAST:
        if (v.type == KVR_JV_LIST && (v.flags & KVR_JV_GEN)) {
            kvr_jfail(r, KVR_JINJA_ERROR, "last of a generator");
        }
        if (v.type == KVR_JV_UNDEF || v.type == KVR_JV_DICT) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "last of this value");
        }
        in = kvr_jiter(r, v);
        return in->n ? in->items[in->n - 1]
                     : kvr_jv_undef_named("last", 4);

    case F_REVERSE:
        if (v.type == KVR_JV_STR) {
            in = kvr_jiter(r, v);
            l = kvr_jlist_new(r, in->n);
            for (i = in->n; i > 0; i--) {
                l->items[l->n++] = in->items[i - 1];
            }
            return kvr_jjoin(r, kvr_jv_str("", 0), l, 0);
        }
        in = kvr_jiter(r, v);
        l = kvr_jlist_new(r, in->n);
        for (i = in->n; i > 0; i--) {
            l->items[l->n++] = in->items[i - 1];
        }
        out = kvr_jv_list(l);
        out.flags = (v.type == KVR_JV_LIST && !(v.flags & KVR_JV_GEN))
                    ? KVR_JV_GEN : 0;
        if (v.type != KVR_JV_LIST) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "reverse of this value");
        }
        return out;

    case F_SELECT:
    case F_REJECT:
        if (nkw) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "keyword arguments to "
                      "select");
        }
        return kvr_jselect(r, v, args, nargs, 0, id == F_SELECT);

    case F_SELECTATTR:
    case F_REJECTATTR:
        if (nkw) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "keyword arguments to "
                      "selectattr");
        }
        return kvr_jselect(r, v, args, nargs, 1, id == F_SELECTATTR);

    case F_MAP:
        return kvr_jmap(r, v, args, nargs, kwn, kwl, kwv, nkw);

    case F_REPLACE:
        kvr_jcheck_kw(r, "replace", kwn, kwl, nkw, kw_replace);
        if (nargs < 2) {
            kvr_jfail(r, KVR_JINJA_ERROR, "replace needs two arguments");
        }
        count = -1;
        if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 2, "count", &a)
            && a.type != KVR_JV_NONE)
        {
            if (a.type != KVR_JV_INT) {
                kvr_jfail(r, KVR_JINJA_ERROR, "replace count must be int");
            }
            count = a.u.i;
        }
        return kvr_jreplace(r, kvr_jv_to_string(r, v),
                            kvr_jv_to_string(r, args[0]),
                            kvr_jv_to_string(r, args[1]), count);

    case F_INT:
        kvr_jcheck_kw(r, "int", kwn, kwl, nkw, kw_num);
        if (v.type == KVR_JV_UNDEF) {
            kvr_jfail(r, KVR_JINJA_ERROR, "int of an undefined value");
        }
        if (!kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "default", &a)) {
            a = kvr_jv_int(0);
        }
        if (kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1, "base", &b)
            && !(b.type == KVR_JV_INT && b.u.i == 10))
        {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "int base other than 10");
        }
        return kvr_jto_int(r, v, a);

    case F_FLOAT:
        kvr_jcheck_kw(r, "float", kwn, kwl, nkw, kw_num);
        if (v.type == KVR_JV_UNDEF) {
            kvr_jfail(r, KVR_JINJA_ERROR, "float of an undefined value");
        }
        if (!kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "default", &a)) {
            a = kvr_jv_float(0.0);
        }
        return kvr_jto_float(r, v, a);

    case F_ABS:
        if (v.type == KVR_JV_INT || v.type == KVR_JV_BOOL) {
            if (v.u.i == INT64_MIN) {
                kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "integer beyond 64 bits");
            }
            return kvr_jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
        }
        if (v.type == KVR_JV_FLOAT) {
            return kvr_jv_float(fabs(v.u.f));
        }
        kvr_jfail(r, KVR_JINJA_ERROR, "bad operand type for abs()");

    case F_SUM:
        kvr_jcheck_kw(r, "sum", kwn, kwl, nkw, kw_sum);
        if (!kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 1, "start", &out)) {
            out = kvr_jv_int(0);
        }
        if (!kvr_jarg(args, nargs, kwn, kwl, kwv, nkw, 0, "attribute", &b)) {
            b = kvr_jv_none;
        }
        in = kvr_jiter(r, v);
        for (i = 0; i < in->n; i++) {
            a = (b.type == KVR_JV_NONE) ? in->items[i]
                : kvr_jattr_path(r, in->items[i], b);
            if (!((a.type == KVR_JV_INT || a.type == KVR_JV_BOOL
                   || a.type == KVR_JV_FLOAT)
                  && (out.type == KVR_JV_INT || out.type == KVR_JV_BOOL
                      || out.type == KVR_JV_FLOAT)))
            {
                kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "sum of non-numbers");
            }
            if (a.type == KVR_JV_FLOAT || out.type == KVR_JV_FLOAT) {
                out = kvr_jv_float((out.type == KVR_JV_FLOAT ? out.u.f
                                    : (double) out.u.i)
                                   + (a.type == KVR_JV_FLOAT ? a.u.f
                                      : (double) a.u.i));
            } else if (__builtin_add_overflow(out.u.i, a.u.i, &count)) {
                kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "integer beyond 64 bits");
            } else {
                out = kvr_jv_int(count);
            }
        }
        return out;

    case F_INDENT:
        /* jinja appends "\n" to the value: only strings work */
        if (v.type != KVR_JV_STR) {
            kvr_jfail(r, KVR_JINJA_ERROR, "indent of a %s",
                      kvr_jv_type_name(v));
        }
        return kvr_jindent(r, v, args, nargs, kwn, kwl, kwv, nkw);

    case F_SORT:
        return kvr_jsort_filter(r, v, args, nargs, kwn, kwl, kwv, nkw);

    case F_DICTSORT:
        return kvr_jdictsort(r, v, args, nargs, kwn, kwl, kwv, nkw);

    default:
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "unknown filter");
    }
}


/* globals */

static kvr_jv_t
kvr_jrange(kvr_jinja_render_t *r, kvr_jv_t *args, uint32_t nargs)
{
    int64_t       start, stop, step, n, i;
    uint32_t      k;
    kvr_jlist_t  *l;
    kvr_jv_t      out;

    if (nargs < 1 || nargs > 3) {
        kvr_jfail(r, KVR_JINJA_ERROR, "range expected 1 to 3 arguments");
    }

    for (k = 0; k < nargs; k++) {
        if (args[k].type != KVR_JV_INT && args[k].type != KVR_JV_BOOL) {
            kvr_jfail(r, KVR_JINJA_ERROR, "range() arguments must be "
                      "integers");
        }
    }

    start = (nargs == 1) ? 0 : args[0].u.i;
    stop = (nargs == 1) ? args[0].u.i : args[1].u.i;
    step = (nargs == 3) ? args[2].u.i : 1;

    if (step == 0) {
        kvr_jfail(r, KVR_JINJA_ERROR, "range() arg 3 must not be zero");
    }

    n = 0;
    if (step > 0 && start < stop) {
        n = (int64_t) (((uint64_t) stop - (uint64_t) start - 1)
                       / (uint64_t) step + 1);
    } else if (step < 0 && start > stop) {
        n = (int64_t) (((uint64_t) start - (uint64_t) stop - 1)
                       / (uint64_t) (-step) + 1);
    }

    /* jinja's sandbox refuses ranges above MAX_RANGE (100000) */
    if (n > 100000) {
        kvr_jfail(r, KVR_JINJA_ERROR, "Range too big. The sandbox blocks "
                  "ranges larger than MAX_RANGE (100000).");
    }

    kvr_jstep(r, (uint64_t) n);
    l = kvr_jlist_new(r, (size_t) n);
    for (i = 0; i < n; i++) {
        l->items[l->n++] = kvr_jv_int(start + i * step);
    }

    out = kvr_jv_list(l);
    out.flags = KVR_JV_NOPRINT;

    return out;
}


kvr_jv_t
kvr_jglobal_call(kvr_jinja_render_t *r, int id, kvr_jv_t *args,
    uint32_t nargs, const char **kwn, uint32_t *kwl, kvr_jv_t *kwv,
    uint32_t nkw)
{
    char          buf[512];
    uint32_t      i;
    time_t        now;
    struct tm     tm;
    size_t        n;
    kvr_jdict_t  *d;
    kvr_jv_t      v, fmt;

    switch (id) {

    case G_RANGE:
        if (nkw) {
            kvr_jfail(r, KVR_JINJA_ERROR, "range() takes no keyword "
                      "arguments");
        }
        return kvr_jrange(r, args, nargs);

    case G_NAMESPACE:
    case G_DICT:
        if (nargs > 1) {
            kvr_jfail(r, KVR_JINJA_ERROR, "expected at most 1 positional "
                      "argument");
        }
        d = kvr_jdict_new(r, 0);
        if (nargs == 1) {
            if (args[0].type != KVR_JV_DICT) {
                kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "namespace() or dict() "
                          "of a non-mapping");
            }
            for (i = 0; i < args[0].u.dict->n; i++) {
                kvr_jdict_set(r, d, args[0].u.dict->keys[i],
                              args[0].u.dict->vals[i]);
            }
        }
        for (i = 0; i < nkw; i++) {
            kvr_jdict_set(r, d, kvr_jv_str(kwn[i], kwl[i]), kwv[i]);
        }
        v = kvr_jv_dict(d);
        if (id == G_NAMESPACE) {
            v.type = KVR_JV_NS;
        }
        return v;

    case G_RAISE:
        if (nargs >= 1) {
            v = kvr_jv_to_string(r, args[0]);
            kvr_jfail(r, KVR_JINJA_RAISED, "raise_exception: %.*s",
                      (int) (v.len > 200 ? 200 : v.len), v.u.s);
        }
        kvr_jfail(r, KVR_JINJA_RAISED, "raise_exception");

    case G_STRFTIME:
        if (nargs != 1 || nkw || args[0].type != KVR_JV_STR) {
            kvr_jfail(r, KVR_JINJA_ERROR, "strftime_now(format)");
        }
        fmt = kvr_jv_strdup(r, args[0].u.s, args[0].len);
        if (strlen(fmt.u.s) != fmt.len) {
            kvr_jfail(r, KVR_JINJA_ERROR, "embedded null character");
        }
        for (i = 0; i + 1 < fmt.len; i++) {
            /* only the conversions glibc and python agree on */
            if (fmt.u.s[i] == '%') {
                i++;
                if (strchr("aAbBcdHIjmMpSUwWxXyYzZ%GuVeCDFgnrRtTh",
                           fmt.u.s[i]) == NULL)
                {
                    kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "strftime "
                              "conversion %%%c", fmt.u.s[i]);
                }
            }
        }
        now = time(NULL);
        if (r->limits.utc) {
            gmtime_r(&now, &tm);
        } else {
            localtime_r(&now, &tm);
        }
        n = strftime(buf, sizeof(buf), fmt.u.s, &tm);
        if (n == 0 && fmt.len) {
            kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "strftime result too long");
        }
        return kvr_jv_strdup(r, buf, n);

    default:
        kvr_jfail(r, KVR_JINJA_UNSUPPORTED, "unsupported global function");
    }
}
