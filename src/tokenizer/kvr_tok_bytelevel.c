/*
 * Copyright (C) kvroute developers
 *
 * The GPT-2 byte-level alphabet (bytes_to_unicode): each byte maps to a
 * printable char, in which byte-level vocab and merge strings are written.
 */

#include <stddef.h>
#include <stdint.h>

#include "kvr_tok_bytelevel.h"


/* GPT-2 bytes_to_unicode: printable bytes map to themselves */
static int
kvr_bytelevel_is_self(unsigned b)
{
    return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac)
           || (b >= 0xae && b <= 0xff);
}


uint32_t
kvr_tok_bytelevel_char(uint8_t byte)
{
    /* the other 68 bytes get U+0100.. in increasing byte order */
    if (kvr_bytelevel_is_self(byte)) {
        return byte;
    }

    if (byte <= 0x20) {
        return 0x100 + byte;
    }

    if (byte <= 0xa0) {
        return 0x100 + 33 + (byte - 0x7f);
    }

    return 0x143;    /* 0xad */
}


long
kvr_tok_bytelevel_decode(const char *s, size_t len, uint8_t *out)
{
    size_t          i, n;
    uint32_t        cp;
    const uint8_t  *p;

    p = (const uint8_t *) s;
    n = 0;
    i = 0;

    while (i < len) {
        if (p[i] < 0x80) {
            cp = p[i];
            i += 1;

        } else if ((p[i] & 0xe0) == 0xc0 && i + 1 < len
                   && (p[i + 1] & 0xc0) == 0x80)
        {
            cp = (uint32_t) (p[i] & 0x1f) << 6 | (p[i + 1] & 0x3f);
            i += 2;

        } else {
            /* every mapped char is below U+0800 */
            return -1;
        }

        if (cp < 0x100) {
            if (!kvr_bytelevel_is_self(cp)) {
                return -1;
            }

            out[n++] = (uint8_t) cp;

        } else if (cp < 0x100 + 33) {
            out[n++] = (uint8_t) (cp - 0x100);

        } else if (cp < 0x100 + 67) {
            out[n++] = (uint8_t) (cp - 0x100 - 33 + 0x7f);

        } else if (cp == 0x143) {
            out[n++] = 0xad;

        } else {
            return -1;
        }
    }

    return (long) n;
}
