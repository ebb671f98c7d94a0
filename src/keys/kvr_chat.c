/*
 * Copyright (C) kvroute developers
 *
 * Chat request to template variables, as vLLM builds them
 * (entrypoints/chat_utils.py and serving_chat.py), then the render:
 * - content: a string as is, null as "", a list of text parts joined
 *   with "\n" (vLLM's "string" content format); or, when the template
 *   loops over message contents (vLLM's "openai" content format, e.g.
 *   Gemma 3), a list of {"type": "text", "text": ...} parts, a string
 *   as one part, null as no part;
 * - assistant tool_calls: arguments (a JSON string) parsed, invalid JSON
 *   or an empty string becoming {}; an empty list dropped;
 * - reasoning (or reasoning_content) copied to both names;
 * - name and tool_call_id passed through;
 * - tools dumped as vLLM's pydantic models do (type, function with name,
 *   description and parameters, null when absent, then any extra keys);
 * - add_generation_prompt (default true), chat_template_kwargs, the
 *   tokenizer's special tokens, tools and documents none when absent.
 */

#define _GNU_SOURCE

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "kvr_chat.h"
#include "kvr_part.h"
#include "kvr_request.h"


#define KVR_CHAT_MAX_TOKENS  64

/*
 * What a media part (image, audio, video) renders as: the engine puts the
 * model's placeholder there (before the message's text in the "string"
 * format, at the part in the "openai" format), then expands it and keys
 * its blocks with the item's hash, which no request reproduces.  So the
 * prompt is rendered with this marker in its place and cut where the first
 * one lands: the blocks before it are keyed exactly, none after.  The
 * marker (two U+10FFFF noncharacters around a word) is one no template
 * emits; a client text carrying it only cuts the prompt shorter.
 */
#define KVR_CHAT_MEDIA_MARK      "\xf4\x8f\xbf\xbfmedia\xf4\x8f\xbf\xbf"
#define KVR_CHAT_MEDIA_MARK_LEN  (sizeof(KVR_CHAT_MEDIA_MARK) - 1)


struct kvr_chat_config_s {
    kvr_jinja_tpl_t     *tpl;
    kvr_jinja_limits_t   limits;
    char                *names[KVR_CHAT_MAX_TOKENS];
    char                *values[KVR_CHAT_MAX_TOKENS];
    size_t               value_lens[KVR_CHAT_MAX_TOKENS];
    unsigned             n_tokens;
    char                *extra_name;     /* additional_special_tokens */
    char               **extra;
    size_t              *extra_lens;
    size_t               n_extra;
    unsigned             openai:1;       /* content as a list of parts */
};


typedef struct {
    kvr_jinja_render_t      *r;
    const kvr_json_doc_t    *doc;
    const kvr_chat_config_t *cfg;
    int                      status;
    char                    *err;
    size_t                   errlen;
    unsigned                 media;        /* media parts rendered */
} kvr_chat_ctx_t;


static int kvr_chat_check(const kvr_json_doc_t *doc, uint32_t root,
    char *err, size_t errlen);
static void kvr_chat_set_tokens(const kvr_chat_config_t *cfg,
    kvr_jinja_render_t *r);
static void kvr_chat_kwargs(kvr_chat_ctx_t *cx, uint32_t node);


static const char  *kvr_chat_token_names[] = {
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
    "cls_token", "mask_token", NULL
};


/* a token entry: a string or an AddedToken object {"content": ...} */
static const char *
kvr_chat_token_text(json_t *v, size_t *len)
{
    if (json_is_object(v)) {
        v = json_object_get(v, "content");
    }

    if (!json_is_string(v)) {
        return NULL;
    }

    *len = json_string_length(v);
    return json_string_value(v);
}


static char *
kvr_chat_dup(const char *s, size_t len)
{
    char  *p;

    p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }

    return p;
}


kvr_chat_config_t *
kvr_chat_config_parse(const char *json, size_t len,
    const char *template_override, char *err, size_t errlen)
{
    size_t               i, tlen;
    const char          *text, *tpl_src;
    json_t              *root, *ct, *item, *v;
    json_error_t         jerr;
    kvr_chat_config_t   *cfg;

    /* model_max_length may exceed 64 bits: numbers as reals */
    root = json_loadb(json, len, JSON_DECODE_INT_AS_REAL, &jerr);
    if (root == NULL || !json_is_object(root)) {
        snprintf(err, errlen, "tokenizer_config.json: %s",
                 root ? "not an object" : jerr.text);
        json_decref(root);
        return NULL;
    }

    cfg = calloc(1, sizeof(kvr_chat_config_t));
    if (cfg == NULL) {
        snprintf(err, errlen, "out of memory");
        json_decref(root);
        return NULL;
    }

    tpl_src = template_override;
    tlen = tpl_src ? strlen(tpl_src) : 0;

    if (tpl_src == NULL) {
        ct = json_object_get(root, "chat_template");
        if (json_is_array(ct)) {
            json_array_foreach(ct, i, item) {
                v = json_object_get(item, "name");
                if (json_is_string(v)
                    && strcmp(json_string_value(v), "default") == 0)
                {
                    ct = json_object_get(item, "template");
                    break;
                }
            }
        }
        if (!json_is_string(ct)) {
            snprintf(err, errlen, "tokenizer_config.json has no usable "
                     "chat_template");
            goto failed;
        }
        tpl_src = json_string_value(ct);
        tlen = json_string_length(ct);
    }

    cfg->tpl = kvr_jinja_compile(tpl_src, tlen, err, errlen);
    if (cfg->tpl == NULL) {
        goto failed;
    }

    /* vLLM then passes contents as lists of parts */
    cfg->openai = kvr_jinja_loops_over(cfg->tpl, "content");

    for (i = 0; kvr_chat_token_names[i]; i++) {
        text = kvr_chat_token_text(json_object_get(root,
                                   kvr_chat_token_names[i]), &tlen);
        if (text == NULL || tlen == 0) {
            continue;
        }
        cfg->names[cfg->n_tokens] = (char *) kvr_chat_token_names[i];
        cfg->values[cfg->n_tokens] = kvr_chat_dup(text, tlen);
        cfg->value_lens[cfg->n_tokens] = tlen;
        if (cfg->values[cfg->n_tokens] == NULL) {
            snprintf(err, errlen, "out of memory");
            goto failed;
        }
        cfg->n_tokens++;
    }

    v = json_object_get(root, "additional_special_tokens");
    if (json_is_array(v) && json_array_size(v) > 0) {
        cfg->n_extra = json_array_size(v);
        cfg->extra = calloc(cfg->n_extra, sizeof(char *));
        cfg->extra_lens = calloc(cfg->n_extra, sizeof(size_t));
        if (cfg->extra == NULL || cfg->extra_lens == NULL) {
            snprintf(err, errlen, "out of memory");
            goto failed;
        }
        json_array_foreach(v, i, item) {
            text = kvr_chat_token_text(item, &tlen);
            if (text == NULL) {
                snprintf(err, errlen, "additional_special_tokens: not a "
                         "string");
                goto failed;
            }
            cfg->extra[i] = kvr_chat_dup(text, tlen);
            cfg->extra_lens[i] = tlen;
            if (cfg->extra[i] == NULL) {
                snprintf(err, errlen, "out of memory");
                goto failed;
            }
        }
    }

    json_decref(root);
    return cfg;

failed:

    json_decref(root);
    kvr_chat_config_free(cfg);
    return NULL;
}


/* a whole file, NUL-terminated; NULL with err set (errno kept) */
static char *
kvr_chat_read(const char *path, long *size, char *err, size_t errlen)
{
    FILE  *f;
    char  *buf;
    int    saved;

    f = fopen(path, "rb");
    if (f == NULL) {
        saved = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        errno = saved;
        return NULL;
    }

    if (fseek(f, 0, SEEK_END) != 0 || (*size = ftell(f)) < 0
        || *size > (64L << 20) || fseek(f, 0, SEEK_SET) != 0)
    {
        snprintf(err, errlen, "%s: cannot read (or larger than 64 MB)",
                 path);
        fclose(f);
        errno = EIO;
        return NULL;
    }

    buf = malloc(*size + 1);
    if (buf == NULL || fread(buf, 1, *size, f) != (size_t) *size) {
        snprintf(err, errlen, "%s: read failed", path);
        free(buf);
        fclose(f);
        errno = EIO;
        return NULL;
    }
    fclose(f);
    buf[*size] = '\0';

    return buf;
}


/*
 * chat_template.jinja beside the config: transformers reads it in place
 * of the config's chat_template (gpt-oss ships its template so)
 */
static char *
kvr_chat_read_beside(const char *path, char *err, size_t errlen)
{
    long         size;
    char        *name, *buf;
    size_t       dir;
    const char  *slash;
    static const char  file[] = "chat_template.jinja";

    slash = strrchr(path, '/');
    dir = slash ? (size_t) (slash - path + 1) : 0;

    name = malloc(dir + sizeof(file));
    if (name == NULL) {
        snprintf(err, errlen, "out of memory");
        errno = ENOMEM;
        return NULL;
    }
    memcpy(name, path, dir);
    memcpy(name + dir, file, sizeof(file));

    buf = kvr_chat_read(name, &size, err, errlen);
    free(name);

    if (buf && memchr(buf, '\0', size)) {
        snprintf(err, errlen, "%s: a NUL byte in the template", file);
        free(buf);
        errno = EINVAL;
        return NULL;
    }

    return buf;
}


kvr_chat_config_t *
kvr_chat_config_load(const char *path, const char *template_override,
    char *err, size_t errlen)
{
    long                 size;
    char                *buf, *beside;
    kvr_chat_config_t   *cfg;

    buf = kvr_chat_read(path, &size, err, errlen);
    if (buf == NULL) {
        return NULL;
    }

    beside = NULL;

    if (template_override == NULL) {
        beside = kvr_chat_read_beside(path, err, errlen);
        if (beside == NULL && errno != ENOENT) {
            free(buf);
            return NULL;
        }
        template_override = beside;
    }

    cfg = kvr_chat_config_parse(buf, size, template_override, err, errlen);
    free(buf);
    free(beside);

    return cfg;
}


void
kvr_chat_config_free(kvr_chat_config_t *cfg)
{
    size_t  i;

    if (cfg == NULL) {
        return;
    }

    kvr_jinja_free(cfg->tpl);
    for (i = 0; i < cfg->n_tokens; i++) {
        free(cfg->values[i]);
    }
    for (i = 0; cfg->extra && i < cfg->n_extra; i++) {
        free(cfg->extra[i]);
    }
    free(cfg->extra);
    free(cfg->extra_lens);
    free(cfg);
}


void
kvr_chat_config_set_limits(kvr_chat_config_t *cfg,
    const kvr_jinja_limits_t *limits)
{
    cfg->limits = *limits;
}


/* request side */

static void
kvr_chat_fail(kvr_chat_ctx_t *cx, int status, const char *msg)
{
    if (cx->status == KVR_CHAT_OK) {
        cx->status = status;
        snprintf(cx->err, cx->errlen, "%s", msg);
    }
}


static int
kvr_chat_is(const kvr_json_doc_t *doc, uint32_t node, const char *s)
{
    return node && kvr_json_string_eq(doc, node, s, strlen(s));
}


static uint32_t
kvr_chat_find(const kvr_json_doc_t *doc, uint32_t obj, const char *key)
{
    if (obj == 0 && kvr_json_type(doc, 0) != KVR_JSON_OBJECT) {
        return 0;
    }

    return kvr_json_find(doc, obj, key, strlen(key));
}


static kvr_jv_t *
kvr_chat_string(kvr_chat_ctx_t *cx, uint32_t node)
{
    size_t      rlen, n;
    const char *raw;
    char       *buf;
    kvr_jv_t   *v;

    raw = kvr_json_raw(cx->doc, node, &rlen);

    if (!(cx->doc->nodes[node].info & KVR_JSON_ESCAPED)) {
        return kvr_jinja_new_str(cx->r, raw + 1, rlen - 2);
    }

    buf = malloc(rlen);
    if (buf == NULL) {
        kvr_chat_fail(cx, KVR_JINJA_LIMIT, "out of memory");
        return NULL;
    }

    n = kvr_json_string_decode(cx->doc, node, buf, rlen);
    v = kvr_jinja_new_str(cx->r, buf, n);
    free(buf);

    return v;
}


static kvr_jv_t *
kvr_chat_number(kvr_chat_ctx_t *cx, uint32_t node)
{
    char        small[64], *buf, *end;
    size_t      len, i;
    const char *raw;
    int64_t     val;
    int         neg;
    double      f;
    kvr_jv_t   *v;

    raw = kvr_json_raw(cx->doc, node, &len);

    if (!(cx->doc->nodes[node].info & KVR_JSON_REAL)) {
        neg = (raw[0] == '-');
        val = 0;
        for (i = neg; i < len; i++) {
            if (__builtin_mul_overflow(val, 10, &val)
                || __builtin_add_overflow(val, raw[i] - '0', &val))
            {
                kvr_chat_fail(cx, KVR_JINJA_UNSUPPORTED, "integer beyond "
                              "64 bits in the request");
                return NULL;
            }
        }
        return kvr_jinja_new_int(cx->r, neg ? -val : val);
    }

    buf = (len < sizeof(small)) ? small : malloc(len + 1);
    if (buf == NULL) {
        kvr_chat_fail(cx, KVR_JINJA_LIMIT, "out of memory");
        return NULL;
    }
    memcpy(buf, raw, len);
    buf[len] = '\0';
    f = strtod(buf, &end);
    if (buf != small) {
        free(buf);
    }

    v = kvr_jinja_new_float(cx->r, f);
    return v;
}


/* any JSON value, as python's json.loads builds it */
static kvr_jv_t *
kvr_chat_value(kvr_chat_ctx_t *cx, const kvr_json_doc_t *doc, uint32_t node)
{
    const kvr_json_doc_t  *saved;
    const char            *kname;
    uint32_t               k;
    kvr_jv_t              *v, *item, *key;
    size_t                 klen;

    saved = cx->doc;
    cx->doc = doc;
    v = NULL;

    switch (kvr_json_type(doc, node)) {

    case KVR_JSON_OBJECT:
        v = kvr_jinja_new_dict(cx->r);
        for (k = kvr_json_first(doc, node); k; k = kvr_json_next(doc, node, k))
        {
            key = kvr_chat_string(cx, k);
            item = kvr_chat_value(cx, doc, k + 1);
            if (key == NULL || item == NULL) {
                v = NULL;
                break;
            }
            kname = kvr_jinja_str_ptr(key, &klen);
            kvr_jinja_dict_set(cx->r, v, kname, klen, item);
        }
        break;

    case KVR_JSON_ARRAY:
        v = kvr_jinja_new_list(cx->r);
        for (k = kvr_json_first(doc, node); k; k = kvr_json_next(doc, node, k))
        {
            item = kvr_chat_value(cx, doc, k);
            if (item == NULL) {
                v = NULL;
                break;
            }
            kvr_jinja_list_push(cx->r, v, item);
        }
        break;

    case KVR_JSON_STRING:
        v = kvr_chat_string(cx, node);
        break;

    case KVR_JSON_NUMBER:
        v = kvr_chat_number(cx, node);
        break;

    case KVR_JSON_TRUE:
    case KVR_JSON_FALSE:
        v = kvr_jinja_new_bool(cx->r, kvr_json_type(doc, node)
                                      == KVR_JSON_TRUE);
        break;

    default:
        v = kvr_jinja_new_none(cx->r);
    }

    cx->doc = saved;
    return v;
}


/* a text part as vLLM's "openai" content format has it */
static kvr_jv_t *
kvr_chat_text_part(kvr_chat_ctx_t *cx, kvr_jv_t *text)
{
    kvr_jv_t  *part;

    part = kvr_jinja_new_dict(cx->r);
    kvr_jinja_dict_set(cx->r, part, "type", 4,
                       kvr_jinja_new_str(cx->r, "text", 4));
    kvr_jinja_dict_set(cx->r, part, "text", 4, text);

    return part;
}


/* a message's content in vLLM's "string" format, or "openai" format */
static kvr_jv_t *
kvr_chat_content(kvr_chat_ctx_t *cx, uint32_t node)
{
    size_t       n, len, marks, texts;
    uint32_t     part, text;
    char        *buf;
    kvr_part_e   kind;
    const char  *p;
    kvr_jv_t    *v, *s;

    if (node == 0 || kvr_json_type(cx->doc, node) == KVR_JSON_NULL) {
        return cx->cfg->openai ? kvr_jinja_new_list(cx->r)
                               : kvr_jinja_new_str(cx->r, "", 0);
    }

    if (kvr_json_type(cx->doc, node) == KVR_JSON_STRING) {
        s = kvr_chat_string(cx, node);
        if (!cx->cfg->openai || s == NULL) {
            return s;
        }
        v = kvr_jinja_new_list(cx->r);
        kvr_jinja_list_push(cx->r, v, kvr_chat_text_part(cx, s));
        return v;
    }

    if (kvr_json_type(cx->doc, node) != KVR_JSON_ARRAY) {
        kvr_chat_fail(cx, KVR_CHAT_BAD_REQUEST, "message content is neither "
                      "a string nor a list");
        return NULL;
    }

    /* the parts' texts joined with "\n", or a list of text parts */
    n = 0;
    marks = 0;
    texts = 0;
    buf = NULL;
    v = cx->cfg->openai ? kvr_jinja_new_list(cx->r) : NULL;

    for (part = kvr_json_first(cx->doc, node); part;
         part = kvr_json_next(cx->doc, node, part))
    {
        if (kvr_json_type(cx->doc, part) != KVR_JSON_OBJECT) {
            kvr_chat_fail(cx, KVR_JINJA_UNSUPPORTED, "content part is not "
                          "an object");
            goto done;
        }

        kind = kvr_part_of(cx->doc, part, &text);

        if (kind == KVR_PART_MEDIA) {
            cx->media++;

            if (cx->cfg->openai) {
                s = kvr_jinja_new_str(cx->r, KVR_CHAT_MEDIA_MARK,
                                      KVR_CHAT_MEDIA_MARK_LEN);
                kvr_jinja_list_push(cx->r, v, kvr_chat_text_part(cx, s));

            } else {
                marks++;
            }

            continue;
        }

        /* thinking parts are left to the engine: text keys */
        if (kind != KVR_PART_TEXT && kind != KVR_PART_REFUSAL) {
            kvr_chat_fail(cx, KVR_JINJA_UNSUPPORTED, "non-text content part");
            goto done;
        }

        if (text == 0) {
            kvr_chat_fail(cx, KVR_CHAT_BAD_REQUEST, "content part without "
                          "its text");
            goto done;
        }

        s = kvr_chat_string(cx, text);
        p = kvr_jinja_str_ptr(s, &len);
        if (p == NULL) {
            goto done;
        }

        if (cx->cfg->openai) {
            kvr_jinja_list_push(cx->r, v, kvr_chat_text_part(cx, s));
            continue;
        }

        p = realloc(buf, n + len + 1);
        if (p == NULL) {
            kvr_chat_fail(cx, KVR_JINJA_LIMIT, "out of memory");
            goto done;
        }
        buf = (char *) p;
        /* between texts, even empty ones; media parts are not joined */
        if (texts++ > 0) {
            buf[n++] = '\n';
        }
        memcpy(buf + n, kvr_jinja_str_ptr(s, &len), len);
        n += len;
    }

    if (!cx->cfg->openai && marks) {
        /*
         * vLLM: the placeholders first, then the text, joined by "\n";
         * only the first placeholder's place matters
         */
        p = realloc(buf, KVR_CHAT_MEDIA_MARK_LEN + 1 + n + 1);
        if (p == NULL) {
            kvr_chat_fail(cx, KVR_JINJA_LIMIT, "out of memory");
            goto done;
        }
        buf = (char *) p;
        memmove(buf + KVR_CHAT_MEDIA_MARK_LEN + 1, buf, n);
        memcpy(buf, KVR_CHAT_MEDIA_MARK "\n", KVR_CHAT_MEDIA_MARK_LEN + 1);
        n += KVR_CHAT_MEDIA_MARK_LEN + 1;
    }

    if (!cx->cfg->openai) {
        v = kvr_jinja_new_str(cx->r, buf ? buf : "", n);
    }

    free(buf);
    return v;

done:

    free(buf);
    return NULL;
}


/* function.arguments: json.loads of the string; invalid JSON gives {} */
static kvr_jv_t *
kvr_chat_arguments(kvr_chat_ctx_t *cx, uint32_t node)
{
    size_t           len;
    const char      *text;
    kvr_jv_t        *s, *v;
    kvr_json_doc_t  *args;

    if (node == 0 || kvr_json_type(cx->doc, node) == KVR_JSON_NULL) {
        return kvr_jinja_new_dict(cx->r);
    }

    if (kvr_json_type(cx->doc, node) != KVR_JSON_STRING) {
        kvr_chat_fail(cx, KVR_CHAT_BAD_REQUEST, "tool call arguments are "
                      "not a string");
        return NULL;
    }

    s = kvr_chat_string(cx, node);
    text = kvr_jinja_str_ptr(s, &len);
    if (text == NULL) {
        return NULL;
    }

    if (len == 0) {
        return kvr_jinja_new_dict(cx->r);
    }

    args = kvr_json_parse(text, len, 0);
    if (args == NULL) {
        kvr_chat_fail(cx, KVR_JINJA_LIMIT, "out of memory");
        return NULL;
    }

    if (args->status != KVR_JSON_OK) {
        /* python accepts NaN, Infinity and lone surrogates: not guessed */
        if (args->status != KVR_JSON_ERR_SYNTAX
            || memmem(text, len, "NaN", 3) || memmem(text, len, "Infinity", 8)
            || memmem(text, len, "\\u", 2) || memmem(text, len, "\\U", 2))
        {
            kvr_chat_fail(cx, KVR_JINJA_UNSUPPORTED, "tool call arguments "
                          "python may read differently");
            kvr_json_free(args);
            return NULL;
        }
        kvr_json_free(args);
        return kvr_jinja_new_dict(cx->r);
    }

    v = kvr_chat_value(cx, args, 0);
    kvr_json_free(args);

    return v;
}


static kvr_jv_t *
kvr_chat_tool_calls(kvr_chat_ctx_t *cx, uint32_t node)
{
    uint32_t   tc, fn, id, type, name;
    kvr_jv_t  *list, *call, *func, *v;

    list = kvr_jinja_new_list(cx->r);

    for (tc = kvr_json_first(cx->doc, node); tc;
         tc = kvr_json_next(cx->doc, node, tc))
    {
        fn = kvr_chat_find(cx->doc, tc, "function");
        id = kvr_chat_find(cx->doc, tc, "id");
        type = kvr_chat_find(cx->doc, tc, "type");
        name = fn ? kvr_chat_find(cx->doc, fn, "name") : 0;

        if (kvr_json_type(cx->doc, tc) != KVR_JSON_OBJECT
            || fn == 0 || kvr_json_type(cx->doc, fn) != KVR_JSON_OBJECT
            || name == 0 || kvr_json_type(cx->doc, name) != KVR_JSON_STRING
            || (id && kvr_json_type(cx->doc, id) != KVR_JSON_STRING)
            || (type && !kvr_chat_is(cx->doc, type, "function")))
        {
            kvr_chat_fail(cx, KVR_CHAT_BAD_REQUEST, "malformed tool call");
            return NULL;
        }

        call = kvr_jinja_new_dict(cx->r);
        if (id) {
            kvr_jinja_dict_set(cx->r, call, "id", 2, kvr_chat_string(cx, id));
        }

        func = kvr_jinja_new_dict(cx->r);
        v = kvr_chat_arguments(cx, kvr_chat_find(cx->doc, fn, "arguments"));
        if (v == NULL) {
            return NULL;
        }
        kvr_jinja_dict_set(cx->r, func, "arguments", 9, v);
        kvr_jinja_dict_set(cx->r, func, "name", 4, kvr_chat_string(cx, name));
        kvr_jinja_dict_set(cx->r, call, "function", 8, func);

        if (type) {
            kvr_jinja_dict_set(cx->r, call, "type", 4,
                               kvr_chat_string(cx, type));
        }

        kvr_jinja_list_push(cx->r, list, call);
    }

    return list;
}


static int
kvr_chat_key_is(const kvr_json_doc_t *doc, uint32_t key, const char **names)
{
    for ( ; *names; names++) {
        if (kvr_chat_is(doc, key, *names)) {
            return 1;
        }
    }

    return 0;
}


/* extra keys of an object, after the declared ones (pydantic extra) */
static int
kvr_chat_extras(kvr_chat_ctx_t *cx, uint32_t obj, kvr_jv_t *dict,
    const char **declared)
{
    uint32_t     k;
    size_t       klen;
    const char  *kname;
    kvr_jv_t    *key, *v;

    for (k = kvr_json_first(cx->doc, obj); k;
         k = kvr_json_next(cx->doc, obj, k))
    {
        if (kvr_chat_key_is(cx->doc, k, declared)) {
            continue;
        }
        key = kvr_chat_string(cx, k);
        v = kvr_chat_value(cx, cx->doc, k + 1);
        if (key == NULL || v == NULL) {
            return -1;
        }
        kname = kvr_jinja_str_ptr(key, &klen);
        kvr_jinja_dict_set(cx->r, dict, kname, klen, v);
    }

    return 0;
}


static kvr_jv_t *
kvr_chat_tools(kvr_chat_ctx_t *cx, uint32_t node)
{
    uint32_t     t, fn, type, name, desc, params;
    kvr_jv_t    *list, *tool, *func, *v;
    static const char  *tool_keys[] = { "type", "function", NULL };
    static const char  *fn_keys[] = {
        "name", "description", "parameters", NULL
    };

    if (node == 0 || kvr_json_type(cx->doc, node) == KVR_JSON_NULL) {
        return kvr_jinja_new_none(cx->r);
    }

    if (kvr_json_type(cx->doc, node) != KVR_JSON_ARRAY) {
        kvr_chat_fail(cx, KVR_CHAT_BAD_REQUEST, "tools is not a list");
        return NULL;
    }

    list = kvr_jinja_new_list(cx->r);

    for (t = kvr_json_first(cx->doc, node); t;
         t = kvr_json_next(cx->doc, node, t))
    {
        type = kvr_chat_find(cx->doc, t, "type");
        fn = kvr_chat_find(cx->doc, t, "function");
        name = fn ? kvr_chat_find(cx->doc, fn, "name") : 0;
        desc = fn ? kvr_chat_find(cx->doc, fn, "description") : 0;
        params = fn ? kvr_chat_find(cx->doc, fn, "parameters") : 0;

        if (kvr_json_type(cx->doc, t) != KVR_JSON_OBJECT
            || (type && !kvr_chat_is(cx->doc, type, "function"))
            || fn == 0 || kvr_json_type(cx->doc, fn) != KVR_JSON_OBJECT
            || name == 0 || kvr_json_type(cx->doc, name) != KVR_JSON_STRING
            || (desc && kvr_json_type(cx->doc, desc) != KVR_JSON_STRING
                && kvr_json_type(cx->doc, desc) != KVR_JSON_NULL)
            || (params && kvr_json_type(cx->doc, params) != KVR_JSON_OBJECT
                && kvr_json_type(cx->doc, params) != KVR_JSON_NULL))
        {
            kvr_chat_fail(cx, KVR_CHAT_BAD_REQUEST, "malformed tool");
            return NULL;
        }

        tool = kvr_jinja_new_dict(cx->r);
        kvr_jinja_dict_set(cx->r, tool, "type", 4,
                           kvr_jinja_new_str(cx->r, "function", 8));

        func = kvr_jinja_new_dict(cx->r);
        kvr_jinja_dict_set(cx->r, func, "name", 4, kvr_chat_string(cx, name));
        v = desc ? kvr_chat_value(cx, cx->doc, desc)
                 : kvr_jinja_new_none(cx->r);
        kvr_jinja_dict_set(cx->r, func, "description", 11, v);
        v = params ? kvr_chat_value(cx, cx->doc, params)
                   : kvr_jinja_new_none(cx->r);
        if (v == NULL) {
            return NULL;
        }
        kvr_jinja_dict_set(cx->r, func, "parameters", 10, v);

        if (kvr_chat_extras(cx, fn, func, fn_keys) != 0) {
            return NULL;
        }
        kvr_jinja_dict_set(cx->r, tool, "function", 8, func);

        if (kvr_chat_extras(cx, t, tool, tool_keys) != 0) {
            return NULL;
        }

        kvr_jinja_list_push(cx->r, list, tool);
    }

    return list;
}


static kvr_jv_t *
kvr_chat_messages(kvr_chat_ctx_t *cx, uint32_t node)
{
    uint32_t     m, role, content, tc, tcid, name, reasoning;
    kvr_jv_t    *list, *msg, *v;
    int          assistant;

    if (node == 0 || kvr_json_type(cx->doc, node) != KVR_JSON_ARRAY) {
        kvr_chat_fail(cx, KVR_CHAT_BAD_REQUEST, "messages is not a list");
        return NULL;
    }

    list = kvr_jinja_new_list(cx->r);

    for (m = kvr_json_first(cx->doc, node); m;
         m = kvr_json_next(cx->doc, node, m))
    {
        if (cx->status != KVR_CHAT_OK) {
            return NULL;
        }

        role = kvr_chat_find(cx->doc, m, "role");
        if (kvr_json_type(cx->doc, m) != KVR_JSON_OBJECT || role == 0
            || kvr_json_type(cx->doc, role) != KVR_JSON_STRING)
        {
            kvr_chat_fail(cx, KVR_CHAT_BAD_REQUEST, "message without a role");
            return NULL;
        }

        assistant = kvr_chat_is(cx->doc, role, "assistant");

        msg = kvr_jinja_new_dict(cx->r);
        kvr_jinja_dict_set(cx->r, msg, "role", 4, kvr_chat_string(cx, role));

        content = kvr_chat_find(cx->doc, m, "content");
        v = kvr_chat_content(cx, content);
        if (v == NULL) {
            return NULL;
        }
        kvr_jinja_dict_set(cx->r, msg, "content", 7, v);

        tc = kvr_chat_find(cx->doc, m, "tool_calls");
        if (assistant && tc && kvr_json_type(cx->doc, tc) != KVR_JSON_NULL) {
            if (kvr_json_type(cx->doc, tc) != KVR_JSON_ARRAY) {
                kvr_chat_fail(cx, KVR_CHAT_BAD_REQUEST, "tool_calls is not "
                              "a list");
                return NULL;
            }
            if (kvr_json_count(cx->doc, tc) > 0) {
                v = kvr_chat_tool_calls(cx, tc);
                if (v == NULL) {
                    return NULL;
                }
                kvr_jinja_dict_set(cx->r, msg, "tool_calls", 10, v);
            }
        }

        tcid = kvr_chat_find(cx->doc, m, "tool_call_id");
        if (kvr_chat_is(cx->doc, role, "tool") && tcid
            && kvr_json_type(cx->doc, tcid) == KVR_JSON_STRING)
        {
            kvr_jinja_dict_set(cx->r, msg, "tool_call_id", 12,
                               kvr_chat_string(cx, tcid));
        }

        name = kvr_chat_find(cx->doc, m, "name");
        if (name && kvr_json_type(cx->doc, name) == KVR_JSON_STRING) {
            kvr_jinja_dict_set(cx->r, msg, "name", 4,
                               kvr_chat_string(cx, name));
        }

        if (assistant) {
            reasoning = kvr_chat_find(cx->doc, m, "reasoning");
            if (reasoning == 0
                || kvr_json_type(cx->doc, reasoning) == KVR_JSON_NULL)
            {
                reasoning = kvr_chat_find(cx->doc, m, "reasoning_content");
            }
            if (reasoning
                && kvr_json_type(cx->doc, reasoning) == KVR_JSON_STRING)
            {
                v = kvr_chat_string(cx, reasoning);
                kvr_jinja_dict_set(cx->r, msg, "reasoning", 9, v);
                kvr_jinja_dict_set(cx->r, msg, "reasoning_content", 17, v);
            } else if (reasoning
                       && kvr_json_type(cx->doc, reasoning) != KVR_JSON_NULL)
            {
                kvr_chat_fail(cx, KVR_CHAT_BAD_REQUEST, "reasoning is not a "
                              "string");
                return NULL;
            }
        }

        kvr_jinja_list_push(cx->r, list, msg);
    }

    return list;
}


int
kvr_chat_render(const kvr_chat_config_t *cfg, const kvr_json_doc_t *doc,
    uint32_t root, char *out, size_t max_out, size_t *out_len, char *err,
    size_t errlen)
{
    int                  rc;
    void                *mark;
    uint32_t             node;
    kvr_jv_t            *v;
    kvr_chat_ctx_t       cx;
    kvr_jinja_render_t  *r;

    *out_len = 0;

    rc = kvr_chat_check(doc, root, err, errlen);
    if (rc != KVR_CHAT_OK) {
        return rc;
    }

    r = kvr_jinja_render_create(&cfg->limits);
    if (r == NULL) {
        snprintf(err, errlen, "out of memory");
        return KVR_JINJA_LIMIT;
    }

    cx.r = r;
    cx.doc = doc;
    cx.cfg = cfg;
    cx.status = KVR_CHAT_OK;
    cx.err = err;
    cx.errlen = errlen;
    cx.media = 0;

    kvr_chat_set_tokens(cfg, r);

    v = kvr_chat_messages(&cx, kvr_json_find(doc, root, "messages", 8));
    if (v) {
        kvr_jinja_set(r, "messages", v);
    }

    if (cx.status == KVR_CHAT_OK) {
        v = kvr_chat_tools(&cx, kvr_json_find(doc, root, "tools", 5));
        if (v) {
            kvr_jinja_set(r, "tools", v);
        }
    }

    kvr_jinja_set(r, "documents", kvr_jinja_new_none(r));

    node = kvr_json_find(doc, root, "add_generation_prompt", 21);
    if (node && kvr_json_type(doc, node) != KVR_JSON_TRUE
        && kvr_json_type(doc, node) != KVR_JSON_FALSE)
    {
        kvr_chat_fail(&cx, KVR_CHAT_BAD_REQUEST, "add_generation_prompt is "
                      "not a boolean");
    }
    kvr_jinja_set(r, "add_generation_prompt",
                  kvr_jinja_new_bool(r, node == 0
                                     || kvr_json_type(doc, node)
                                        == KVR_JSON_TRUE));

    node = kvr_json_find(doc, root, "chat_template_kwargs", 20);
    if (node && cx.status == KVR_CHAT_OK
        && kvr_json_type(doc, node) != KVR_JSON_NULL)
    {
        kvr_chat_kwargs(&cx, node);
    }

    if (cx.status != KVR_CHAT_OK) {
        kvr_jinja_render_destroy(r);
        return cx.status;
    }

    rc = kvr_jinja_render(cfg->tpl, r, out, max_out, out_len);
    if (rc != KVR_JINJA_OK) {
        snprintf(err, errlen, "%s", kvr_jinja_error(r));
    }

    kvr_jinja_render_destroy(r);

    if (rc == KVR_JINJA_OK && cx.media) {
        mark = memmem(out, *out_len, KVR_CHAT_MEDIA_MARK,
                      KVR_CHAT_MEDIA_MARK_LEN);

        if (mark == NULL) {
            /* the template dropped it: where the media goes is unknown */
            snprintf(err, errlen, "media content part not rendered");
            *out_len = 0;
            return KVR_JINJA_UNSUPPORTED;
        }

        *out_len = (char *) mark - out;
    }

    return rc;
}


/* the request fields vLLM would honour and kvroute cannot reproduce */

static int
kvr_chat_check(const kvr_json_doc_t *doc, uint32_t root, char *err,
    size_t errlen)
{
    uint32_t  node;

    if (kvr_json_type(doc, root) != KVR_JSON_OBJECT) {
        snprintf(err, errlen, "request body is not an object");
        return KVR_CHAT_BAD_REQUEST;
    }

    node = kvr_json_find(doc, root, "continue_final_message", 22);
    if (node && kvr_json_type(doc, node) == KVR_JSON_TRUE) {
        snprintf(err, errlen, "continue_final_message is not supported");
        return KVR_JINJA_UNSUPPORTED;
    }

    node = kvr_json_find(doc, root, "chat_template", 13);
    if (node && kvr_json_type(doc, node) != KVR_JSON_NULL) {
        snprintf(err, errlen, "a request chat_template is not supported");
        return KVR_JINJA_UNSUPPORTED;
    }

    node = kvr_json_find(doc, root, "documents", 9);
    if (node && kvr_json_type(doc, node) != KVR_JSON_NULL) {
        snprintf(err, errlen, "documents are not supported");
        return KVR_JINJA_UNSUPPORTED;
    }

    return KVR_CHAT_OK;
}


/* the tokenizer config's special tokens, as transformers passes them */

static void
kvr_chat_set_tokens(const kvr_chat_config_t *cfg, kvr_jinja_render_t *r)
{
    size_t     i;
    kvr_jv_t  *v;

    for (i = 0; i < cfg->n_tokens; i++) {
        kvr_jinja_set(r, cfg->names[i],
                      kvr_jinja_new_str(r, cfg->values[i],
                                        cfg->value_lens[i]));
    }

    if (cfg->n_extra) {
        v = kvr_jinja_new_list(r);
        for (i = 0; i < cfg->n_extra; i++) {
            kvr_jinja_list_push(r, v, kvr_jinja_new_str(r, cfg->extra[i],
                                                        cfg->extra_lens[i]));
        }
        kvr_jinja_set(r, "additional_special_tokens", v);
    }
}


/* chat_template_kwargs: each key a template variable, messages excepted */

static void
kvr_chat_kwargs(kvr_chat_ctx_t *cx, uint32_t node)
{
    size_t                 klen;
    uint32_t               k;
    char                   name[128];
    const char            *kname;
    kvr_jv_t              *v, *key;
    const kvr_json_doc_t  *doc;

    doc = cx->doc;

    if (kvr_json_type(doc, node) != KVR_JSON_OBJECT) {
        kvr_chat_fail(cx, KVR_CHAT_BAD_REQUEST, "chat_template_kwargs "
                      "is not an object");
    }

    for (k = kvr_json_first(doc, node); k && cx->status == KVR_CHAT_OK;
         k = kvr_json_next(doc, node, k))
    {
        key = kvr_chat_string(cx, k);
        kname = kvr_jinja_str_ptr(key, &klen);
        if (kname == NULL || klen == 0 || klen >= sizeof(name)
            || memchr(kname, '\0', klen))
        {
            kvr_chat_fail(cx, KVR_JINJA_UNSUPPORTED, "chat_template_"
                          "kwargs key not supported");
            break;
        }
        memcpy(name, kname, klen);
        name[klen] = '\0';
        if (strcmp(name, "messages") == 0) {
            kvr_chat_fail(cx, KVR_CHAT_BAD_REQUEST, "chat_template_"
                          "kwargs may not set messages");
            break;
        }
        v = kvr_chat_value(cx, doc, k + 1);
        if (v) {
            kvr_jinja_set(cx->r, name, v);
        }
    }
}
