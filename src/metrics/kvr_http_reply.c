/*
 * Copyright (C) kvroute developers
 *
 * A scrape asks with HTTP/1.0 and reads to the connection's close, so of
 * the reply's head only the status line matters, and one header: a
 * server that chunks its body anyway is refused rather than misread.
 * Lines may end in CRLF or a bare LF.
 */

#include <string.h>

#include "kvr_http_reply.h"


static int kvr_http_reply_chunked(const char *p, const char *end);


kvr_http_reply_e
kvr_http_reply_head(const char *buf, size_t len, kvr_http_reply_t *reply)
{
    size_t       i;
    const char  *p, *end, *line, *nl;

    reply->status = 0;
    reply->body = 0;

    /* "HTTP/1.x NNN" */

    if (len < sizeof("HTTP/1.x NNN") - 1) {
        return (len == 0 || memcmp(buf, "HTTP/1.", len < 7 ? len : 7) == 0)
               ? KVR_HTTP_REPLY_AGAIN : KVR_HTTP_REPLY_BAD;
    }

    if (memcmp(buf, "HTTP/1.", 7) != 0 || buf[7] < '0' || buf[7] > '9'
        || buf[8] != ' ')
    {
        return KVR_HTTP_REPLY_BAD;
    }

    for (i = 9; i < 12; i++) {
        if (buf[i] < '0' || buf[i] > '9') {
            return KVR_HTTP_REPLY_BAD;
        }

        reply->status = reply->status * 10 + (buf[i] - '0');
    }

    /* three digits, not the first three of more: then SP or the line's end */

    if (len > 12 && buf[12] != ' ' && buf[12] != '\r' && buf[12] != '\n') {
        return KVR_HTTP_REPLY_BAD;
    }

    /* the header lines, to the empty one */

    p = buf;
    end = buf + len;

    nl = memchr(p, '\n', len);
    if (nl == NULL) {
        return KVR_HTTP_REPLY_AGAIN;
    }

    for ( ;; ) {
        line = nl + 1;

        if (line >= end) {
            return KVR_HTTP_REPLY_AGAIN;
        }

        nl = memchr(line, '\n', (size_t) (end - line));
        if (nl == NULL) {
            return KVR_HTTP_REPLY_AGAIN;
        }

        if (nl == line || (nl == line + 1 && *line == '\r')) {
            reply->body = (size_t) (nl + 1 - buf);
            return KVR_HTTP_REPLY_OK;
        }

        if (kvr_http_reply_chunked(line, nl)) {
            return KVR_HTTP_REPLY_CHUNKED;
        }
    }
}


static char
kvr_http_reply_lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}


/* "Transfer-Encoding: ... chunked" */

static int
kvr_http_reply_chunked(const char *p, const char *end)
{
    size_t       i;
    const char  *name = "transfer-encoding:", *word = "chunked";

    for (i = 0; name[i]; i++, p++) {
        if (p == end || kvr_http_reply_lower(*p) != name[i]) {
            return 0;
        }
    }

    for ( /* void */ ; end - p >= 7; p++) {
        for (i = 0; word[i]; i++) {
            if (kvr_http_reply_lower(p[i]) != word[i]) {
                break;
            }
        }

        if (word[i] == '\0') {
            return 1;
        }
    }

    return 0;
}
