/*
 * Copyright (C) kvroute developers
 *
 * A chat message's content part: which kinds carry text, and in which
 * field, as vLLM's content parsers take it.  The request's canonical
 * rendering (kvr_render) and the chat template's messages (kvr_chat) both
 * ask it.  Plain C, no nginx types.
 */

#ifndef _KVR_PART_H_INCLUDED_
#define _KVR_PART_H_INCLUDED_


#include <stdint.h>

#include "kvr_json.h"


/* a chat message's content part, by the field vLLM takes its text from */
typedef enum {
    KVR_PART_OTHER = 0,         /* no text: images, audio, unknown, ... */
    KVR_PART_TEXT,              /* text, input_text, output_text: "text" */
    KVR_PART_REFUSAL,           /* "refusal" */
    KVR_PART_THINKING,          /* "thinking" */
    KVR_PART_MEDIA              /* an image, audio or video item */
} kvr_part_e;


/*
 * The kind of content part node part of doc; *text is its text's string
 * node, or 0 when a text kind lacks it (or it is not a string).
 */
kvr_part_e kvr_part_of(const kvr_json_doc_t *doc, uint32_t part,
    uint32_t *text);


#endif /* _KVR_PART_H_INCLUDED_ */
