/*
 * Copyright (C) kvroute developers
 *
 * NFC with utf8proc between "opaque" code points: marks assigned after
 * Unicode 9 have combining class 0 and no compositions for HF, so they are
 * boundaries copied through unchanged (docs/tokenizer.md 8, verified on
 * 5.7M strings with utf8proc 2.8).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "kvr_tok_normalize.h"
#include "kvr_tok_unicode.h"


typedef struct {
    uint8_t  *data;
    size_t    len;
    size_t    cap;
} kvr_nfc_buf_t;


int
kvr_tok_nfc_check_version(char *err, size_t errlen)
{
    const char  *version;

    version = utf8proc_version();

    /* the pass-through list was derived for utf8proc 2.8 (Unicode 15) */
    if (strncmp(version, "2.8.", 4) != 0) {
        snprintf(err, errlen, "NFC: utf8proc %s is not 2.8.x, whose "
                 "differences from HF (Unicode 9) are known", version);
        return -1;
    }

    return 0;
}


static int
kvr_nfc_append(kvr_nfc_buf_t *buf, const uint8_t *s, size_t len)
{
    size_t    cap;
    uint8_t  *data;

    if (len == 0) {
        return 0;   /* buf->data may be NULL: memcpy to it is undefined */
    }

    if (buf->len + len > buf->cap) {
        cap = (buf->len + len) * 2;
        data = realloc(buf->data, cap);
        if (data == NULL) {
            return -1;
        }

        buf->data = data;
        buf->cap = cap;
    }

    memcpy(buf->data + buf->len, s, len);
    buf->len += len;

    return 0;
}


static int
kvr_nfc_needs_work(const uint8_t *s, size_t len)
{
    size_t    i;
    uint64_t  word;

    /* U+0300 is CC 80: lower code points never change under NFC */
    for (i = 0; i < len; i++) {
        /* ascii runs eight bytes at a time */
        while (len - i >= 8) {
            memcpy(&word, s + i, 8);

            if (word & 0x8080808080808080ull) {
                break;
            }

            i += 8;
        }

        if (i < len && s[i] >= 0xcc) {
            return 1;
        }
    }

    return 0;
}


static int
kvr_nfc_segment(kvr_nfc_buf_t *buf, const uint8_t *s, size_t len)
{
    int                 rc;
    utf8proc_ssize_t    n;
    utf8proc_uint8_t   *dst;

    if (len == 0) {
        return 0;
    }

    if (!kvr_nfc_needs_work(s, len)) {
        return kvr_nfc_append(buf, s, len);
    }

    n = utf8proc_map(s, (utf8proc_ssize_t) len, &dst,
                     UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (n < 0) {
        return -1;
    }

    rc = kvr_nfc_append(buf, dst, (size_t) n);
    free(dst);

    return rc;
}


int
kvr_tok_nfc_inert(uint32_t cp)
{
    const utf8proc_property_t  *prop;

    /* conjoining jamo compose algorithmically, not through comb_index */
    if (cp >= 0x1100 && cp <= 0x11ff) {
        return 0;
    }

    prop = utf8proc_get_property((utf8proc_int32_t) cp);

    if (prop->combining_class != 0) {
        return 0;
    }

    /* a canonical (not compatibility) decomposition */
    if (prop->decomp_seqindex != UINT16_MAX && prop->decomp_type == 0) {
        return 0;
    }

    /* the second code point of a primary composition */
    if (prop->comb_index != UINT16_MAX && prop->comb_index >= 0x8000) {
        return 0;
    }

    return 1;
}


/*
 * An inert code point is a safe boundary: NFC of the text before it does
 * not depend on it or on anything after it.  Only runs that hold a
 * non-inert code point go through utf8proc, starting at the last
 * boundary; pass-through code points are boundaries copied unchanged.
 */
int
kvr_tok_nfc(const uint8_t *s, size_t len, uint8_t **out, size_t *out_len)
{
    int            dirty, inert, opaque;
    size_t         i, n, seg, run;
    uint32_t       cp;
    kvr_nfc_buf_t  buf;

    *out = NULL;
    *out_len = 0;

    if (!kvr_nfc_needs_work(s, len)) {
        return 0;
    }

    buf.data = NULL;
    buf.len = 0;
    buf.cap = 0;

    seg = 0;      /* the first byte not yet in buf */
    run = 0;      /* the last boundary */
    dirty = 0;
    i = 0;

    while (i <= len) {

        if (i == len) {
            cp = 0;
            n = 1;
            inert = 1;

        } else if (s[i] < 0x80) {
            cp = s[i];
            n = 1;
            inert = 1;

        } else {
            n = kvr_tok_utf8_decode(s + i, len - i, &cp);
            if (n == 0) {
                goto failed;
            }

            inert = kvr_tok_nfc_inert(cp);
        }

        opaque = (cp >= 0x7fd
                  && kvr_tok_in_ranges(kvr_tok_nfc_passthrough,
                                       kvr_tok_nfc_passthrough_n, cp));
        if (opaque) {
            inert = 1;
        }

        if (!inert) {
            dirty = 1;
            i += n;
            continue;
        }

        if (dirty) {
            if (kvr_nfc_append(&buf, s + seg, run - seg) != 0
                || kvr_nfc_segment(&buf, s + run, i - run) != 0)
            {
                goto failed;
            }

            seg = i;
            dirty = 0;
        }

        /* a pass-through code point is opaque: the next run starts after */
        run = opaque ? i + n : i;
        i += n;
    }

    if (buf.data == NULL) {
        /* every run was inert: NFC leaves the text unchanged */
        return 0;
    }

    if (kvr_nfc_append(&buf, s + seg, len - seg) != 0) {
        goto failed;
    }

    *out = buf.data;
    *out_len = buf.len;

    return 0;

failed:

    free(buf.data);

    return -1;
}
