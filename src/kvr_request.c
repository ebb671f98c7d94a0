/*
 * Copyright (C) kvroute developers
 *
 * Request understanding (interface in kvr_request.h).
 *
 * Decisions:
 * - JSON is loaded with JSON_ALLOW_NUL and without JSON_REJECT_DUPLICATES:
 *   a duplicated key keeps its last value and "\u0000" is accepted inside
 *   strings, as Python's json.loads in vLLM/SGLang does, so the prompt
 *   routed on is the prompt the server sees.  Strings are therefore always
 *   handled with their length, never with strlen().  JSON_DECODE_ANY makes
 *   a valid scalar body ("42") KVR_PARSE_NOT_OBJECT, not NOT_JSON.
 * - A body cut inside a multi-byte UTF-8 sequence is reported as
 *   truncated (KVR_PARSE_NOT_JSON), not as KVR_PARSE_INVALID_UTF8.
 * - Chat bodies are rendered with a placeholder template (see
 *   kvr_request_chat()); a message without a string "role" renders as
 *   "user".  Since every message renders its markers, only an empty
 *   "messages" array gives KVR_PARSE_EMPTY_PROMPT.
 * - Content parts follow vLLM's parsers: "text", "input_text" and
 *   "output_text" take the "text" field, "refusal" the "refusal" field,
 *   "thinking" the "thinking" field; other parts (images, audio) and parts
 *   without such a string field are skipped.
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_request.h"


#define KVR_REQUEST_JSON_FLAGS  (JSON_ALLOW_NUL | JSON_DECODE_ANY)
#define KVR_REQUEST_DUMP_FLAGS  (JSON_COMPACT | JSON_SORT_KEYS)

/* first buffer for a chat rendering; it grows by doubling up to max */
#define KVR_REQUEST_MIN_CAP     1024
#define KVR_REQUEST_MAX_HINT    (256 * 1024)


typedef struct {
    char                *data;
    size_t               len;
    size_t               cap;
    size_t               hint;     /* size of the first allocation */
    size_t               max;      /* bound on len */
    kvr_parse_status_e   status;   /* why an add failed */
} kvr_render_t;


static kvr_parse_status_e kvr_request_completions(kvr_request_t *req,
    size_t max_prompt);
static kvr_parse_status_e kvr_request_copy_text(kvr_request_t *req,
    json_t *str, size_t max_prompt);
static kvr_parse_status_e kvr_request_copy_ids(kvr_request_t *req,
    json_t *list, size_t max_prompt);
static kvr_parse_status_e kvr_request_chat(kvr_request_t *req,
    size_t body_len, size_t max_prompt);
static int kvr_render_message(kvr_render_t *r, json_t *msg);
static int kvr_render_content(kvr_render_t *r, json_t *content);
static json_t *kvr_request_part_text(json_t *part);
static int kvr_render_add(kvr_render_t *r, const char *p, size_t n);
static int kvr_render_json(kvr_render_t *r, json_t *json);
static int kvr_render_dump_cb(const char *buffer, size_t size, void *data);
static int kvr_json_string_is(json_t *str, const char *lit);
static int kvr_utf8_cut(const char *body, size_t len, size_t pos);
static int kvr_ends_with(const char *s, size_t len, const char *suffix);


kvr_parse_status_e
kvr_request_parse(kvr_request_t *req, kvr_endpoint_e ep, const char *body,
    size_t len, size_t max_prompt)
{
    json_t        *root, *v;
    json_error_t   err;

    memset(req, 0, sizeof(kvr_request_t));

    if (body == NULL) {
        body = "";
        len = 0;
    }

    root = json_loadb(body, len, KVR_REQUEST_JSON_FLAGS, &err);

    if (root == NULL) {
        switch (json_error_code(&err)) {

        case json_error_invalid_utf8:
            if (kvr_utf8_cut(body, len, (size_t) err.position)) {
                return KVR_PARSE_NOT_JSON;
            }

            return KVR_PARSE_INVALID_UTF8;

        case json_error_out_of_memory:
            return KVR_PARSE_NO_MEMORY;

        default:
            /* syntax, premature end, depth above 2048, huge numbers */
            return KVR_PARSE_NOT_JSON;
        }
    }

    req->root = root;

    if (!json_is_object(root)) {
        return KVR_PARSE_NOT_OBJECT;
    }

    /* wrong types are treated as absent */

    v = json_object_get(root, "model");
    if (json_is_string(v)) {
        req->model = json_string_value(v);
        req->model_len = json_string_length(v);
    }

    v = json_object_get(root, "cache_salt");
    if (json_is_string(v)) {
        req->cache_salt = json_string_value(v);
        req->cache_salt_len = json_string_length(v);
    }

    if (json_is_true(json_object_get(root, "stream"))) {
        req->stream = 1;
    }

    /* keeps the render buffer arithmetic free of overflow */
    if (max_prompt > SIZE_MAX / 4) {
        max_prompt = SIZE_MAX / 4;
    }

    switch (ep) {

    case KVR_ENDPOINT_COMPLETIONS:
        return kvr_request_completions(req, max_prompt);

    case KVR_ENDPOINT_CHAT:
        return kvr_request_chat(req, len, max_prompt);

    default:
        return KVR_PARSE_NO_PROMPT;
    }
}


/*
 * "prompt": a string, a batch of strings (the first one routes), a list
 * of token ids, or a batch of such lists (the first one routes)
 */
static kvr_parse_status_e
kvr_request_completions(kvr_request_t *req, size_t max_prompt)
{
    json_t  *prompt, *first;

    prompt = json_object_get(req->root, "prompt");

    if (json_is_string(prompt)) {
        return kvr_request_copy_text(req, prompt, max_prompt);
    }

    if (!json_is_array(prompt)) {
        return KVR_PARSE_NO_PROMPT;
    }

    if (json_array_size(prompt) == 0) {
        return KVR_PARSE_EMPTY_PROMPT;
    }

    first = json_array_get(prompt, 0);

    if (json_is_string(first)) {
        return kvr_request_copy_text(req, first, max_prompt);
    }

    if (json_is_integer(first)) {
        return kvr_request_copy_ids(req, prompt, max_prompt);
    }

    if (json_is_array(first)) {
        return kvr_request_copy_ids(req, first, max_prompt);
    }

    return KVR_PARSE_NO_PROMPT;
}


static kvr_parse_status_e
kvr_request_copy_text(kvr_request_t *req, json_t *str, size_t max_prompt)
{
    char    *text;
    size_t   len;

    len = json_string_length(str);

    if (len == 0) {
        return KVR_PARSE_EMPTY_PROMPT;
    }

    if (len > max_prompt) {
        return KVR_PARSE_TOO_LARGE;
    }

    text = malloc(len + 1);
    if (text == NULL) {
        return KVR_PARSE_NO_MEMORY;
    }

    memcpy(text, json_string_value(str), len);
    text[len] = '\0';

    req->text = text;
    req->text_len = len;

    return KVR_PARSE_OK;
}


static kvr_parse_status_e
kvr_request_copy_ids(kvr_request_t *req, json_t *list, size_t max_prompt)
{
    size_t       i, n;
    json_t      *v;
    uint32_t    *ids;
    json_int_t   id;

    n = json_array_size(list);

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

    for (i = 0; i < n; i++) {
        v = json_array_get(list, i);

        if (!json_is_integer(v)) {
            free(ids);
            return KVR_PARSE_NO_PROMPT;
        }

        id = json_integer_value(v);

        if (id < 0 || id > (json_int_t) UINT32_MAX) {
            free(ids);
            return KVR_PARSE_NO_PROMPT;
        }

        ids[i] = (uint32_t) id;
    }

    req->ids = ids;
    req->n_ids = n;

    return KVR_PARSE_OK;
}


/*
 * The placeholder chat template, deterministic and prefix-preserving:
 *   ["<|tools|>" tools-json "\n"]
 *   for each message:
 *     "<|im_start|>" role "\n" content [tool-calls-json] "<|im_end|>\n"
 * JSON dumps are compact with sorted keys.  Tools come first because real
 * templates put them before the messages, so they belong to the prefix.
 */
static kvr_parse_status_e
kvr_request_chat(kvr_request_t *req, size_t body_len, size_t max_prompt)
{
    size_t         i;
    json_t        *messages, *tools, *msg;
    kvr_render_t   r;

    messages = json_object_get(req->root, "messages");

    if (!json_is_array(messages)) {
        return KVR_PARSE_NO_PROMPT;
    }

    if (json_array_size(messages) == 0) {
        return KVR_PARSE_EMPTY_PROMPT;
    }

    memset(&r, 0, sizeof(kvr_render_t));
    r.max = max_prompt;
    r.status = KVR_PARSE_OK;

    /* the rendering is about as long as the body: one allocation usually */
    r.hint = (body_len < KVR_REQUEST_MAX_HINT) ? body_len + 1
                                                : KVR_REQUEST_MAX_HINT;

    tools = json_object_get(req->root, "tools");

    if (json_is_array(tools) && json_array_size(tools) > 0) {
        if (kvr_render_add(&r, "<|tools|>", 9) != 0
            || kvr_render_json(&r, tools) != 0
            || kvr_render_add(&r, "\n", 1) != 0)
        {
            goto failed;
        }
    }

    json_array_foreach(messages, i, msg) {

        if (!json_is_object(msg)) {
            r.status = KVR_PARSE_NO_PROMPT;
            goto failed;
        }

        if (kvr_render_message(&r, msg) != 0) {
            goto failed;
        }
    }

    if (r.len == 0) {
        free(r.data);
        return KVR_PARSE_EMPTY_PROMPT;
    }

    r.data[r.len] = '\0';

    req->text = r.data;
    req->text_len = r.len;

    return KVR_PARSE_OK;

failed:

    free(r.data);

    return r.status;
}


static int
kvr_render_message(kvr_render_t *r, json_t *msg)
{
    json_t  *role, *calls;

    if (kvr_render_add(r, "<|im_start|>", 12) != 0) {
        return -1;
    }

    role = json_object_get(msg, "role");

    if (json_is_string(role)) {
        if (kvr_render_add(r, json_string_value(role),
                           json_string_length(role))
            != 0)
        {
            return -1;
        }

    } else if (kvr_render_add(r, "user", 4) != 0) {
        return -1;
    }

    if (kvr_render_add(r, "\n", 1) != 0
        || kvr_render_content(r, json_object_get(msg, "content")) != 0)
    {
        return -1;
    }

    /* the calls themselves, so that different tool calls do not collide */
    calls = json_object_get(msg, "tool_calls");

    if (json_is_array(calls) && json_array_size(calls) > 0) {
        if (kvr_render_json(r, calls) != 0) {
            return -1;
        }
    }

    return kvr_render_add(r, "<|im_end|>\n", 11);
}


/* a string as is; text parts joined with "\n"; null, missing, other: "" */
static int
kvr_render_content(kvr_render_t *r, json_t *content)
{
    int      first;
    size_t   i;
    json_t  *part, *text;

    if (json_is_string(content)) {
        return kvr_render_add(r, json_string_value(content),
                              json_string_length(content));
    }

    if (!json_is_array(content)) {
        return 0;
    }

    first = 1;

    json_array_foreach(content, i, part) {

        text = kvr_request_part_text(part);
        if (text == NULL) {
            continue;
        }

        if (!first && kvr_render_add(r, "\n", 1) != 0) {
            return -1;
        }

        first = 0;

        if (kvr_render_add(r, json_string_value(text),
                           json_string_length(text))
            != 0)
        {
            return -1;
        }
    }

    return 0;
}


/* the text of a content part, or NULL for parts that carry none */
static json_t *
kvr_request_part_text(json_t *part)
{
    json_t      *type, *text;
    const char  *field;

    type = json_object_get(part, "type");

    if (kvr_json_string_is(type, "text")
        || kvr_json_string_is(type, "input_text")
        || kvr_json_string_is(type, "output_text"))
    {
        field = "text";

    } else if (kvr_json_string_is(type, "refusal")) {
        field = "refusal";

    } else if (kvr_json_string_is(type, "thinking")) {
        field = "thinking";

    } else {
        return NULL;
    }

    text = json_object_get(part, field);

    return json_is_string(text) ? text : NULL;
}


/* appends n bytes, keeping len <= max and one byte spare for the nul */
static int
kvr_render_add(kvr_render_t *r, const char *p, size_t n)
{
    char    *data;
    size_t   need, cap;

    if (n > r->max - r->len) {
        r->status = KVR_PARSE_TOO_LARGE;
        return -1;
    }

    need = r->len + n + 1;

    if (need > r->cap) {
        cap = r->cap ? r->cap : r->hint;

        if (cap < KVR_REQUEST_MIN_CAP) {
            cap = KVR_REQUEST_MIN_CAP;
        }

        while (cap < need) {
            cap *= 2;
        }

        /* need <= max + 1, and max <= SIZE_MAX / 4: no overflow here */
        if (cap > r->max + 1) {
            cap = r->max + 1;
        }

        data = realloc(r->data, cap);
        if (data == NULL) {
            r->status = KVR_PARSE_NO_MEMORY;
            return -1;
        }

        r->data = data;
        r->cap = cap;
    }

    if (n > 0) {
        memcpy(r->data + r->len, p, n);
        r->len += n;
    }

    return 0;
}


/* compact sorted dump, written straight into the bounded buffer */
static int
kvr_render_json(kvr_render_t *r, json_t *json)
{
    if (json_dump_callback(json, kvr_render_dump_cb, r,
                           KVR_REQUEST_DUMP_FLAGS)
        != 0)
    {
        if (r->status == KVR_PARSE_OK) {
            /* jansson itself failed: only allocation can do that here */
            r->status = KVR_PARSE_NO_MEMORY;
        }

        return -1;
    }

    return 0;
}


static int
kvr_render_dump_cb(const char *buffer, size_t size, void *data)
{
    return kvr_render_add(data, buffer, size);
}


static int
kvr_json_string_is(json_t *str, const char *lit)
{
    size_t  n;

    if (!json_is_string(str)) {
        return 0;
    }

    n = strlen(lit);

    return json_string_length(str) == n
           && memcmp(json_string_value(str), lit, n) == 0;
}


/*
 * jansson reports the offset of the lead byte it could not decode: the
 * body was cut when that byte starts a sequence longer than what is left
 * and only continuation bytes follow it
 */
static int
kvr_utf8_cut(const char *body, size_t len, size_t pos)
{
    size_t          i, need;
    unsigned char   c;

    if (pos >= len) {
        return 0;
    }

    c = (unsigned char) body[pos];

    if (c >= 0xc2 && c <= 0xdf) {
        need = 2;

    } else if (c >= 0xe0 && c <= 0xef) {
        need = 3;

    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4;

    } else {
        return 0;
    }

    if (len - pos >= need) {
        return 0;
    }

    for (i = pos + 1; i < len; i++) {
        if (((unsigned char) body[i] & 0xc0) != 0x80) {
            return 0;
        }
    }

    return 1;
}


void
kvr_request_free(kvr_request_t *req)
{
    free(req->text);
    free(req->ids);

    if (req->root != NULL) {
        json_decref(req->root);
    }

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
