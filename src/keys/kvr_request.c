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
 * - Chat bodies are rendered with a placeholder template (see
 *   kvr_request_chat()); a message without a string "role" renders as
 *   "user".  Since every message renders its markers, only an empty
 *   "messages" array gives KVR_PARSE_EMPTY_PROMPT.
 * - Content parts follow vLLM's parsers: "text", "input_text" and
 *   "output_text" take the "text" field, "refusal" the "refusal" field,
 *   "thinking" the "thinking" field; other parts (images, audio) and parts
 *   without such a string field are skipped.
 * - "tools" and "tool_calls" render as compact JSON with object keys
 *   sorted (bytewise on the decoded key; a repeated key keeps its last
 *   value), like the json_dumps(JSON_COMPACT | JSON_SORT_KEYS) used
 *   before, but scalars are the client's raw bytes: two requests whose
 *   tools differ only in how a string is escaped ("\u00e9" against "é")
 *   or a number is spelled (1.0 against 1.00) get different keys.  Key
 *   order and whitespace outside strings do not matter.
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_request.h"


#define KVR_REQUEST_JSON_FLAGS  KVR_JSON_NUMBER_RANGE

/* first buffer for a chat rendering; it grows by doubling up to max */
#define KVR_REQUEST_MIN_CAP     1024
#define KVR_REQUEST_MAX_HINT    (256 * 1024)

/* objects up to this many members are sorted by insertion */
#define KVR_REQUEST_SORT_SMALL  12

/*
 * with a sink: plain strings this long go to it straight from the body,
 * shorter ones through the buffer; the buffer is handed on when it holds
 * this much, and kept for the next request up to KVR_REQUEST_KEEP bytes
 */
#define KVR_REQUEST_DIRECT      128
#define KVR_REQUEST_SINK_CAP    4096
#define KVR_REQUEST_FLUSH       (16 * 1024)
#define KVR_REQUEST_KEEP        (256 * 1024)


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


/* the sink's buffer, kept between requests (one per process) */
static char    *kvr_request_kept;
static size_t   kvr_request_kept_cap;


/* an open container of the JSON rendering */
typedef struct {
    uint32_t             node;
    uint32_t             pos;      /* array: current element; object: next */
    uint32_t             base;     /* object: its sorted keys in the scratch */
    uint32_t             count;    /* object: members kept */
} kvr_render_frame_t;


static kvr_parse_status_e kvr_request_fields(kvr_request_t *req);
static kvr_parse_status_e kvr_request_completions(kvr_request_t *req,
    size_t max_prompt, kvr_request_sink_pt sink, void *data);
static kvr_parse_status_e kvr_request_copy_text(kvr_request_t *req,
    uint32_t str, size_t max_prompt);
static kvr_parse_status_e kvr_request_sink_text(kvr_request_t *req,
    uint32_t str, size_t max_prompt, kvr_request_sink_pt sink, void *data);
static kvr_parse_status_e kvr_request_copy_ids(kvr_request_t *req,
    uint32_t list, size_t max_prompt);
static kvr_parse_status_e kvr_request_chat(kvr_request_t *req,
    size_t max_prompt, kvr_request_sink_pt sink, void *data);
static void kvr_render_open(kvr_render_t *r, size_t max, size_t hint,
    kvr_request_sink_pt sink, void *data);
static void kvr_render_flush(kvr_render_t *r);
static void kvr_render_close(kvr_render_t *r);
static int kvr_render_message(kvr_render_t *r, const kvr_json_doc_t *doc,
    uint32_t msg);
static int kvr_render_content(kvr_render_t *r, const kvr_json_doc_t *doc,
    uint32_t content);
static uint32_t kvr_request_part_text(const kvr_json_doc_t *doc,
    uint32_t part);
static int kvr_render_reserve(kvr_render_t *r, size_t n);
static int kvr_render_add(kvr_render_t *r, const char *p, size_t n);
static inline int kvr_render_put(kvr_render_t *r, const char *p, size_t n);
static int kvr_render_string(kvr_render_t *r, const kvr_json_doc_t *doc,
    uint32_t str);
static int kvr_render_json(kvr_render_t *r, const kvr_json_doc_t *doc,
    uint32_t root);
static uint32_t kvr_render_sort_members(const kvr_json_doc_t *doc,
    uint32_t obj, uint32_t *keys, uint32_t *tmp);
static int kvr_render_same_key(const kvr_json_doc_t *doc, uint32_t a,
    uint32_t b);
static void kvr_render_merge_sort(const kvr_json_doc_t *doc,
    uint32_t *keys, uint32_t *tmp, uint32_t n);
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
        return kvr_request_chat(req, max_prompt, sink, data);

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
            return kvr_request_sink_text(req, prompt, max_prompt, sink,
                                         data);
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
            return kvr_request_sink_text(req, first, max_prompt, sink, data);
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


/* the same checks and bytes as kvr_request_copy_text(), given to sink */
static kvr_parse_status_e
kvr_request_sink_text(kvr_request_t *req, uint32_t str, size_t max_prompt,
    kvr_request_sink_pt sink, void *data)
{
    kvr_render_t     r;
    kvr_json_doc_t  *doc;

    doc = req->root;

    if (doc->nodes[str].len - 2 == 0) {
        return KVR_PARSE_EMPTY_PROMPT;
    }

    kvr_render_open(&r, max_prompt, doc->nodes[str].len, sink, data);

    if (kvr_render_string(&r, doc, str) != 0) {
        kvr_render_close(&r);
        return r.status;
    }

    kvr_render_flush(&r);
    kvr_render_close(&r);

    req->text_len = r.out;

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


/*
 * The placeholder chat template, deterministic and prefix-preserving:
 *   ["<|tools|>" tools-json "\n"]
 *   for each message:
 *     "<|im_start|>" role "\n" content [tool-calls-json] "<|im_end|>\n"
 * The JSON is compact with sorted keys (kvr_render_json()).  Tools come
 * first because real templates put them before the messages, so they
 * belong to the prefix.
 */
static kvr_parse_status_e
kvr_request_chat(kvr_request_t *req, size_t max_prompt,
    kvr_request_sink_pt sink, void *data)
{
    size_t           body_len;
    uint32_t         messages, tools, msg;
    kvr_render_t     r;
    kvr_json_doc_t  *doc;

    doc = req->root;
    messages = kvr_json_find(doc, 0, "messages", 8);

    if (messages == 0 || kvr_json_type(doc, messages) != KVR_JSON_ARRAY) {
        return KVR_PARSE_NO_PROMPT;
    }

    if (kvr_json_count(doc, messages) == 0) {
        return KVR_PARSE_EMPTY_PROMPT;
    }

    /* the rendering is about as long as the body: one allocation usually */
    body_len = doc->len;

    kvr_render_open(&r, max_prompt,
                    (body_len < KVR_REQUEST_MAX_HINT) ? body_len + 1
                                                      : KVR_REQUEST_MAX_HINT,
                    sink, data);

    tools = kvr_json_find(doc, 0, "tools", 5);

    if (tools && kvr_json_type(doc, tools) == KVR_JSON_ARRAY
        && kvr_json_count(doc, tools) > 0)
    {
        if (kvr_render_add(&r, "<|tools|>", 9) != 0
            || kvr_render_json(&r, doc, tools) != 0
            || kvr_render_add(&r, "\n", 1) != 0)
        {
            goto failed;
        }
    }

    for (msg = kvr_json_first(doc, messages);
         msg;
         msg = kvr_json_next(doc, messages, msg))
    {
        if (kvr_json_type(doc, msg) != KVR_JSON_OBJECT) {
            r.status = KVR_PARSE_NO_PROMPT;
            goto failed;
        }

        if (kvr_render_message(&r, doc, msg) != 0) {
            goto failed;
        }
    }

    if (r.sink) {
        kvr_render_flush(&r);
        kvr_render_close(&r);

        if (r.out == 0) {
            return KVR_PARSE_EMPTY_PROMPT;
        }

        req->text_len = r.out;

        return KVR_PARSE_OK;
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

    if (r.sink) {
        kvr_render_close(&r);

    } else {
        free(r.data);
    }

    return r.status;
}


/*
 * Without a sink the rendering is built in a buffer of its own (the
 * caller's text); with one, in the kept buffer, handed on as it fills.
 */
static void
kvr_render_open(kvr_render_t *r, size_t max, size_t hint,
    kvr_request_sink_pt sink, void *data)
{
    memset(r, 0, sizeof(kvr_render_t));

    r->max = max;
    r->hint = hint;
    r->status = KVR_PARSE_OK;
    r->sink = sink;
    r->sink_data = data;

    if (sink) {
        r->hint = KVR_REQUEST_SINK_CAP;
        r->data = kvr_request_kept;
        r->cap = kvr_request_kept_cap;
        kvr_request_kept = NULL;
        kvr_request_kept_cap = 0;
    }
}


/* the buffered bytes to the sink; max shrinks by what went out */
static void
kvr_render_flush(kvr_render_t *r)
{
    if (r->len == 0) {
        return;
    }

    r->sink(r->sink_data, r->data, r->len);

    r->max -= r->len;
    r->out += r->len;
    r->len = 0;
}


/* a sink's buffer is kept for the next request unless it grew large */
static void
kvr_render_close(kvr_render_t *r)
{
    if (r->sink == NULL) {
        return;
    }

    if (r->cap > KVR_REQUEST_KEEP || kvr_request_kept != NULL) {
        free(r->data);

    } else {
        kvr_request_kept = r->data;
        kvr_request_kept_cap = r->cap;
    }

    r->data = NULL;
    r->cap = 0;
}


static int
kvr_render_message(kvr_render_t *r, const kvr_json_doc_t *doc,
    uint32_t msg)
{
    uint32_t  role, calls;

    if (kvr_render_add(r, "<|im_start|>", 12) != 0) {
        return -1;
    }

    role = kvr_json_find(doc, msg, "role", 4);

    if (role && kvr_json_type(doc, role) == KVR_JSON_STRING) {
        if (kvr_render_string(r, doc, role) != 0) {
            return -1;
        }

    } else if (kvr_render_add(r, "user", 4) != 0) {
        return -1;
    }

    if (kvr_render_add(r, "\n", 1) != 0
        || kvr_render_content(r, doc, kvr_json_find(doc, msg, "content", 7))
           != 0)
    {
        return -1;
    }

    /* the calls themselves, so that different tool calls do not collide */
    calls = kvr_json_find(doc, msg, "tool_calls", 10);

    if (calls && kvr_json_type(doc, calls) == KVR_JSON_ARRAY
        && kvr_json_count(doc, calls) > 0)
    {
        if (kvr_render_json(r, doc, calls) != 0) {
            return -1;
        }
    }

    return kvr_render_add(r, "<|im_end|>\n", 11);
}


/* a string as is; text parts joined with "\n"; null, missing, other: "" */
static int
kvr_render_content(kvr_render_t *r, const kvr_json_doc_t *doc,
    uint32_t content)
{
    int       first;
    uint32_t  part, text;

    if (content == 0) {
        return 0;
    }

    if (kvr_json_type(doc, content) == KVR_JSON_STRING) {
        return kvr_render_string(r, doc, content);
    }

    if (kvr_json_type(doc, content) != KVR_JSON_ARRAY) {
        return 0;
    }

    first = 1;

    for (part = kvr_json_first(doc, content);
         part;
         part = kvr_json_next(doc, content, part))
    {
        text = kvr_request_part_text(doc, part);
        if (text == 0) {
            continue;
        }

        if (!first && kvr_render_add(r, "\n", 1) != 0) {
            return -1;
        }

        first = 0;

        if (kvr_render_string(r, doc, text) != 0) {
            return -1;
        }
    }

    return 0;
}


/* the text node of a content part, or 0 for parts that carry none */
static uint32_t
kvr_request_part_text(const kvr_json_doc_t *doc, uint32_t part)
{
    uint32_t     type, text;
    const char  *field;
    size_t       field_len;

    type = kvr_json_find(doc, part, "type", 4);

    if (type == 0) {
        return 0;
    }

    if (kvr_json_string_eq(doc, type, "text", 4)
        || kvr_json_string_eq(doc, type, "input_text", 10)
        || kvr_json_string_eq(doc, type, "output_text", 11))
    {
        field = "text";
        field_len = 4;

    } else if (kvr_json_string_eq(doc, type, "refusal", 7)) {
        field = "refusal";
        field_len = 7;

    } else if (kvr_json_string_eq(doc, type, "thinking", 8)) {
        field = "thinking";
        field_len = 8;

    } else {
        return 0;
    }

    text = kvr_json_find(doc, part, field, field_len);

    if (text && kvr_json_type(doc, text) == KVR_JSON_STRING) {
        return text;
    }

    return 0;
}


/* room for n more bytes and the nul, within max; the caller adds them */
static int
kvr_render_reserve(kvr_render_t *r, size_t n)
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

    return 0;
}


/* appends n bytes, keeping len <= max and one byte spare for the nul */
static int
kvr_render_add(kvr_render_t *r, const char *p, size_t n)
{
    if (kvr_render_reserve(r, n) != 0) {
        return -1;
    }

    if (n > 0) {
        memcpy(r->data + r->len, p, n);
        r->len += n;
    }

    if (r->sink && r->len >= KVR_REQUEST_FLUSH) {
        kvr_render_flush(r);
    }

    return 0;
}


/* appends n bytes within room reserved before: only max is checked */
static inline int
kvr_render_put(kvr_render_t *r, const char *p, size_t n)
{
    if (n > r->max - r->len) {
        r->status = KVR_PARSE_TOO_LARGE;
        return -1;
    }

    memcpy(r->data + r->len, p, n);
    r->len += n;

    return 0;
}


/* a string node decoded; raw bytes straight from the body when plain */
static int
kvr_render_string(kvr_render_t *r, const kvr_json_doc_t *doc, uint32_t str)
{
    size_t                  raw, room, n;
    const kvr_json_node_t  *node;

    node = &doc->nodes[str];
    raw = node->len - 2;

    if (!(node->info & KVR_JSON_ESCAPED)) {

        /* a long plain string goes to the sink from where it lies */

        if (r->sink && raw >= KVR_REQUEST_DIRECT) {
            if (raw > r->max - r->len) {
                r->status = KVR_PARSE_TOO_LARGE;
                return -1;
            }

            kvr_render_flush(r);

            r->sink(r->sink_data, doc->input + node->off + 1, raw);
            r->max -= raw;
            r->out += raw;

            return 0;
        }

        return kvr_render_add(r, doc->input + node->off + 1, raw);
    }

    /* decoded <= raw: reserve what is left of both, then decode */
    room = r->max - r->len;

    if (raw < room) {
        room = raw;
    }

    if (kvr_render_reserve(r, room) != 0) {
        return -1;
    }

    n = kvr_json_string_decode(doc, str, r->data + r->len, room);

    if (n == (size_t) -1) {
        r->status = KVR_PARSE_TOO_LARGE;
        return -1;
    }

    r->len += n;

    if (r->sink && r->len >= KVR_REQUEST_FLUSH) {
        kvr_render_flush(r);
    }

    return 0;
}


/*
 * A JSON subtree, compact, object keys sorted and repeated keys reduced
 * to their last value, scalars raw; iterative, with a frame an open
 * container and the sorted keys of the open objects in a scratch stack.
 */
static int
kvr_render_json(kvr_render_t *r, const kvr_json_doc_t *doc, uint32_t root)
{
    size_t                  n_sub, depth, sp, room;
    void                   *mem;
    uint32_t                v, k, *keys, *tmp, total;
    kvr_render_frame_t     *frames, *f;
    const kvr_json_node_t  *node;

    /* every node renders to a byte at least: bounded before allocating */
    n_sub = doc->nodes[root].end - root;

    if (n_sub > r->max - r->len) {
        r->status = KVR_PARSE_TOO_LARGE;
        return -1;
    }

    /*
     * the rendering is never longer than the raw subtree (it only drops
     * whitespace and repeated members): one reservation, then only the
     * bound on max is checked as bytes go in
     */
    room = r->max - r->len;

    if (doc->nodes[root].len < room) {
        room = doc->nodes[root].len;
    }

    if (kvr_render_reserve(r, room) != 0) {
        return -1;
    }

    depth = (n_sub < KVR_JSON_MAX_DEPTH) ? n_sub : KVR_JSON_MAX_DEPTH;

    mem = malloc(depth * sizeof(kvr_render_frame_t)
                 + 2 * n_sub * sizeof(uint32_t));
    if (mem == NULL) {
        r->status = KVR_PARSE_NO_MEMORY;
        return -1;
    }

    frames = mem;
    keys = (uint32_t *) (frames + depth);
    tmp = keys + n_sub;

    depth = 0;
    sp = 0;
    v = root;

descend:

    node = &doc->nodes[v];

    switch (node->info & KVR_JSON_TYPE_MASK) {

    case KVR_JSON_ARRAY:
        if (node->end == v + 1) {
            if (kvr_render_put(r, "[]", 2) != 0) {
                goto failed;
            }

            goto ascend;
        }

        if (kvr_render_put(r, "[", 1) != 0) {
            goto failed;
        }

        f = &frames[depth++];
        f->node = v;
        f->pos = v + 1;
        v = v + 1;
        goto descend;

    case KVR_JSON_OBJECT:
        if (node->end == v + 1) {
            if (kvr_render_put(r, "{}", 2) != 0) {
                goto failed;
            }

            goto ascend;
        }

        if (kvr_render_put(r, "{", 1) != 0) {
            goto failed;
        }

        total = kvr_json_count(doc, v);

        f = &frames[depth++];
        f->node = v;
        f->base = (uint32_t) sp;
        f->count = kvr_render_sort_members(doc, v, keys + sp, tmp + sp);
        f->pos = 0;
        sp += total;
        goto member;

    default:
        if (kvr_render_put(r, doc->input + node->off, node->len) != 0) {
            goto failed;
        }

        goto ascend;
    }

member:

    /* f is the innermost frame, an object with members left */
    k = keys[f->base + f->pos];
    f->pos++;
    node = &doc->nodes[k];

    if (kvr_render_put(r, doc->input + node->off, node->len) != 0
        || kvr_render_put(r, ":", 1) != 0)
    {
        goto failed;
    }

    v = k + 1;
    goto descend;

ascend:

    if (depth == 0) {
        free(mem);
        return 0;
    }

    f = &frames[depth - 1];

    if (kvr_json_type(doc, f->node) == KVR_JSON_ARRAY) {
        v = doc->nodes[f->pos].end;

        if (v < doc->nodes[f->node].end) {
            if (kvr_render_put(r, ",", 1) != 0) {
                goto failed;
            }

            f->pos = v;
            goto descend;
        }

        if (kvr_render_put(r, "]", 1) != 0) {
            goto failed;
        }

        depth--;
        goto ascend;
    }

    if (f->pos < f->count) {
        if (kvr_render_put(r, ",", 1) != 0) {
            goto failed;
        }

        goto member;
    }

    if (kvr_render_put(r, "}", 1) != 0) {
        goto failed;
    }

    sp = f->base;
    depth--;
    goto ascend;

failed:

    free(mem);

    return -1;
}


/*
 * The keys of obj sorted by their decoded bytes (stable), then of every
 * run of equal keys only the last kept; returns how many are kept
 */
static uint32_t
kvr_render_sort_members(const kvr_json_doc_t *doc, uint32_t obj,
    uint32_t *keys, uint32_t *tmp)
{
    uint32_t  n, i, j, k, kept;

    n = 0;

    for (k = kvr_json_first(doc, obj); k; k = kvr_json_next(doc, obj, k)) {
        keys[n++] = k;
    }

    if (n <= KVR_REQUEST_SORT_SMALL) {
        for (i = 1; i < n; i++) {
            k = keys[i];

            for (j = i; j > 0 && kvr_json_string_cmp(doc, keys[j - 1], k) > 0;
                 j--)
            {
                keys[j] = keys[j - 1];
            }

            keys[j] = k;
        }

    } else {
        kvr_render_merge_sort(doc, keys, tmp, n);
    }

    kept = 0;

    for (i = 0; i < n; i++) {
        if (i + 1 < n && kvr_render_same_key(doc, keys[i], keys[i + 1])) {
            continue;
        }

        keys[kept++] = keys[i];
    }

    return kept;
}


/* equal decoded keys; plain keys of different lengths differ at once */
static int
kvr_render_same_key(const kvr_json_doc_t *doc, uint32_t a, uint32_t b)
{
    const kvr_json_node_t  *na, *nb;

    na = &doc->nodes[a];
    nb = &doc->nodes[b];

    if (!((na->info | nb->info) & KVR_JSON_ESCAPED)) {
        return na->len == nb->len
               && memcmp(doc->input + na->off, doc->input + nb->off,
                         na->len) == 0;
    }

    return kvr_json_string_cmp(doc, a, b) == 0;
}


/* bottom-up, stable, O(n log n) whatever the input */
static void
kvr_render_merge_sort(const kvr_json_doc_t *doc, uint32_t *keys,
    uint32_t *tmp, uint32_t n)
{
    uint32_t   width, lo, mid, hi, i, j, o, *src, *dst, *t;

    src = keys;
    dst = tmp;

    for (width = 1; width < n; width *= 2) {

        for (lo = 0; lo < n; lo += 2 * width) {
            mid = (n - lo > width) ? lo + width : n;
            hi = (n - mid > width) ? mid + width : n;
            i = lo;
            j = mid;
            o = lo;

            while (i < mid && j < hi) {
                if (kvr_json_string_cmp(doc, src[j], src[i]) < 0) {
                    dst[o++] = src[j++];

                } else {
                    dst[o++] = src[i++];
                }
            }

            while (i < mid) {
                dst[o++] = src[i++];
            }

            while (j < hi) {
                dst[o++] = src[j++];
            }
        }

        t = src;
        src = dst;
        dst = t;
    }

    if (src != keys) {
        memcpy(keys, src, n * sizeof(uint32_t));
    }
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
