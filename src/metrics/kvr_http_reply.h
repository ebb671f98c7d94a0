/*
 * Copyright (C) kvroute developers
 *
 * The head of an HTTP/1.x reply to a scrape: its status and where its
 * body starts.  Plain C, bounded by the length given.
 */

#ifndef _KVR_HTTP_REPLY_H_INCLUDED_
#define _KVR_HTTP_REPLY_H_INCLUDED_


#include <stddef.h>


typedef enum {
    KVR_HTTP_REPLY_OK = 0,
    KVR_HTTP_REPLY_AGAIN,       /* the head is not all there yet */
    KVR_HTTP_REPLY_BAD,         /* not an HTTP/1.x status line */
    KVR_HTTP_REPLY_CHUNKED      /* a chunked body (asked with HTTP/1.0) */
} kvr_http_reply_e;


typedef struct {
    unsigned   status;          /* 200 ... */
    size_t     body;            /* offset of the body */
} kvr_http_reply_t;


kvr_http_reply_e kvr_http_reply_head(const char *buf, size_t len,
    kvr_http_reply_t *reply);


#endif /* _KVR_HTTP_REPLY_H_INCLUDED_ */
