/*
 * Copyright (C) kvroute developers
 *
 * The canonical rendering of a prompt for text keys (interface in
 * kvr_render.h): the output, a buffer of its own or pieces handed to a
 * sink; the placeholder chat template; the compact sorted JSON of tools
 * and tool calls.
 *
 * Decisions:
 * - A message without a string "role" renders as "user".  Since every
 *   message renders its markers, only an empty "messages" array gives
 *   KVR_PARSE_EMPTY_PROMPT.
 * - Content parts follow vLLM's parsers (kvr_part_of()); parts
 *   without text (images, audio) and parts without their string field
 *   are skipped.
 * - "tools" and "tool_calls" render as compact JSON with object keys
 *   sorted (bytewise on the decoded key; a repeated key keeps its last
 *   value), like the json_dumps(JSON_COMPACT | JSON_SORT_KEYS) used
 *   before, but scalars are the client's raw bytes: two requests whose
 *   tools differ only in how a string is escaped ("\u00e9" against "é")
 *   or a number is spelled (1.0 against 1.00) get different keys.  Key
 *   order and whitespace outside strings do not matter.  This is not the
 *   chat template's tojson (kvr_jinja), which writes template values as
 *   transformers does: these bytes only have to be stable, and cheap.
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_part.h"
#include "kvr_render.h"


/* first buffer for a chat rendering; it grows by doubling up to max */
#define KVR_RENDER_MIN_CAP     1024
#define KVR_RENDER_MAX_HINT    (256 * 1024)

/* objects up to this many members are sorted by insertion */
#define KVR_RENDER_SORT_SMALL  12

/*
 * with a sink: plain strings this long go to it straight from the body,
 * shorter ones through the buffer; the buffer is handed on when it holds
 * this much, and kept for the next request up to KVR_RENDER_KEEP bytes
 */
#define KVR_RENDER_DIRECT      128
#define KVR_RENDER_SINK_CAP    4096
#define KVR_RENDER_FLUSH       (16 * 1024)
#define KVR_RENDER_KEEP        (256 * 1024)


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
static char    *kvr_render_kept;
static size_t   kvr_render_kept_cap;


/* an open container of the JSON rendering */
typedef struct {
    uint32_t             node;
    uint32_t             pos;      /* array: current element; object: next */
    uint32_t             base;     /* object: its sorted keys in the scratch */
    uint32_t             count;    /* object: members kept */
} kvr_render_frame_t;


/* where kvr_render_walk() goes after a value (kvr_render_ascend) */
enum {
    KVR_RENDER_FAILED = -1,
    KVR_RENDER_DONE = 0,
    KVR_RENDER_DESCEND,
    KVR_RENDER_MEMBER
};


static void kvr_render_open(kvr_render_t *r, size_t max, size_t hint,
    kvr_request_sink_pt sink, void *data);
static void kvr_render_flush(kvr_render_t *r);
static void kvr_render_close(kvr_render_t *r);
static int kvr_render_string(kvr_render_t *r, const kvr_json_doc_t *doc,
    uint32_t str);
static int kvr_render_message(kvr_render_t *r, const kvr_json_doc_t *doc,
    uint32_t msg);
static int kvr_render_content(kvr_render_t *r, const kvr_json_doc_t *doc,
    uint32_t content);
static int kvr_render_reserve(kvr_render_t *r, size_t n);
static int kvr_render_add(kvr_render_t *r, const char *p, size_t n);
static inline int kvr_render_put(kvr_render_t *r, const char *p, size_t n);
static int kvr_render_json(kvr_render_t *r, const kvr_json_doc_t *doc,
    uint32_t root);
static int kvr_render_walk(kvr_render_t *r, const kvr_json_doc_t *doc,
    uint32_t v, kvr_render_frame_t *frames, uint32_t *keys, uint32_t *tmp);
static int kvr_render_ascend(kvr_render_t *r, const kvr_json_doc_t *doc,
    kvr_render_frame_t *frames, size_t *depth, size_t *sp, uint32_t *v);
static uint32_t kvr_render_sort_members(const kvr_json_doc_t *doc,
    uint32_t obj, uint32_t *keys, uint32_t *tmp);
static int kvr_render_same_key(const kvr_json_doc_t *doc, uint32_t a,
    uint32_t b);
static void kvr_render_merge_sort(const kvr_json_doc_t *doc,
    uint32_t *keys, uint32_t *tmp, uint32_t n);


/*
 * The placeholder chat template, deterministic and prefix-preserving:
 *   ["<|tools|>" tools-json "\n"]
 *   for each message:
 *     "<|im_start|>" role "\n" content [tool-calls-json] "<|im_end|>\n"
 * The JSON is compact with sorted keys (kvr_render_json()).  Tools come
 * first because real templates put them before the messages, so they
 * belong to the prefix.
 */
kvr_parse_status_e
kvr_render_chat(kvr_request_t *req, size_t max_prompt,
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
                    (body_len < KVR_RENDER_MAX_HINT) ? body_len + 1
                                                      : KVR_RENDER_MAX_HINT,
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


kvr_parse_status_e
kvr_render_text(kvr_request_t *req, uint32_t str, size_t max_prompt,
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
        r->hint = KVR_RENDER_SINK_CAP;
        r->data = kvr_render_kept;
        r->cap = kvr_render_kept_cap;
        kvr_render_kept = NULL;
        kvr_render_kept_cap = 0;
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

    if (r->cap > KVR_RENDER_KEEP || kvr_render_kept != NULL) {
        free(r->data);

    } else {
        kvr_render_kept = r->data;
        kvr_render_kept_cap = r->cap;
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
        /* parts without their text (images, audio, ...) are skipped */
        if (kvr_part_of(doc, part, &text) == KVR_PART_OTHER
            || text == 0)
        {
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

        if (cap < KVR_RENDER_MIN_CAP) {
            cap = KVR_RENDER_MIN_CAP;
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

    if (r->sink && r->len >= KVR_RENDER_FLUSH) {
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

        if (r->sink && raw >= KVR_RENDER_DIRECT) {
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

    if (r->sink && r->len >= KVR_RENDER_FLUSH) {
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
    int                     rc;
    size_t                  n_sub, depth, room;
    void                   *mem;
    uint32_t               *keys;
    kvr_render_frame_t     *frames;

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

    rc = kvr_render_walk(r, doc, root, frames, keys, keys + n_sub);

    free(mem);

    return rc;
}


/* kvr_render_json()'s walk: frames and keys (with tmp) are its stacks */
static int
kvr_render_walk(kvr_render_t *r, const kvr_json_doc_t *doc, uint32_t v,
    kvr_render_frame_t *frames, uint32_t *keys, uint32_t *tmp)
{
    size_t                  depth, sp;
    uint32_t                k, total;
    kvr_render_frame_t     *f;
    const kvr_json_node_t  *node;

    depth = 0;
    sp = 0;

descend:

    node = &doc->nodes[v];

    switch (node->info & KVR_JSON_TYPE_MASK) {

    case KVR_JSON_ARRAY:
        if (node->end == v + 1) {
            if (kvr_render_put(r, "[]", 2) != 0) {
                return -1;
            }

            goto ascend;
        }

        if (kvr_render_put(r, "[", 1) != 0) {
            return -1;
        }

        f = &frames[depth++];
        f->node = v;
        f->pos = v + 1;
        v = v + 1;
        goto descend;

    case KVR_JSON_OBJECT:
        if (node->end == v + 1) {
            if (kvr_render_put(r, "{}", 2) != 0) {
                return -1;
            }

            goto ascend;
        }

        if (kvr_render_put(r, "{", 1) != 0) {
            return -1;
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
            return -1;
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
        return -1;
    }

    v = k + 1;
    goto descend;

ascend:

    switch (kvr_render_ascend(r, doc, frames, &depth, &sp, &v)) {

    case KVR_RENDER_DESCEND:
        goto descend;

    case KVR_RENDER_MEMBER:
        f = &frames[depth - 1];
        goto member;

    case KVR_RENDER_DONE:
        return 0;

    default:
        return -1;
    }
}


/*
 * After a value: the next element of the innermost open array (*v), the
 * next member of the innermost open object, or the containers that are
 * complete closed, up to the root (done).
 */
static int
kvr_render_ascend(kvr_render_t *r, const kvr_json_doc_t *doc,
    kvr_render_frame_t *frames, size_t *depth, size_t *sp, uint32_t *v)
{
    uint32_t             next;
    kvr_render_frame_t  *f;

    for ( ;; ) {

        if (*depth == 0) {
            return KVR_RENDER_DONE;
        }

        f = &frames[*depth - 1];

        if (kvr_json_type(doc, f->node) == KVR_JSON_ARRAY) {
            next = doc->nodes[f->pos].end;

            if (next < doc->nodes[f->node].end) {
                if (kvr_render_put(r, ",", 1) != 0) {
                    return KVR_RENDER_FAILED;
                }

                f->pos = next;
                *v = next;
                return KVR_RENDER_DESCEND;
            }

            if (kvr_render_put(r, "]", 1) != 0) {
                return KVR_RENDER_FAILED;
            }

            (*depth)--;
            continue;
        }

        if (f->pos < f->count) {
            if (kvr_render_put(r, ",", 1) != 0) {
                return KVR_RENDER_FAILED;
            }

            return KVR_RENDER_MEMBER;
        }

        if (kvr_render_put(r, "}", 1) != 0) {
            return KVR_RENDER_FAILED;
        }

        *sp = f->base;
        (*depth)--;
    }
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

    if (n <= KVR_RENDER_SORT_SMALL) {
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
