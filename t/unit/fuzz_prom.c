/*
 * Copyright (C) kvroute developers
 *
 * libFuzzer target for kvr_prom and kvr_http_reply: the input is a scrape's
 * reply.  Its head is read (kvr_http_reply_head must agree with itself on
 * every prefix: AGAIN until the head is whole), the body parsed whole,
 * then fed in pieces cut where the input's first byte says: both must give
 * the same values, within their bounds.  Exact-size copies, so an overread
 * hits ASan's redzone.  Not part of the default build:
 *
 *   make build/fuzz/fuzz_prom
 *   build/fuzz/fuzz_prom -max_total_time=60 build/fuzz/fuzz_prom.corpus \
 *       t/unit/corpus/prom
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_prom.h"
#include "kvr_http_reply.h"


static void
check(const kvr_prom_load_t *l)
{
    if (l->running > KVR_PROM_MAX_COUNT || l->waiting > KVR_PROM_MAX_COUNT
        || l->usage > 1000)
    {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    int                rc;
    char              *copy, *buf;
    size_t             step, used, n, body, i;
    kvr_prom_load_t    whole, pieces;
    kvr_http_reply_t   reply, part;
    kvr_http_reply_e   head;

    if (size == 0) {
        return 0;
    }

    step = 1 + data[0] % 64;

    copy = malloc(size);
    if (copy == NULL) {
        return 0;
    }

    memcpy(copy, data, size);

    /* the head, then a prefix of it is never more than AGAIN */

    head = kvr_http_reply_head(copy, size, &reply);
    body = 0;

    if (head == KVR_HTTP_REPLY_OK) {
        if (reply.body > size || reply.status > 999) {
            abort();
        }

        body = reply.body;

        for (i = 0; i < body; i += step) {
            if (kvr_http_reply_head(copy, i, &part) == KVR_HTTP_REPLY_OK) {
                abort();
            }
        }
    }

    /* the body, whole and in pieces */

    rc = kvr_prom_parse(copy + body, size - body, &whole);
    check(&whole);

    if ((rc == 0) != ((whole.found & (KVR_PROM_RUNNING | KVR_PROM_WAITING))
                      != 0))
    {
        abort();
    }

    buf = malloc(size);
    if (buf == NULL) {
        free(copy);
        return 0;
    }

    kvr_prom_init(&pieces);
    used = 0;

    for (i = body; i < size; i += n) {
        n = (size - i < step) ? size - i : step;
        memcpy(buf + used, copy + i, n);
        used += n;

        {
            size_t  took;
            char   *piece;

            /* an exact-size piece */
            piece = malloc(used ? used : 1);
            if (piece == NULL) {
                abort();
            }

            memcpy(piece, buf, used);
            took = kvr_prom_feed(piece, used, &pieces);
            free(piece);

            if (took > used || (took && buf[took - 1] != '\n')) {
                abort();
            }

            memmove(buf, buf + took, used - took);
            used -= took;
        }
    }

    if (kvr_prom_done(&pieces) != rc) {
        abort();
    }

    check(&pieces);

    if (pieces.running != whole.running || pieces.waiting != whole.waiting
        || pieces.usage != whole.usage || pieces.found != whole.found
        || pieces.samples != whole.samples || pieces.bad != whole.bad)
    {
        abort();
    }

    free(buf);
    free(copy);

    return 0;
}
