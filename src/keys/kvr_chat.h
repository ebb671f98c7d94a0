/*
 * Copyright (C) kvroute developers
 *
 * Chat requests to prompt strings: turns an OpenAI /v1/chat/completions
 * body (parsed by kvr_json) into the variables vLLM hands to the model's
 * chat template, normalized as vLLM's chat_utils.py does, and renders it
 * with the Jinja subset (kvr_jinja.h).  Plain C, no nginx types.
 *
 * Use:
 *   cfg = kvr_chat_config_load("tokenizer_config.json", err, errlen);
 *                                          once, at configuration time
 *   rc = kvr_chat_render(cfg, doc, 0, out, max_out, &out_len, err, errlen);
 *                                          per request
 *   kvr_chat_config_free(cfg);
 *
 * A request the renderer cannot reproduce exactly (malformed messages,
 * continue_final_message, a custom chat_template, numbers beyond 64-bit
 * integers, a construct of the template outside the subset) returns a
 * negative status: the caller then routes without a rendered prompt.
 */

#ifndef _KVR_CHAT_H_INCLUDED_
#define _KVR_CHAT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_json.h"
#include "kvr_jinja.h"


/* status: 0 or a KVR_JINJA_* status, or these */
#define KVR_CHAT_OK            0
#define KVR_CHAT_BAD_REQUEST  -10  /* vLLM would answer 400 */


typedef struct kvr_chat_config_s  kvr_chat_config_t;


/*
 * Reads a tokenizer_config.json: its chat_template (a string, or the
 * "default" entry of a list of named templates) and the special tokens
 * transformers passes to the template (bos_token, eos_token, unk_token,
 * sep_token, pad_token, cls_token, mask_token, additional_special_tokens;
 * absent or null ones stay undefined).  template_override, when not NULL,
 * replaces the file's chat_template (e.g. vLLM's --chat-template); else a
 * chat_template.jinja in the same directory does, as transformers reads
 * it (gpt-oss ships its template so).
 */
kvr_chat_config_t *kvr_chat_config_load(const char *path,
    const char *template_override, char *err, size_t errlen);

/* the same from the file's text */
kvr_chat_config_t *kvr_chat_config_parse(const char *json, size_t len,
    const char *template_override, char *err, size_t errlen);

void kvr_chat_config_free(kvr_chat_config_t *cfg);

/* render limits (memory, steps, depth, strftime_now timezone) */
void kvr_chat_config_set_limits(kvr_chat_config_t *cfg,
    const kvr_jinja_limits_t *limits);


/*
 * Renders the chat request whose body object is node root of doc into
 * out (at most max_out bytes).  Returns KVR_CHAT_OK with *out_len set, or
 * a negative status with a message in err.
 */
int kvr_chat_render(const kvr_chat_config_t *cfg, const kvr_json_doc_t *doc,
    uint32_t root, char *out, size_t max_out, size_t *out_len, char *err,
    size_t errlen);


#endif /* _KVR_CHAT_H_INCLUDED_ */
