/*
 * Copyright (C) kvroute developers
 *
 * tokenizer.json loading and the encode pipeline of HF tokenizers 0.23.2
 * (docs/tokenizer.md 3): added tokens on the raw text, then per gap the
 * normalizer, the normalized added tokens, the pre-tokenizer steps, BPE
 * (byte-level or SentencePiece-style); then the post-processor's special
 * tokens.  Anything else is refused at load, with the component named.
 * Long gaps of Llama-2 / Gemma 3 style tokenizers go through raw chunks
 * (kvr_tok_chunk.c).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "kvr_tokenizer_int.h"
#include "kvr_tok_bytelevel.h"
#include "kvr_tok_unicode.h"


#define KVR_TOK_MAX_FILE   (256 * 1024 * 1024)


typedef struct {
    kvr_tokenizer_t   *tk;
    kvr_ids_t         *out;
    const uint8_t     *held;           /* a piece whose slot is on its way */
    size_t             held_len;
    uint64_t           held_ahead;
} kvr_tok_encode_ctx_t;


#define kvr_tok_fail(...)                                                  \
    do {                                                                   \
        snprintf(err, errlen, __VA_ARGS__);                                \
        goto failed;                                                       \
    } while (0)


const char *
kvr_tokenizer_status_name(int status)
{
    switch (status) {
    case KVR_TOK_OK:
        return "ok";
    case KVR_TOK_BAD_UTF8:
        return "bad-utf8";
    case KVR_TOK_TOO_LONG:
        return "too-long";
    case KVR_TOK_TOO_MANY:
        return "too-many-tokens";
    case KVR_TOK_NO_MEMORY:
        return "no-memory";
    case KVR_TOK_REGEX:
        return "regex-limit";
    case KVR_TOK_NORMALIZE:
        return "normalize-failed";
    case KVR_TOK_CACHE_DIFFERS:
        return "cache-differs";
    default:
        return "unknown";
    }
}


static int
kvr_tok_is_type(json_t *obj, const char *type)
{
    const char  *t;

    t = json_string_value(json_object_get(obj, "type"));

    return t != NULL && strcmp(t, type) == 0;
}


/* true when key is absent, null or false */
static int
kvr_tok_false(json_t *obj, const char *key)
{
    json_t  *v;

    v = json_object_get(obj, key);

    return v == NULL || json_is_null(v) || json_is_false(v);
}


/* true when key is absent, null or "" */
static int
kvr_tok_empty(json_t *obj, const char *key)
{
    json_t  *v;

    v = json_object_get(obj, key);

    return v == NULL || json_is_null(v)
           || (json_is_string(v) && json_string_length(v) == 0);
}


/* an id that fits the tables (below the "no id" markers) */
static int
kvr_tok_id_ok(json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0
           && json_integer_value(v) < 0xfffffff0;
}


/* HF token_to_id: added tokens first, then the model vocab (by string) */
static int
kvr_tok_token_id(json_t *root, const char *content, uint32_t *id)
{
    size_t   i;
    json_t  *vocab, *tok, *v;

    json_array_foreach(json_object_get(root, "added_tokens"), i, tok) {
        v = json_object_get(tok, "content");

        if (json_is_string(v) && strcmp(json_string_value(v), content) == 0
            && kvr_tok_id_ok(json_object_get(tok, "id")))
        {
            *id = (uint32_t) json_integer_value(json_object_get(tok, "id"));
            return 0;
        }
    }

    vocab = json_object_get(json_object_get(root, "model"), "vocab");
    v = json_object_get(vocab, content);

    if (kvr_tok_id_ok(v)) {
        *id = (uint32_t) json_integer_value(v);
        return 0;
    }

    return -1;
}


static int
kvr_tok_load_vocab(kvr_tokenizer_t *tk, json_t *model, char *err,
    size_t errlen)
{
    int          rc;
    long         n;
    size_t       len;
    json_t      *vocab, *value;
    uint8_t     *key;
    json_int_t   id;
    const char  *str;

    vocab = json_object_get(model, "vocab");
    key = NULL;

    json_object_foreach(vocab, str, value) {
        id = json_integer_value(value);

        if (!kvr_tok_id_ok(value)) {
            kvr_tok_fail("model.vocab: bad id for \"%s\"", str);
        }

        len = strlen(str);
        free(key);
        key = malloc(len + 1);
        if (key == NULL) {
            kvr_tok_fail("out of memory");
        }

        if (tk->byte_level) {
            /* keys outside the byte-level alphabet are never produced */
            n = kvr_tok_bytelevel_decode(str, len, key);
            if (n < 0) {
                continue;
            }

        } else {
            memcpy(key, str, len);
            n = (long) len;
        }

        rc = kvr_tok_bpe_add_token(tk->bpe, key, (size_t) n, (uint32_t) id);
        if (rc < 0) {
            kvr_tok_fail("model.vocab: cannot store \"%s\"", str);
        }
    }

    free(key);

    return 0;

failed:

    free(key);

    return -1;
}


static int
kvr_tok_merge_id(kvr_tokenizer_t *tk, const char *s, size_t len,
    uint8_t *buf, uint32_t *id)
{
    long  n;

    if (!tk->byte_level) {
        memcpy(buf, s, len);
        n = (long) len;

    } else {
        n = kvr_tok_bytelevel_decode(s, len, buf);
        if (n < 0) {
            return 1;
        }
    }

    return kvr_tok_bpe_lookup(tk->bpe, buf, (size_t) n, id) == 0 ? 0 : -1;
}


/* the last char of a and the first of b meet in this merge */
static int
kvr_tok_add_junction(kvr_tokenizer_t *tk, const char *a, size_t len_a,
    const char *b, size_t len_b)
{
    size_t          i;
    uint32_t        last, first;
    const uint8_t  *pa;

    pa = (const uint8_t *) a;
    i = len_a;

    while (i > 0 && (pa[i - 1] & 0xc0) == 0x80) {
        i--;
    }

    if (i == 0 || kvr_tok_utf8_decode(pa + i - 1, len_a - i + 1, &last) == 0
        || kvr_tok_utf8_decode((const uint8_t *) b, len_b, &first) == 0)
    {
        /* not valid UTF-8: the vocab lookups fail first */
        return 0;
    }

    return kvr_tok_bpe_add_junction(tk->bpe, last, first);
}


static int
kvr_tok_load_merges(kvr_tokenizer_t *tk, json_t *model, char *err,
    size_t errlen)
{
    int          rc_a, rc_b;
    long         n;
    size_t       i, len_a, len_b;
    json_t      *merges, *merge;
    uint8_t     *buf;
    uint32_t     id_a, id_b, id_new;
    const char  *a, *b, *sp;

    merges = json_object_get(model, "merges");
    buf = NULL;

    json_array_foreach(merges, i, merge) {

        if (json_is_string(merge)) {
            /* legacy form "a b": exactly one space */
            a = json_string_value(merge);

            if (strncmp(a, "#version", 8) == 0) {
                continue;
            }

            sp = strchr(a, ' ');
            if (sp == NULL || strchr(sp + 1, ' ') != NULL) {
                kvr_tok_fail("model.merges[%zu]: not \"a b\"", i);
            }

            len_a = (size_t) (sp - a);
            b = sp + 1;
            len_b = strlen(b);

        } else if (json_is_array(merge) && json_array_size(merge) == 2
                   && json_is_string(json_array_get(merge, 0))
                   && json_is_string(json_array_get(merge, 1)))
        {
            a = json_string_value(json_array_get(merge, 0));
            b = json_string_value(json_array_get(merge, 1));
            len_a = json_string_length(json_array_get(merge, 0));
            len_b = json_string_length(json_array_get(merge, 1));

        } else {
            kvr_tok_fail("model.merges[%zu]: neither \"a b\" nor [a, b]", i);
        }

        free(buf);
        buf = malloc(len_a + len_b + 1);
        if (buf == NULL) {
            kvr_tok_fail("out of memory");
        }

        rc_a = kvr_tok_merge_id(tk, a, len_a, buf, &id_a);
        rc_b = kvr_tok_merge_id(tk, b, len_b, buf, &id_b);

        if (rc_a < 0 || rc_b < 0) {
            kvr_tok_fail("model.merges[%zu]: token not in the vocab", i);
        }

        if (rc_a > 0 || rc_b > 0) {
            /* outside the byte-level alphabet: unreachable */
            continue;
        }

        if (tk->byte_level) {
            n = kvr_tok_bytelevel_decode(a, len_a, buf);
            n += kvr_tok_bytelevel_decode(b, len_b, buf + n);

        } else {
            memcpy(buf, a, len_a);
            memcpy(buf + len_a, b, len_b);
            n = (long) (len_a + len_b);

            if (kvr_tok_add_junction(tk, a, len_a, b, len_b) != 0) {
                kvr_tok_fail("model.merges: out of memory");
            }
        }

        if (kvr_tok_bpe_lookup(tk->bpe, buf, (size_t) n, &id_new) != 0) {
            kvr_tok_fail("model.merges[%zu]: merged token not in the vocab",
                         i);
        }

        if (kvr_tok_bpe_add_merge(tk->bpe, id_a, id_b, (uint32_t) i, id_new)
            != 0)
        {
            kvr_tok_fail("model.merges: out of memory");
        }
    }

    free(buf);

    return 0;

failed:

    free(buf);

    return -1;
}


static int
kvr_tok_load_model(kvr_tokenizer_t *tk, json_t *root, char *err,
    size_t errlen)
{
    int          b, missing;
    json_t      *model, *vocab, *merges, *unk;
    uint8_t      byte;
    uint32_t     id, unk_id;
    const char  *type, *name;

    model = json_object_get(root, "model");
    type = json_string_value(json_object_get(model, "type"));

    if (!json_is_object(model) || type == NULL || strcmp(type, "BPE") != 0) {
        kvr_tok_fail("model %.20s is not supported (only BPE)",
                     type ? type : "without a type");
    }

    if (tk->byte_level && !kvr_tok_false(model, "byte_fallback")) {
        kvr_tok_fail("model: byte_fallback with a ByteLevel pre_tokenizer "
                     "is not supported");
    }

    if (!json_is_null(json_object_get(model, "dropout"))
        && json_object_get(model, "dropout") != NULL)
    {
        kvr_tok_fail("model: dropout is not supported");
    }

    if (!kvr_tok_empty(model, "continuing_subword_prefix")
        || !kvr_tok_empty(model, "end_of_word_suffix"))
    {
        kvr_tok_fail("model: continuing_subword_prefix / end_of_word_suffix "
                     "are not supported");
    }

    vocab = json_object_get(model, "vocab");
    merges = json_object_get(model, "merges");

    if (!json_is_object(vocab) || !json_is_array(merges)) {
        kvr_tok_fail("model: vocab or merges missing");
    }

    tk->bpe = kvr_tok_bpe_create(json_object_size(vocab),
                                 json_array_size(merges));
    if (tk->bpe == NULL) {
        kvr_tok_fail("out of memory");
    }

    if (!tk->byte_level) {
        /* SentencePiece-style: chars, byte fallback, unk */
        unk_id = KVR_TOK_BPE_NO_UNK;

        if (!kvr_tok_empty(model, "unk_token")) {
            name = json_string_value(json_object_get(model, "unk_token"));
            unk = json_object_get(vocab, name ? name : "");

            if (!kvr_tok_id_ok(unk)) {
                kvr_tok_fail("model: unk_token not in the vocab");
            }

            unk_id = (uint32_t) json_integer_value(unk);
        }

        kvr_tok_bpe_set_chars(tk->bpe,
                              !kvr_tok_false(model, "byte_fallback"), unk_id,
                              !kvr_tok_false(model, "fuse_unk"));
    }

    if (kvr_tok_load_vocab(tk, model, err, errlen) != 0
        || kvr_tok_load_merges(tk, model, err, errlen) != 0)
    {
        return -1;
    }

    missing = 0;

    for (b = 0; tk->byte_level && b < 256; b++) {
        byte = (uint8_t) b;

        if (kvr_tok_bpe_lookup(tk->bpe, &byte, 1, &id) != 0) {
            missing++;
        }
    }

    /* HF drops a byte without a token, but an unk token would replace it */
    if (missing && !kvr_tok_empty(model, "unk_token")) {
        kvr_tok_fail("model: %d byte tokens missing and unk_token set",
                     missing);
    }

    if (kvr_tok_bpe_finish(tk->bpe, !kvr_tok_false(model, "ignore_merges"))
        != 0)
    {
        kvr_tok_fail("out of memory");
    }

    return 0;

failed:

    return -1;
}


static int
kvr_tok_load_added(kvr_tokenizer_t *tk, json_t *root, char *err,
    size_t errlen)
{
    int          rc, normalized;
    size_t       i, n_vocab;
    json_t      *tokens, *tok, *vocab, *v;
    unsigned     flags;
    uint32_t     id, want;
    const char  *content;

    tokens = json_object_get(root, "added_tokens");
    vocab = json_object_get(json_object_get(root, "model"), "vocab");
    n_vocab = json_object_size(vocab);

    tk->added = kvr_tok_added_create();
    tk->added_norm = kvr_tok_added_create();

    if (tk->added == NULL || tk->added_norm == NULL) {
        kvr_tok_fail("out of memory");
    }

    if (tokens == NULL || json_is_null(tokens)) {
        return 0;
    }

    if (!json_is_array(tokens)) {
        kvr_tok_fail("added_tokens: not an array");
    }

    /* HF add_tokens assigns the ids; check they are the file's ids */
    want = (uint32_t) n_vocab;

    json_array_foreach(tokens, i, tok) {
        content = json_string_value(json_object_get(tok, "content"));

        if (content == NULL || !kvr_tok_id_ok(json_object_get(tok, "id"))) {
            kvr_tok_fail("added_tokens[%zu]: content or id missing", i);
        }

        if (content[0] == '\0') {
            continue;
        }

        if (!kvr_tok_false(tok, "single_word")) {
            kvr_tok_fail("added_tokens[%zu]: single_word is not supported",
                         i);
        }

        normalized = !kvr_tok_false(tok, "normalized");

        if (normalized && !kvr_tok_norm_identity(tk->norm)) {
            /* HF would match the normalized content on normalized text */
            kvr_tok_fail("added_tokens[%zu]: normalized=true with a "
                         "normalizer is not supported", i);
        }

        id = (uint32_t) json_integer_value(json_object_get(tok, "id"));
        v = json_object_get(vocab, content);

        if (json_is_integer(v)) {
            if ((uint32_t) json_integer_value(v) != id) {
                kvr_tok_fail("added_tokens[%zu]: id %u differs from the "
                             "vocab's", i, id);
            }

        } else {
            if (id != want) {
                kvr_tok_fail("added_tokens[%zu]: id %u, HF would assign %u",
                             i, id, want);
            }

            want = id + 1;
        }

        flags = 0;

        if (json_is_true(json_object_get(tok, "special"))) {
            flags |= KVR_TOK_ADDED_SPECIAL;
        }

        if (!kvr_tok_false(tok, "lstrip")) {
            flags |= KVR_TOK_ADDED_LSTRIP;
        }

        if (!kvr_tok_false(tok, "rstrip")) {
            flags |= KVR_TOK_ADDED_RSTRIP;
        }

        rc = kvr_tok_added_add(normalized ? tk->added_norm : tk->added,
                               (const uint8_t *) content, strlen(content), id,
                               flags);
        if (rc < 0) {
            kvr_tok_fail("out of memory");
        }
    }

    return 0;

failed:

    return -1;
}


static int
kvr_tok_load_pretok(kvr_tokenizer_t *tk, json_t *root, char *err,
    size_t errlen)
{
    tk->presplit = kvr_tok_presplit_load(json_object_get(root,
                                                         "pre_tokenizer"),
                                         &tk->byte_level, err, errlen);
    if (tk->presplit == NULL) {
        return -1;
    }

    tk->first_sensitive = kvr_tok_presplit_first_sensitive(tk->presplit);
    tk->pieces_in_place = kvr_tok_presplit_in_place(tk->presplit);

    /* a normalizer would move the offsets Metaspace "first" looks at */
    if (tk->first_sensitive && !kvr_tok_norm_identity(tk->norm)) {
        kvr_tok_fail("pre_tokenizer Metaspace with prepend_scheme first "
                     "after a normalizer is not supported");
    }

    return 0;

failed:

    return -1;
}


static int
kvr_tok_load_template(kvr_tokenizer_t *tk, json_t *proc, char *err,
    size_t errlen)
{
    size_t       i, j, n_seq;
    json_t      *single, *item, *st, *ids, *id;
    const char  *name;

    single = json_object_get(proc, "single");
    n_seq = 0;

    if (!json_is_array(single)) {
        kvr_tok_fail("post_processor: TemplateProcessing without single");
    }

    json_array_foreach(single, i, item) {

        if (json_object_get(item, "Sequence") != NULL) {
            n_seq++;
            continue;
        }

        name = json_string_value(json_object_get(
                   json_object_get(item, "SpecialToken"), "id"));
        st = json_object_get(json_object_get(proc, "special_tokens"), name
                             ? name : "");
        ids = json_object_get(st, "ids");

        if (name == NULL || !json_is_array(ids)) {
            kvr_tok_fail("post_processor: unknown template item");
        }

        json_array_foreach(ids, j, id) {
            if (!kvr_tok_id_ok(id)) {
                kvr_tok_fail("post_processor: bad special token id");
            }

            if (n_seq == 0 && tk->n_prefix < KVR_TOK_MAX_AFFIX) {
                tk->prefix[tk->n_prefix++] = (uint32_t) json_integer_value(id);

            } else if (n_seq == 1 && tk->n_suffix < KVR_TOK_MAX_AFFIX) {
                tk->suffix[tk->n_suffix++] = (uint32_t) json_integer_value(id);

            } else {
                kvr_tok_fail("post_processor: template too long");
            }
        }
    }

    if (n_seq != 1) {
        kvr_tok_fail("post_processor: template must hold $A once");
    }

    return 0;

failed:

    return -1;
}


static int
kvr_tok_load_post(kvr_tokenizer_t *tk, json_t *root, char *err,
    size_t errlen)
{
    size_t   i, n;
    json_t  *post, *list, *proc;

    post = json_object_get(root, "post_processor");

    if (post == NULL || json_is_null(post)) {
        return 0;
    }

    if (kvr_tok_is_type(post, "Sequence")) {
        list = json_object_get(post, "processors");
        n = json_array_size(list);

    } else {
        list = NULL;
        n = 1;
    }

    for (i = 0; i < n; i++) {
        proc = list ? json_array_get(list, i) : post;

        if (kvr_tok_is_type(proc, "ByteLevel")) {
            /* offsets only */
            continue;
        }

        if (kvr_tok_is_type(proc, "TemplateProcessing")
            && tk->n_prefix + tk->n_suffix == 0)
        {
            if (kvr_tok_load_template(tk, proc, err, errlen) != 0) {
                return -1;
            }

            continue;
        }

        kvr_tok_fail("post_processor: only ByteLevel and one "
                     "TemplateProcessing are supported");
    }

    return 0;

failed:

    return -1;
}


/* reads the whole file: json_loadb is much faster than json_load_file */
static json_t *
kvr_tok_load_json(const char *path, size_t flags, char *err, size_t errlen)
{
    long           size;
    char          *data;
    FILE          *f;
    json_t        *root;
    json_error_t   jerr;

    f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open", path);
        return NULL;
    }

    data = NULL;

    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0
        || size > KVR_TOK_MAX_FILE || fseek(f, 0, SEEK_SET) != 0
        || (data = malloc((size_t) size + 1)) == NULL
        || fread(data, 1, (size_t) size, f) != (size_t) size)
    {
        snprintf(err, errlen, "%s: cannot read (or over %d MB)", path,
                 KVR_TOK_MAX_FILE >> 20);
        free(data);
        fclose(f);
        return NULL;
    }

    fclose(f);

    root = json_loadb(data, (size_t) size, flags, &jerr);
    free(data);

    if (root == NULL) {
        snprintf(err, errlen, "%s:%d: %s", path, jerr.line, jerr.text);
    }

    return root;
}


/* a special token of tokenizer_config: a string or {"content": ...} */
static const char *
kvr_tok_config_token(json_t *config, const char *key)
{
    json_t  *v;

    v = json_object_get(config, key);

    if (json_is_object(v)) {
        v = json_object_get(v, "content");
    }

    return json_string_value(v);
}


static int
kvr_tok_load_config(kvr_tokenizer_t *tk, json_t *root, const char *path,
    char *err, size_t errlen)
{
    json_t      *config, *add_bos, *add_eos;
    uint32_t     id;
    const char  *tok;

    /* model_max_length can be 1e30: read numbers as reals */
    config = kvr_tok_load_json(path, JSON_DECODE_INT_AS_REAL, err, errlen);
    if (config == NULL) {
        return -1;
    }

    if (!json_is_object(config)) {
        kvr_tok_fail("%s: not an object", path);
    }

    tk->split_special = json_is_true(json_object_get(config,
                                                     "split_special_tokens"));

    add_bos = json_object_get(config, "add_bos_token");
    add_eos = json_object_get(config, "add_eos_token");

    /* explicit flags replace the post-processor (transformers, doc 9) */
    if (json_is_boolean(add_bos) || json_is_boolean(add_eos)) {
        tk->n_prefix = 0;
        tk->n_suffix = 0;

        if (json_is_true(add_bos)) {
            tok = kvr_tok_config_token(config, "bos_token");

            if (tok == NULL || kvr_tok_token_id(root, tok, &id) != 0) {
                kvr_tok_fail("%s: add_bos_token without a known bos_token",
                             path);
            }

            tk->prefix[tk->n_prefix++] = id;
        }

        if (json_is_true(add_eos)) {
            tok = kvr_tok_config_token(config, "eos_token");

            if (tok == NULL || kvr_tok_token_id(root, tok, &id) != 0) {
                kvr_tok_fail("%s: add_eos_token without a known eos_token",
                             path);
            }

            tk->suffix[tk->n_suffix++] = id;
        }
    }

    json_decref(config);

    return 0;

failed:

    json_decref(config);

    return -1;
}


kvr_tokenizer_t *
kvr_tokenizer_load(const char *json_path, const char *config_path,
    char *err, size_t errlen)
{
    json_t           *root;
    kvr_tokenizer_t  *tk;

    root = NULL;

    tk = calloc(1, sizeof(kvr_tokenizer_t));
    if (tk == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    root = kvr_tok_load_json(json_path, 0, err, errlen);
    if (root == NULL) {
        goto failed;
    }

    if (!json_is_object(root)) {
        kvr_tok_fail("%s: not an object", json_path);
    }

    if (!kvr_tok_false(root, "truncation")
        || !kvr_tok_false(root, "padding"))
    {
        kvr_tok_fail("truncation and padding must be null");
    }

    tk->norm = kvr_tok_norm_load(json_object_get(root, "normalizer"), err,
                                 errlen);
    if (tk->norm == NULL) {
        goto failed;
    }

    /* the decoder only maps ids back to text: any is fine */

    if (kvr_tok_load_pretok(tk, root, err, errlen) != 0
        || kvr_tok_load_model(tk, root, err, errlen) != 0
        || kvr_tok_load_added(tk, root, err, errlen) != 0
        || kvr_tok_load_post(tk, root, err, errlen) != 0)
    {
        goto failed;
    }

    if (config_path != NULL
        && kvr_tok_load_config(tk, root, config_path, err, errlen) != 0)
    {
        goto failed;
    }

    json_decref(root);

    tk->raw_chunks = kvr_tok_norm_bytewise(tk->norm)
                     && kvr_tok_presplit_whole(tk->presplit, tk->norm)
                     && kvr_tok_bpe_cuts_words(tk->bpe);

    if (kvr_tokenizer_set_segment_cache(tk, KVR_TOK_SEGMENT_MIN,
                                        KVR_TOK_SEGMENT_CACHE)
        != 0)
    {
        snprintf(err, errlen, "out of memory");
        kvr_tokenizer_free(tk);
        return NULL;
    }

    return tk;

failed:

    json_decref(root);
    kvr_tokenizer_free(tk);

    return NULL;
}


void
kvr_tokenizer_set_max_input(kvr_tokenizer_t *tk, size_t max_input)
{
    tk->max_input = max_input;
}


void
kvr_tokenizer_free(kvr_tokenizer_t *tk)
{
    if (tk == NULL) {
        return;
    }

    kvr_tok_bpe_free(tk->bpe);
    kvr_tok_norm_free(tk->norm);
    kvr_tok_presplit_free(tk->presplit);
    kvr_tok_added_free(tk->added);
    kvr_tok_added_free(tk->added_norm);
    kvr_tok_cache_free(tk->cache);
    kvr_tok_chunks_free(&tk->chunks);
    kvr_tok_norm_buf_free(&tk->normalized);
    kvr_ids_free(&tk->check);
    free(tk);
}


int
kvr_tokenizer_set_segment_cache(kvr_tokenizer_t *tk, size_t min_len,
    size_t max_bytes)
{
    kvr_tok_cache_free(tk->cache);
    tk->cache = NULL;
    tk->cache_min = min_len;

    kvr_tok_chunks_reset(&tk->chunks);

    if (max_bytes == 0) {
        return 0;
    }

    tk->cache = kvr_tok_cache_create(max_bytes);

    return tk->cache != NULL ? 0 : -1;
}


void
kvr_tokenizer_set_cache_check(kvr_tokenizer_t *tk, int on)
{
    tk->cache_check = on;
}


kvr_tok_cache_t *
kvr_tokenizer_segment_cache(kvr_tokenizer_t *tk)
{
    return tk->cache;
}


void
kvr_tokenizer_cache_stats(const kvr_tokenizer_t *tk,
    kvr_tokenizer_cache_stats_t *st)
{
    if (tk->cache == NULL) {
        memset(st, 0, sizeof(kvr_tokenizer_cache_stats_t));
        return;
    }

    kvr_tok_cache_stats(tk->cache, st);
}


static int
kvr_tok_piece(void *data, const uint8_t *piece, size_t len)
{
    kvr_tok_encode_ctx_t  *ctx;

    ctx = data;

    return kvr_tok_bpe_encode(ctx->tk->bpe, piece, len, ctx->out);
}


/*
 * A piece is held while the next one is found, its word cache slot
 * fetched meanwhile (pieces that stay in the segment's text only)
 */
static int
kvr_tok_piece_ahead(void *data, const uint8_t *piece, size_t len)
{
    int                    rc;
    uint64_t               ahead;
    kvr_tok_encode_ctx_t  *ctx;

    ctx = data;
    ahead = kvr_tok_bpe_ahead(ctx->tk->bpe, piece, len);

    if (ctx->held != NULL) {
        rc = kvr_tok_bpe_encode_ahead(ctx->tk->bpe, ctx->held, ctx->held_len,
                                      ctx->held_ahead, ctx->out);
        if (rc != 0) {
            return rc;
        }
    }

    ctx->held = piece;
    ctx->held_len = len;
    ctx->held_ahead = ahead;

    return 0;
}


/* text between added tokens of both kinds: normalize, split, BPE */
int
kvr_tok_encode_text(kvr_tokenizer_t *tk, const uint8_t *s, size_t len,
    int at_start, kvr_ids_t *out)
{
    int                    rc;
    kvr_tok_encode_ctx_t   ctx;

    if (len == 0) {
        return KVR_TOK_OK;
    }

    /* the normalized text lives in tk->normalized until the next gap */
    if (kvr_tok_norm_apply(tk->norm, s, len, &tk->normalized, &s, &len)
        != 0)
    {
        return KVR_TOK_NORMALIZE;
    }

    ctx.tk = tk;
    ctx.out = out;
    ctx.held = NULL;

    if (!tk->pieces_in_place) {
        return kvr_tok_presplit_run(tk->presplit, s, len, at_start,
                                    kvr_tok_piece, &ctx);
    }

    rc = kvr_tok_presplit_run(tk->presplit, s, len, at_start,
                              kvr_tok_piece_ahead, &ctx);

    if (rc != 0 || ctx.held == NULL) {
        return rc;
    }

    return kvr_tok_bpe_encode_ahead(tk->bpe, ctx.held, ctx.held_len,
                                    ctx.held_ahead, out);
}


static int kvr_tok_encode_added(kvr_tokenizer_t *tk,
    const kvr_tok_added_t *added, const uint8_t *s, size_t len,
    int at_start, kvr_ids_t *out);


/*
 * One gap between added tokens (normalized=false): the normalized=true
 * ones are matched inside it (HF's second pass; the normalizer is then the
 * identity, so the raw gap is the normalized one).
 */
static int
kvr_tok_encode_gap(kvr_tokenizer_t *tk, const uint8_t *s, size_t len,
    int at_start, kvr_ids_t *out)
{
    return kvr_tok_encode_added(tk, tk->added_norm, s, len, at_start, out);
}


/*
 * A hit of s in cache appended to out (in check mode s is encoded again
 * by encode and compared): 1, 0 on a miss, or a negative KVR_TOK_* status
 */
int
kvr_tok_cache_answer(kvr_tokenizer_t *tk, kvr_tok_cache_t *cache,
    kvr_tok_encode_pt encode, const uint8_t *s, size_t len, uint64_t hash,
    int at_start, kvr_ids_t *out)
{
    int              rc;
    size_t           n_ids;
    const uint32_t  *ids;

    ids = kvr_tok_cache_get(cache, s, len, hash, &n_ids);

    if (ids == NULL) {
        return 0;
    }

    if (tk->cache_check) {
        tk->check.n = 0;
        tk->check.max = n_ids + 1;

        rc = encode(tk, s, len, at_start, &tk->check);

        if (rc != KVR_TOK_OK || tk->check.n != n_ids
            || (n_ids != 0 && memcmp(tk->check.ids, ids,
                                     n_ids * sizeof(uint32_t)) != 0))
        {
            return KVR_TOK_CACHE_DIFFERS;
        }
    }

    rc = kvr_ids_append(out, ids, n_ids);

    return rc == KVR_TOK_OK ? 1 : rc;
}


/*
 * s through cache, under hash: a hit is copied, a miss encoded and stored
 * (*missed set, when not NULL)
 */
int
kvr_tok_encode_hashed(kvr_tokenizer_t *tk, kvr_tok_cache_t *cache,
    kvr_tok_encode_pt encode, const uint8_t *s, size_t len, uint64_t hash,
    int at_start, int *missed, kvr_ids_t *out)
{
    int     rc;
    size_t  first;

    rc = kvr_tok_cache_answer(tk, cache, encode, s, len, hash, at_start, out);
    if (rc != 0) {
        return rc > 0 ? KVR_TOK_OK : rc;
    }

    if (missed != NULL) {
        *missed = 1;
    }

    first = out->n;

    rc = encode(tk, s, len, at_start, out);
    if (rc != KVR_TOK_OK) {
        return rc;
    }

    /*
     * not cached when out of memory: the ids in out are right anyway;
     * out->ids is still NULL when nothing was pushed yet
     */
    (void) kvr_tok_cache_put(cache, s, len, hash,
                             out->n > first ? out->ids + first : NULL,
                             out->n - first);

    return KVR_TOK_OK;
}


/* s through cache, keyed by its bytes */
static int
kvr_tok_encode_cached(kvr_tokenizer_t *tk, kvr_tok_cache_t *cache,
    kvr_tok_encode_pt encode, const uint8_t *s, size_t len, int at_start,
    kvr_ids_t *out)
{
    return kvr_tok_encode_hashed(tk, cache, encode, s, len,
                                 kvr_tok_cache_hash(cache, s, len), at_start,
                                 NULL, out);
}


/*
 * A gap through the segment cache: text between added tokens of both
 * kinds (normalized=true ones too, e.g. DeepSeek-V3's <｜User｜>, so that
 * a system prompt before them is a gap of its own).  Its ids depend on its
 * bytes only (NFC, the split and BPE all run per gap), so the raw bytes
 * are the key.
 */
static int
kvr_tok_encode_segment(kvr_tokenizer_t *tk, const uint8_t *s, size_t len,
    int at_start, kvr_ids_t *out)
{
    /* Metaspace "first" treats the input's first gap differently */
    if (tk->cache == NULL || len < tk->cache_min || len == 0
        || (at_start && tk->first_sensitive))
    {
        return kvr_tok_encode_text(tk, s, len, at_start, out);
    }

    if (tk->raw_chunks && len >= 2 * KVR_TOK_CHUNK
        && kvr_tok_chunks_ready(&tk->chunks))
    {
        return kvr_tok_chunks_encode(tk, s, len, at_start, out);
    }

    return kvr_tok_encode_cached(tk, tk->cache, kvr_tok_encode_text, s, len,
                                 at_start, out);
}


static int
kvr_tok_is_space(const uint8_t *s, size_t len, size_t *n)
{
    uint32_t  cp;

    *n = kvr_tok_utf8_decode(s, len, &cp);

    return *n != 0
           && kvr_tok_in_ranges(kvr_tok_white_space, kvr_tok_white_space_n,
                                cp);
}


/* extends an added-token match over white space (lstrip / rstrip) */
static void
kvr_tok_strip(const uint8_t *s, size_t len, size_t floor,
    kvr_tok_added_match_t *m)
{
    size_t  n, p;

    if (m->flags & KVR_TOK_ADDED_LSTRIP) {
        while (m->start > floor) {
            p = m->start - 1;

            while (p > floor && (s[p] & 0xc0) == 0x80) {
                p--;
            }

            if (!kvr_tok_is_space(s + p, len - p, &n)) {
                break;
            }

            m->start = p;
        }
    }

    if (m->flags & KVR_TOK_ADDED_RSTRIP) {
        while (m->end < len && kvr_tok_is_space(s + m->end, len - m->end, &n))
        {
            m->end += n;
        }
    }
}


/*
 * Added tokens of one kind (normalized=false on the input, then
 * normalized=true on each gap): the text between matches goes on to the
 * next stage, the segment cache or the text itself.
 */
static int
kvr_tok_encode_added(kvr_tokenizer_t *tk, const kvr_tok_added_t *added,
    const uint8_t *s, size_t len, int at_start, kvr_ids_t *out)
{
    int                     rc, first;
    size_t                  gap, from;
    kvr_tok_added_match_t   m;

    first = (added == tk->added);
    gap = 0;
    from = 0;

    while (kvr_tok_added_find(added, s, len, from, &m) == 0) {

        if (tk->split_special && (m.flags & KVR_TOK_ADDED_SPECIAL)) {
            /* encoded as text; the matcher goes on after it */
            from = m.end;
            continue;
        }

        kvr_tok_strip(s, len, gap, &m);

        rc = first ? kvr_tok_encode_gap(tk, s + gap, m.start - gap,
                                        at_start && gap == 0, out)
                   : kvr_tok_encode_segment(tk, s + gap, m.start - gap,
                                            at_start && gap == 0, out);
        if (rc != KVR_TOK_OK) {
            return rc;
        }

        if (kvr_ids_push(out, m.id) != 0) {
            return out->n == out->max ? KVR_TOK_TOO_MANY : KVR_TOK_NO_MEMORY;
        }

        gap = m.end;
        from = m.end;
    }

    return first ? kvr_tok_encode_gap(tk, s + gap, len - gap,
                                      at_start && gap == 0, out)
                 : kvr_tok_encode_segment(tk, s + gap, len - gap,
                                          at_start && gap == 0, out);
}


int
kvr_tokenizer_encode(kvr_tokenizer_t *tk, const char *text, size_t len,
    int add_special_tokens, kvr_ids_t *out)
{
    int              rc;
    size_t           i;
    const uint8_t   *s;

    s = (const uint8_t *) text;

    if (tk->max_input && len > tk->max_input) {
        return KVR_TOK_TOO_LONG;
    }

    if (!kvr_tok_utf8_valid(s, len)) {
        return KVR_TOK_BAD_UTF8;
    }

    if (add_special_tokens) {
        for (i = 0; i < tk->n_prefix; i++) {
            if (kvr_ids_push(out, tk->prefix[i]) != 0) {
                return KVR_TOK_TOO_MANY;
            }
        }
    }

    rc = kvr_tok_encode_added(tk, tk->added, s, len, 1, out);
    if (rc != KVR_TOK_OK) {
        return rc;
    }

    if (add_special_tokens) {
        for (i = 0; i < tk->n_suffix; i++) {
            if (kvr_ids_push(out, tk->suffix[i]) != 0) {
                return KVR_TOK_TOO_MANY;
            }
        }
    }

    return KVR_TOK_OK;
}
