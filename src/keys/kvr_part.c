/*
 * Copyright (C) kvroute developers
 */


#include <string.h>

#include "kvr_part.h"


/*
 * The part kinds vLLM's content parsers take text from, each from its
 * field: "text", "input_text", "output_text" from "text", "refusal" and
 * "thinking" from fields of their names; and the media parts its parsers
 * turn into multimodal items (text 0)
 */

static const char  *kvr_part_media[] = {
    "image_url", "input_image", "image", "image_pil", "image_embeds",
    "audio_url", "input_audio", "audio_embeds", "video_url", NULL
};

kvr_part_e
kvr_part_of(const kvr_json_doc_t *doc, uint32_t part, uint32_t *text)
{
    size_t       field_len;
    uint32_t     type, node;
    kvr_part_e   kind;
    const char  *field, **m;

    *text = 0;

    if (kvr_json_type(doc, part) != KVR_JSON_OBJECT) {
        return KVR_PART_OTHER;
    }

    type = kvr_json_find(doc, part, "type", 4);

    if (type == 0) {
        return KVR_PART_OTHER;
    }

    if (kvr_json_string_eq(doc, type, "text", 4)
        || kvr_json_string_eq(doc, type, "input_text", 10)
        || kvr_json_string_eq(doc, type, "output_text", 11))
    {
        kind = KVR_PART_TEXT;
        field = "text";
        field_len = 4;

    } else if (kvr_json_string_eq(doc, type, "refusal", 7)) {
        kind = KVR_PART_REFUSAL;
        field = "refusal";
        field_len = 7;

    } else if (kvr_json_string_eq(doc, type, "thinking", 8)) {
        kind = KVR_PART_THINKING;
        field = "thinking";
        field_len = 8;

    } else {
        for (m = kvr_part_media; *m; m++) {
            if (kvr_json_string_eq(doc, type, *m, strlen(*m))) {
                return KVR_PART_MEDIA;
            }
        }

        return KVR_PART_OTHER;
    }

    node = kvr_json_find(doc, part, field, field_len);

    if (node && kvr_json_type(doc, node) == KVR_JSON_STRING) {
        *text = node;
    }

    return kind;
}
