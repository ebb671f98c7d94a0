/*
 * Copyright (C) kvroute developers
 *
 * The canonical rendering of a prompt for text keys, kvr_request's
 * output: into a buffer of its own, or handed to a sink piece by piece.
 * A chat request renders with a placeholder template, deterministic and
 * prefix-preserving (kvr_render_chat()); the model's own template is
 * kvr_chat's.  Plain C, no nginx types.
 */

#ifndef _KVR_RENDER_H_INCLUDED_
#define _KVR_RENDER_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_request.h"


typedef struct {
    char                *data;
    size_t               len;
    size_t               cap;
    size_t               hint;     /* size of the first allocation */
    size_t               max;      /* bound on len (less what went out) */
    kvr_parse_status_e   status;   /* why an add failed */

    /* with a sink, data is a buffer that goes out to it */
    kvr_request_sink_pt  sink;
    void                *sink_data;
    size_t               out;      /* bytes given to the sink */
} kvr_render_t;


/*
 * Without a sink the rendering is built in a buffer of its own, given to
 * the caller; with one, in a buffer kept between requests (one per
 * process), handed on as it fills.  hint sizes the first allocation.
 */
void kvr_render_open(kvr_render_t *r, size_t max, size_t hint,
    kvr_request_sink_pt sink, void *data);

/* the buffered bytes to the sink; max shrinks by what went out */
void kvr_render_flush(kvr_render_t *r);

/* a sink's buffer back to be kept (without a sink: nothing) */
void kvr_render_close(kvr_render_t *r);

/* a string node, decoded; 0, or -1 with r->status set */
int kvr_render_string(kvr_render_t *r, const kvr_json_doc_t *doc,
    uint32_t str);

/*
 * The chat request's prompt as kvr_request_prompt() gives it: req->text
 * set (without a sink) or given to sink, req->text_len its length.
 */
kvr_parse_status_e kvr_render_chat(kvr_request_t *req, size_t max_prompt,
    kvr_request_sink_pt sink, void *data);


#endif /* _KVR_RENDER_H_INCLUDED_ */
