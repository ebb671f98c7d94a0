/*
 * Copyright (C) kvroute developers
 *
 * Request understanding (interface in kvr_request.h).
 *
 * Decisions:
 * - The body is parsed by kvr_json: full RFC 8259 validation, no copy of
 *   the text, a flat node array.  A duplicated key keeps its last value
 *   and "\u0000" is accepted inside strings (also inside keys), as
 *   Python's json.loads in vLLM/SGLang does, so the prompt routed on is
 *   the prompt the server sees.  Strings are therefore always handled with
 *   their length, never with strlen().  A valid scalar body ("42") is
 *   KVR_PARSE_NOT_OBJECT, not NOT_JSON.  Numbers must fit jansson's types
 *   (int64, finite double) as before, so "1e400" is still NOT_JSON.
 * - A body cut inside a multi-byte UTF-8 sequence is reported as
 *   truncated (KVR_PARSE_NOT_JSON), not as KVR_PARSE_INVALID_UTF8.
 * - model and cache_salt are decoded into one small owned block, since
 *   the body may be freed once kvr_request_parse() returns.
 * - Chat bodies are rendered with a placeholder template (kvr_render.h);
 *   content parts are classified here (kvr_part_of()) for it and
 *   for the model's own template (kvr_chat.c) alike.
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_render.h"


#define KVR_REQUEST_JSON_FLAGS  KVR_JSON_NUMBER_RANGE


static kvr_parse_status_e kvr_request_fields(kvr_request_t *req);
static kvr_parse_status_e kvr_request_completions(kvr_request_t *req,
    size_t max_prompt, kvr_request_sink_pt sink, void *data);
static kvr_parse_status_e kvr_request_copy_text(kvr_request_t *req,
    uint32_t str, size_t max_prompt);
static kvr_parse_status_e kvr_request_copy_ids(kvr_request_t *req,
    uint32_t list, size_t max_prompt);
static int kvr_ends_with(const char *s, size_t len, const char *suffix);

kvr_parse_status_e
kvr_request_parse(kvr_request_t *req, kvr_endpoint_e ep, const char *body,
    size_t len, size_t max_prompt)
{
    kvr_parse_status_e  rc;

    rc = kvr_request_parse_body(req, body, len);

    if (rc != KVR_PARSE_OK) {
        return rc;
    }

    return kvr_request_prompt(req, ep, max_prompt, NULL, NULL);
}


kvr_parse_status_e
kvr_request_parse_body(kvr_request_t *req, const char *body, size_t len)
{
    kvr_json_doc_t      *doc;
    kvr_parse_status_e   rc;

    memset(req, 0, sizeof(kvr_request_t));

    if (body == NULL) {
        body = "";
        len = 0;
    }

    doc = kvr_json_parse(body, len, KVR_REQUEST_JSON_FLAGS);
    if (doc == NULL) {
        return KVR_PARSE_NO_MEMORY;
    }

    switch (doc->status) {

    case KVR_JSON_OK:
        break;

    case KVR_JSON_ERR_UTF8:
        kvr_json_free(doc);
        return KVR_PARSE_INVALID_UTF8;

    case KVR_JSON_ERR_NO_MEMORY:
        kvr_json_free(doc);
        return KVR_PARSE_NO_MEMORY;

    default:
        /* syntax, truncated, too deep, too many nodes, huge numbers */
        kvr_json_free(doc);
        return KVR_PARSE_NOT_JSON;
    }

    req->root = doc;

    if (kvr_json_type(doc, 0) != KVR_JSON_OBJECT) {
        return KVR_PARSE_NOT_OBJECT;
    }

    /* wrong types are treated as absent */

    rc = kvr_request_fields(req);
    if (rc != KVR_PARSE_OK) {
        return rc;
    }

    if (kvr_json_type(doc, kvr_json_find(doc, 0, "stream", 6))
        == KVR_JSON_TRUE)
    {
        req->stream = 1;
    }

    /* the output it may write, for the KV room it needs */

    if (kvr_json_uint32(doc, kvr_json_find(doc, 0, "max_tokens", 10),
                        &req->max_tokens)
        != 0
        && kvr_json_uint32(doc,
                           kvr_json_find(doc, 0, "max_completion_tokens", 21),
                           &req->max_tokens)
           != 0)
    {
        req->max_tokens = 0;
    }

    return KVR_PARSE_OK;
}


kvr_parse_status_e
kvr_request_prompt(kvr_request_t *req, kvr_endpoint_e ep, size_t max_prompt,
    kvr_request_sink_pt sink, void *data)
{
    if (req->root == NULL || kvr_json_type(req->root, 0) != KVR_JSON_OBJECT
        || req->text != NULL || req->ids != NULL)
    {
        return KVR_PARSE_NO_PROMPT;
    }

    /* keeps the render buffer arithmetic free of overflow */
    if (max_prompt > SIZE_MAX / 4) {
        max_prompt = SIZE_MAX / 4;
    }

    switch (ep) {

    case KVR_ENDPOINT_COMPLETIONS:
        return kvr_request_completions(req, max_prompt, sink, data);

    case KVR_ENDPOINT_CHAT:
        return kvr_render_chat(req, max_prompt, sink, data);

    default:
        return KVR_PARSE_NO_PROMPT;
    }
}


/* model and cache_salt, decoded into one owned block */
static kvr_parse_status_e
kvr_request_fields(kvr_request_t *req)
{
    char            *p;
    size_t           size;
    uint32_t         model, salt;
    kvr_json_doc_t  *doc;

    doc = req->root;

    model = kvr_json_find(doc, 0, "model", 5);
    if (model && kvr_json_type(doc, model) != KVR_JSON_STRING) {
        model = 0;
    }

    salt = kvr_json_find(doc, 0, "cache_salt", 10);
    if (salt && kvr_json_type(doc, salt) != KVR_JSON_STRING) {
        salt = 0;
    }

    if (model == 0 && salt == 0) {
        return KVR_PARSE_OK;
    }

    /* decoded text is never longer than the raw text with its quotes */
    size = (model ? doc->nodes[model].len : 0)
           + (salt ? doc->nodes[salt].len : 0);

    /* usually a model name: no allocation */

    if (size <= KVR_REQUEST_FIELDS_SMALL) {
        req->fields = req->fields_small;

    } else {
        req->fields = malloc(size);
        if (req->fields == NULL) {
            return KVR_PARSE_NO_MEMORY;
        }
    }

    p = req->fields;

    if (model) {
        req->model = p;
        req->model_len = kvr_json_string_decode(doc, model, p,
                                                doc->nodes[model].len - 2);
        p[req->model_len] = '\0';
        p += req->model_len + 1;
    }

    if (salt) {
        req->cache_salt = p;
        req->cache_salt_len = kvr_json_string_decode(doc, salt, p,
                                                     doc->nodes[salt].len
                                                     - 2);
        p[req->cache_salt_len] = '\0';
    }

    return KVR_PARSE_OK;
}


/*
 * "prompt": a string, a batch of strings (the first one routes), a list
 * of token ids, or a batch of such lists (the first one routes)
 */
static kvr_parse_status_e
kvr_request_completions(kvr_request_t *req, size_t max_prompt,
    kvr_request_sink_pt sink, void *data)
{
    uint32_t         prompt, first;
    kvr_json_doc_t  *doc;

    doc = req->root;
    prompt = kvr_json_find(doc, 0, "prompt", 6);

    if (prompt == 0) {
        return KVR_PARSE_NO_PROMPT;
    }

    switch (kvr_json_type(doc, prompt)) {

    case KVR_JSON_STRING:
        if (sink) {
            return kvr_render_text(req, prompt, max_prompt, sink, data);
        }

        return kvr_request_copy_text(req, prompt, max_prompt);

    case KVR_JSON_ARRAY:
        break;

    default:
        return KVR_PARSE_NO_PROMPT;
    }

    first = kvr_json_first(doc, prompt);

    if (first == 0) {
        return KVR_PARSE_EMPTY_PROMPT;
    }

    switch (kvr_json_type(doc, first)) {

    case KVR_JSON_STRING:
        if (sink) {
            return kvr_render_text(req, first, max_prompt, sink, data);
        }

        return kvr_request_copy_text(req, first, max_prompt);

    case KVR_JSON_NUMBER:
        if (doc->nodes[first].info & KVR_JSON_REAL) {
            return KVR_PARSE_NO_PROMPT;
        }

        return kvr_request_copy_ids(req, prompt, max_prompt);

    case KVR_JSON_ARRAY:
        return kvr_request_copy_ids(req, first, max_prompt);

    default:
        return KVR_PARSE_NO_PROMPT;
    }
}


static kvr_parse_status_e
kvr_request_copy_text(kvr_request_t *req, uint32_t str, size_t max_prompt)
{
    char            *text;
    size_t           raw, len;
    kvr_json_doc_t  *doc;

    doc = req->root;
    raw = doc->nodes[str].len - 2;

    /* an escape decodes to at least one byte: only "" is empty */
    if (raw == 0) {
        return KVR_PARSE_EMPTY_PROMPT;
    }

    if (!(doc->nodes[str].info & KVR_JSON_ESCAPED) && raw > max_prompt) {
        return KVR_PARSE_TOO_LARGE;
    }

    /* the decoded text is no longer than the raw one, nor than max */
    len = (raw < max_prompt) ? raw : max_prompt;

    text = malloc(len + 1);
    if (text == NULL) {
        return KVR_PARSE_NO_MEMORY;
    }

    len = kvr_json_string_decode(doc, str, text, len);

    if (len == (size_t) -1) {
        free(text);
        return KVR_PARSE_TOO_LARGE;
    }

    text[len] = '\0';

    req->text = text;
    req->text_len = len;

    return KVR_PARSE_OK;
}


static kvr_parse_status_e
kvr_request_copy_ids(kvr_request_t *req, uint32_t list, size_t max_prompt)
{
    size_t           i, n;
    uint32_t         v, *ids;
    kvr_json_doc_t  *doc;

    doc = req->root;
    n = kvr_json_count(doc, list);

    if (n == 0) {
        return KVR_PARSE_EMPTY_PROMPT;
    }

    /* 4 bytes an id, compared without multiplying */
    if (n > max_prompt / 4) {
        return KVR_PARSE_TOO_LARGE;
    }

    ids = malloc(n * sizeof(uint32_t));
    if (ids == NULL) {
        return KVR_PARSE_NO_MEMORY;
    }

    i = 0;

    for (v = kvr_json_first(doc, list); v; v = kvr_json_next(doc, list, v)) {
        if (kvr_json_uint32(doc, v, &ids[i]) != 0) {
            free(ids);
            return KVR_PARSE_NO_PROMPT;
        }

        i++;
    }

    req->ids = ids;
    req->n_ids = n;

    return KVR_PARSE_OK;
}


void
kvr_request_free(kvr_request_t *req)
{
    free(req->text);
    free(req->ids);
    if (req->fields != req->fields_small) {
        free(req->fields);
    }
    kvr_json_free(req->root);

    memset(req, 0, sizeof(kvr_request_t));
}


const char *
kvr_parse_status_name(kvr_parse_status_e status)
{
    switch (status) {

    case KVR_PARSE_OK:
        return "ok";

    case KVR_PARSE_NOT_JSON:
        return "not-json";

    case KVR_PARSE_INVALID_UTF8:
        return "invalid-utf8";

    case KVR_PARSE_NOT_OBJECT:
        return "not-object";

    case KVR_PARSE_NO_PROMPT:
        return "no-prompt";

    case KVR_PARSE_EMPTY_PROMPT:
        return "empty-prompt";

    case KVR_PARSE_TOO_LARGE:
        return "too-large";

    case KVR_PARSE_NO_MEMORY:
        return "no-memory";
    }

    return "unknown";
}


int
kvr_endpoint_from_path(const char *path, size_t len)
{
    const char  *q;

    if (path == NULL) {
        return -1;
    }

    q = memchr(path, '?', len);
    if (q != NULL) {
        len = q - path;
    }

    /* the chat suffix first: it is not a completions suffix, but be plain */
    if (kvr_ends_with(path, len, "/v1/chat/completions")) {
        return KVR_ENDPOINT_CHAT;
    }

    if (kvr_ends_with(path, len, "/v1/completions")) {
        return KVR_ENDPOINT_COMPLETIONS;
    }

    return -1;
}


static int
kvr_ends_with(const char *s, size_t len, const char *suffix)
{
    size_t  n;

    n = strlen(suffix);

    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}
