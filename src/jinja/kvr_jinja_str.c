/*
 * Copyright (C) kvroute developers
 *
 * Python's str operations as the builtins need them: strip, case
 * mapping (ASCII; other letters refuse), replace, split and splitlines,
 * prefixes, join, find, character classes.
 */

#define _GNU_SOURCE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvr_jinja_builtin.h"


static int kvr_jin_chars(uint32_t cp, kvr_jv_t chars);
static int kvr_jcaseless(kvr_jv_t s);
static void kvr_jlist_add(kvr_jinja_render_t *r, kvr_jlist_t *l, kvr_jv_t v);
static size_t kvr_jline_break(const char *s, size_t len, size_t i);


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
kvr_jv_t
kvr_jstrip(kvr_jv_t s, const kvr_jv_t *chars, int left, int right)
{
    size_t          start, end, i, last;
    uint32_t        cp;
    int             strip;
    const uint8_t  *p;

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

    /*
     * backward, a code point at a time: its first byte is the nearest
     * byte before end that is not a continuation byte (forward decoding
     * never runs across one); a unit not ending at end is an invalid
     * sequence, never stripped
     */
    while (right && end > start) {
        p = (const uint8_t *) s.u.s;
        i = end - 1;
        while (i > start && end - i < 4 && (p[i] & 0xc0) == 0x80) {
            i--;
        }
        last = i;
        cp = kvr_jutf8_next(s.u.s, s.len, &i);
        if (i != end) {
            break;
        }
        strip = chars ? kvr_jin_chars(cp, *chars) : kvr_jpy_space(cp);
        if (!strip) {
            break;
        }
        end = last;
    }

    return kvr_jv_str(s.u.s + start, end - start);
}


kvr_jv_t
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
kvr_jv_t
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
kvr_jv_t
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


kvr_jv_t
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
kvr_jv_t
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


kvr_jlist_t *
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


int
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


kvr_jv_t
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


kvr_jv_t
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
kvr_jv_t
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
