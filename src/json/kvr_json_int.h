/*
 * Copyright (C) kvroute developers
 *
 * What the JSON parser (kvr_json.c) and the document's accessors
 * (kvr_json_get.c) share.  Not for use outside them.
 */

#ifndef _KVR_JSON_INT_H_INCLUDED_
#define _KVR_JSON_INT_H_INCLUDED_


#include <stdint.h>


/* four hex digits of a \u escape; -1 (and 0) when one is not a digit */
static inline int
kvr_json_hex4(const unsigned char *p, uint32_t *cp)
{
    unsigned  i, c;
    uint32_t  v;

    v = 0;
    *cp = 0;

    for (i = 0; i < 4; i++) {
        c = p[i];

        if (c >= '0' && c <= '9') {
            c -= '0';

        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            c = (c | 0x20) - 'a' + 10;

        } else {
            return -1;
        }

        v = (v << 4) | c;
    }

    *cp = v;

    return 0;
}


#endif /* _KVR_JSON_INT_H_INCLUDED_ */
