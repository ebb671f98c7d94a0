/*
 * Copyright (C) kvroute developers
 *
 * Reading a parsed JSON document (interface in kvr_json.h): members by
 * name, strings compared, ordered and decoded without a copy, ints.  The
 * parser has checked every string, so the escapes met here are valid.
 */

#include <string.h>

#include "kvr_json.h"
#include "kvr_json_int.h"


/* a cursor yielding the decoded bytes of a string node */
typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    unsigned char        buf[4];
    unsigned             n;
    unsigned             i;
} kvr_json_cursor_t;


static void kvr_json_cursor_init(kvr_json_cursor_t *c,
    const kvr_json_doc_t *doc, uint32_t i);
static int kvr_json_cursor_next(kvr_json_cursor_t *c);
static size_t kvr_json_utf8_put(unsigned char *out, uint32_t cp);


uint32_t
kvr_json_find(const kvr_json_doc_t *doc, uint32_t obj, const char *key,
    size_t key_len)
{
    uint32_t                k, end, found;
    const kvr_json_node_t  *node;

    if (obj >= doc->n_nodes || kvr_json_type(doc, obj) != KVR_JSON_OBJECT) {
        return 0;
    }

    found = 0;
    end = doc->nodes[obj].end;

    for (k = obj + 1; k < end; k = doc->nodes[k + 1].end) {
        node = &doc->nodes[k];

        if (node->info & KVR_JSON_ESCAPED) {
            if (kvr_json_string_eq(doc, k, key, key_len)) {
                found = k + 1;
            }

            continue;
        }

        if (node->len - 2 == key_len
            && memcmp(doc->input + node->off + 1, key, key_len) == 0)
        {
            found = k + 1;
        }
    }

    return found;
}


int
kvr_json_string_eq(const kvr_json_doc_t *doc, uint32_t i, const char *s,
    size_t n)
{
    int                     c;
    size_t                  j;
    kvr_json_cursor_t       cur;
    const kvr_json_node_t  *node;

    node = &doc->nodes[i];

    if ((node->info & KVR_JSON_TYPE_MASK) != KVR_JSON_STRING) {
        return 0;
    }

    if (!(node->info & KVR_JSON_ESCAPED)) {
        return node->len - 2 == n
               && memcmp(doc->input + node->off + 1, s, n) == 0;
    }

    /* escapes only shrink the text */
    if (n > node->len - 2) {
        return 0;
    }

    kvr_json_cursor_init(&cur, doc, i);

    for (j = 0; j < n; j++) {
        c = kvr_json_cursor_next(&cur);

        if (c != (unsigned char) s[j]) {
            return 0;
        }
    }

    return kvr_json_cursor_next(&cur) < 0;
}


int
kvr_json_string_cmp(const kvr_json_doc_t *doc, uint32_t a, uint32_t b)
{
    int                     ca, cb, rc;
    size_t                  la, lb;
    kvr_json_cursor_t       ka, kb;
    const kvr_json_node_t  *na, *nb;

    na = &doc->nodes[a];
    nb = &doc->nodes[b];

    if (!((na->info | nb->info) & KVR_JSON_ESCAPED)) {
        la = na->len - 2;
        lb = nb->len - 2;

        /* names mostly differ at once: spare the call */
        if (la > 0 && lb > 0) {
            ca = (unsigned char) doc->input[na->off + 1];
            cb = (unsigned char) doc->input[nb->off + 1];

            if (ca != cb) {
                return ca - cb;
            }
        }

        rc = memcmp(doc->input + na->off + 1, doc->input + nb->off + 1,
                    (la < lb) ? la : lb);

        if (rc != 0) {
            return rc;
        }

        return (la > lb) - (la < lb);
    }

    kvr_json_cursor_init(&ka, doc, a);
    kvr_json_cursor_init(&kb, doc, b);

    for ( ;; ) {
        ca = kvr_json_cursor_next(&ka);
        cb = kvr_json_cursor_next(&kb);

        if (ca != cb || ca < 0) {
            return (ca > cb) - (ca < cb);
        }
    }
}


size_t
kvr_json_string_decode(const kvr_json_doc_t *doc, uint32_t i, char *buf,
    size_t size)
{
    size_t                  n, run;
    uint32_t                cp, lo;
    unsigned char          *out;
    const unsigned char    *p, *e, *bs;
    const kvr_json_node_t  *node;

    node = &doc->nodes[i];
    p = (const unsigned char *) doc->input + node->off + 1;
    e = p + node->len - 2;
    out = (unsigned char *) buf;
    n = 0;

    for ( ;; ) {
        bs = memchr(p, '\\', e - p);
        run = (bs != NULL ? bs : e) - p;

        if (run > size - n) {
            return (size_t) -1;
        }

        memcpy(out + n, p, run);
        n += run;

        if (bs == NULL) {
            return n;
        }

        p = bs + 1;

        /* the parser validated the escape */
        switch (*p) {

        case 'b':
            cp = '\b';
            break;

        case 'f':
            cp = '\f';
            break;

        case 'n':
            cp = '\n';
            break;

        case 'r':
            cp = '\r';
            break;

        case 't':
            cp = '\t';
            break;

        case 'u':
            (void) kvr_json_hex4(p + 1, &cp);
            p += 4;

            if (cp >= 0xd800 && cp <= 0xdbff) {
                (void) kvr_json_hex4(p + 3, &lo);
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            }

            break;

        default:
            cp = *p;
            break;
        }

        p++;

        run = (cp < 0x80) ? 1 : (cp < 0x800) ? 2 : (cp < 0x10000) ? 3 : 4;

        if (run > size - n) {
            return (size_t) -1;
        }

        n += kvr_json_utf8_put(out + n, cp);
    }
}


int
kvr_json_uint32(const kvr_json_doc_t *doc, uint32_t i, uint32_t *value)
{
    size_t                  len, j;
    uint64_t                v;
    const char             *p;
    const kvr_json_node_t  *node;

    node = &doc->nodes[i];

    if ((node->info & (KVR_JSON_TYPE_MASK | KVR_JSON_REAL))
        != KVR_JSON_NUMBER)
    {
        return -1;
    }

    p = doc->input + node->off;
    len = node->len;

    if (p[0] == '-') {
        /* only "-0" is in range; the grammar forbids "-00" */
        if (len == 2 && p[1] == '0') {
            *value = 0;
            return 0;
        }

        return -1;
    }

    if (len > 10) {
        return -1;
    }

    v = 0;

    for (j = 0; j < len; j++) {
        v = v * 10 + (uint64_t) (p[j] - '0');
    }

    if (v > UINT32_MAX) {
        return -1;
    }

    *value = (uint32_t) v;

    return 0;
}


static void
kvr_json_cursor_init(kvr_json_cursor_t *c, const kvr_json_doc_t *doc,
    uint32_t i)
{
    c->p = (const unsigned char *) doc->input + doc->nodes[i].off + 1;
    c->end = c->p + doc->nodes[i].len - 2;
    c->n = 0;
    c->i = 0;
}


/* the next decoded byte, -1 at the end */
static int
kvr_json_cursor_next(kvr_json_cursor_t *c)
{
    uint32_t  cp, lo;

    if (c->i < c->n) {
        return c->buf[c->i++];
    }

    if (c->p >= c->end) {
        return -1;
    }

    if (*c->p != '\\') {
        return *c->p++;
    }

    c->p++;

    switch (*c->p++) {

    case 'b':
        return '\b';

    case 'f':
        return '\f';

    case 'n':
        return '\n';

    case 'r':
        return '\r';

    case 't':
        return '\t';

    case 'u':
        break;

    default:
        return c->p[-1];
    }

    (void) kvr_json_hex4(c->p, &cp);
    c->p += 4;

    if (cp >= 0xd800 && cp <= 0xdbff) {
        (void) kvr_json_hex4(c->p + 2, &lo);
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        c->p += 6;
    }

    c->n = (unsigned) kvr_json_utf8_put(c->buf, cp);
    c->i = 1;

    return c->buf[0];
}


static size_t
kvr_json_utf8_put(unsigned char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (unsigned char) cp;
        return 1;
    }

    if (cp < 0x800) {
        out[0] = (unsigned char) (0xc0 | (cp >> 6));
        out[1] = (unsigned char) (0x80 | (cp & 0x3f));
        return 2;
    }

    if (cp < 0x10000) {
        out[0] = (unsigned char) (0xe0 | (cp >> 12));
        out[1] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
        out[2] = (unsigned char) (0x80 | (cp & 0x3f));
        return 3;
    }

    out[0] = (unsigned char) (0xf0 | (cp >> 18));
    out[1] = (unsigned char) (0x80 | ((cp >> 12) & 0x3f));
    out[2] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
    out[3] = (unsigned char) (0x80 | (cp & 0x3f));

    return 4;
}
