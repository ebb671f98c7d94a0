/*
 * Copyright (C) kvroute developers
 *
 * The canonical rendering of a prompt for text keys, kvr_request's
 * output: into a buffer of its own, or handed to a sink piece by piece
 * (through a buffer kept between requests, one per process).
 * A chat request renders with a placeholder template, deterministic and
 * prefix-preserving (kvr_render_chat()); the model's own template is
 * kvr_chat's.  Plain C, no nginx types.
 */

#ifndef _KVR_RENDER_H_INCLUDED_
#define _KVR_RENDER_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_request.h"


/*
 * A completions string prompt (node str) as kvr_request_prompt() gives it
 * to a sink: the same checks and bytes as its own copy of the text.
 */
kvr_parse_status_e kvr_render_text(kvr_request_t *req, uint32_t str,
    size_t max_prompt, kvr_request_sink_pt sink, void *data);

/*
 * The chat request's prompt as kvr_request_prompt() gives it: req->text
 * set (without a sink) or given to sink, req->text_len its length.
 */
kvr_parse_status_e kvr_render_chat(kvr_request_t *req, size_t max_prompt,
    kvr_request_sink_pt sink, void *data);


#endif /* _KVR_RENDER_H_INCLUDED_ */
