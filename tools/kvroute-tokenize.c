/*
 * Copyright (C) kvroute developers
 *
 * kvroute-tokenize: the token ids (and block keys) kvroute computes for a
 * request, with the same code the module runs; for the oracle tests and
 * for operators asking "why didn't this request hit?".
 *
 *   kvroute-tokenize --tokenizer tokenizer.json
 *       [--chat-template tokenizer_config.json] [--config tokenizer_config.json]
 *       [--block-size N] [--max-input BYTES] --jsonl < in.jsonl > out.jsonl
 *
 * Each input line is one of
 *   {"text": "..."}               encoded without special tokens;
 *   an OpenAI completions body    {"prompt": ...}: a string encoded with
 *                                 special tokens, as vLLM does; token ids
 *                                 passed through;
 *   an OpenAI chat body           {"messages": [...], ...}: rendered with
 *                                 the chat template of --chat-template (or
 *                                 --config), then encoded without special
 *                                 tokens (the template writes them).
 * Each output line is {"ids": [...]} with, for chat bodies, "text" (the
 * rendered prompt) and, with --block-size, "blocks" (kvroute's chained
 * block keys in hex, seeded by "model" and "cache_salt" as the module
 * does); or {"error": "..."}.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "kvr_tokenizer.h"
#include "kvr_request.h"
#include "kvr_chat.h"
#include "kvr_hash.h"


#define KVR_CLI_MAX_LINE  (64 * 1024 * 1024)
#define KVR_CLI_MAX_IDS   (16 * 1024 * 1024)


typedef struct {
    kvr_tokenizer_t    *tk;
    kvr_chat_config_t  *chat;
    size_t              block_size;
    kvr_ids_t           ids;
    char               *rendered;
    size_t              rendered_max;
} kvr_cli_t;


static void
kvr_cli_usage(void)
{
    fprintf(stderr, "usage: kvroute-tokenize --tokenizer tokenizer.json "
            "[--chat-template tokenizer_config.json] "
            "[--config tokenizer_config.json] [--block-size N] "
            "[--max-input BYTES] --jsonl\n");
}


static void
kvr_cli_error(const char *msg)
{
    json_t  *obj;
    char    *line;

    obj = json_pack("{s:s}", "error", msg);
    line = obj ? json_dumps(obj, JSON_COMPACT) : NULL;

    printf("%s\n", line ? line : "{\"error\":\"out of memory\"}");

    free(line);
    json_decref(obj);
}


static void
kvr_cli_result(kvr_cli_t *cli, const uint32_t *ids, size_t n,
    const char *text, size_t text_len, const kvr_request_t *req)
{
    char      *dumped;
    json_t    *str;
    size_t     i, nblocks;
    uint64_t   seed, *blocks;

    fputs("{\"ids\":[", stdout);

    for (i = 0; i < n; i++) {
        printf(i ? ",%u" : "%u", ids[i]);
    }

    fputs("]", stdout);

    if (text) {
        str = json_stringn(text, text_len);
        dumped = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
        printf(",\"text\":%s", dumped ? dumped : "null");
        free(dumped);
        json_decref(str);
    }

    if (cli->block_size) {
        seed = req ? kvr_hash_seed(req->model, req->model_len,
                                   req->cache_salt, req->cache_salt_len)
                   : kvr_hash_seed(NULL, 0, NULL, 0);

        blocks = malloc((n / cli->block_size + 1) * sizeof(uint64_t));
        nblocks = blocks ? kvr_hash_token_blocks(ids, n, cli->block_size,
                                                 seed, blocks,
                                                 n / cli->block_size)
                         : 0;

        fputs(",\"blocks\":[", stdout);

        for (i = 0; i < nblocks; i++) {
            printf(i ? ",\"%016llx\"" : "\"%016llx\"",
                   (unsigned long long) blocks[i]);
        }

        fputs("]", stdout);
        free(blocks);
    }

    fputs("}\n", stdout);
}


static void
kvr_cli_line(kvr_cli_t *cli, const char *line, size_t len)
{
    int                  rc, is_chat, add_special;
    char                 err[256];
    json_t              *obj, *text;
    size_t               out_len;
    json_error_t         jerr;
    kvr_request_t        req;
    kvr_parse_status_e   status;

    obj = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);

    if (!json_is_object(obj)) {
        kvr_cli_error(obj ? "not a JSON object" : jerr.text);
        json_decref(obj);
        return;
    }

    kvr_ids_reset(&cli->ids);

    /* {"text": ...}: the tokenizer alone */

    text = json_object_get(obj, "text");
    add_special = 0;

    /* a completions string prompt: the tokenizer, special tokens added */

    if (text == NULL && json_is_string(json_object_get(obj, "prompt"))) {
        text = json_object_get(obj, "prompt");
        add_special = 1;
    }

    if (text) {
        if (!json_is_string(text)) {
            kvr_cli_error("\"text\" must be a string");
            json_decref(obj);
            return;
        }

        rc = kvr_tokenizer_encode(cli->tk, json_string_value(text),
                                  json_string_length(text), add_special,
                                  &cli->ids);

        if (rc != KVR_TOK_OK) {
            kvr_cli_error(kvr_tokenizer_status_name(rc));
            json_decref(obj);
            return;
        }

        json_decref(obj);

        if (!add_special) {
            kvr_cli_result(cli, cli->ids.ids, cli->ids.n, NULL, 0, NULL);
            return;
        }

        /* the model and salt seed the block keys */
        status = kvr_request_parse(&req, KVR_ENDPOINT_COMPLETIONS, line, len,
                                   cli->rendered_max);
        kvr_cli_result(cli, cli->ids.ids, cli->ids.n, NULL, 0,
                       status == KVR_PARSE_OK ? &req : NULL);
        kvr_request_free(&req);
        return;
    }

    /* a request body: parsed as the module parses it */

    is_chat = (json_object_get(obj, "messages") != NULL);
    json_decref(obj);

    status = kvr_request_parse(&req, is_chat ? KVR_ENDPOINT_CHAT
                                             : KVR_ENDPOINT_COMPLETIONS,
                               line, len, cli->rendered_max);

    if (status != KVR_PARSE_OK) {
        kvr_cli_error(kvr_parse_status_name(status));
        kvr_request_free(&req);
        return;
    }

    if (req.ids) {
        kvr_cli_result(cli, req.ids, req.n_ids, NULL, 0, &req);
        kvr_request_free(&req);
        return;
    }

    if (!is_chat) {
        rc = kvr_tokenizer_encode(cli->tk, req.text, req.text_len, 1,
                                  &cli->ids);
        if (rc != KVR_TOK_OK) {
            kvr_cli_error(kvr_tokenizer_status_name(rc));

        } else {
            kvr_cli_result(cli, cli->ids.ids, cli->ids.n, NULL, 0, &req);
        }

        kvr_request_free(&req);
        return;
    }

    if (cli->chat == NULL) {
        kvr_cli_error("chat request: give --chat-template");
        kvr_request_free(&req);
        return;
    }

    err[0] = '\0';

    rc = kvr_chat_render(cli->chat, req.root, 0, cli->rendered,
                         cli->rendered_max, &out_len, err, sizeof(err));
    if (rc != KVR_CHAT_OK) {
        kvr_cli_error(err[0] ? err : "chat template failed");
        kvr_request_free(&req);
        return;
    }

    rc = kvr_tokenizer_encode(cli->tk, cli->rendered, out_len, 0, &cli->ids);

    if (rc != KVR_TOK_OK) {
        kvr_cli_error(kvr_tokenizer_status_name(rc));

    } else {
        kvr_cli_result(cli, cli->ids.ids, cli->ids.n, cli->rendered, out_len,
                       &req);
    }

    kvr_request_free(&req);
}


int
main(int argc, char **argv)
{
    int          i, jsonl;
    char         err[512], *line;
    size_t       cap, max_input;
    ssize_t      len;
    kvr_cli_t    cli;
    const char  *json_path, *config_path, *template_path;

    json_path = NULL;
    config_path = NULL;
    template_path = NULL;
    max_input = 0;
    jsonl = 0;

    memset(&cli, 0, sizeof(cli));

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tokenizer") == 0 && i + 1 < argc) {
            json_path = argv[++i];

        } else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            config_path = argv[++i];

        } else if (strcmp(argv[i], "--chat-template") == 0 && i + 1 < argc) {
            template_path = argv[++i];

        } else if (strcmp(argv[i], "--block-size") == 0 && i + 1 < argc) {
            cli.block_size = strtoul(argv[++i], NULL, 10);

        } else if (strcmp(argv[i], "--max-input") == 0 && i + 1 < argc) {
            max_input = strtoul(argv[++i], NULL, 10);

        } else if (strcmp(argv[i], "--jsonl") == 0) {
            jsonl = 1;

        } else {
            kvr_cli_usage();
            return 2;
        }
    }

    if (json_path == NULL || !jsonl) {
        kvr_cli_usage();
        return 2;
    }

    /* the chat template's file is also the tokenizer's config */
    if (config_path == NULL) {
        config_path = template_path;
    }

    if (template_path == NULL) {
        template_path = config_path;
    }

    cli.tk = kvr_tokenizer_load(json_path, config_path, err, sizeof(err));
    if (cli.tk == NULL) {
        fprintf(stderr, "kvroute-tokenize: %s\n", err);
        return 1;
    }

    if (template_path) {
        cli.chat = kvr_chat_config_load(template_path, NULL, err,
                                        sizeof(err));
        if (cli.chat == NULL) {
            fprintf(stderr, "kvroute-tokenize: chat template: %s\n", err);
        }
    }

    cli.rendered_max = KVR_CLI_MAX_LINE;
    cli.rendered = malloc(cli.rendered_max);
    if (cli.rendered == NULL) {
        fprintf(stderr, "kvroute-tokenize: out of memory\n");
        return 1;
    }

    kvr_tokenizer_set_max_input(cli.tk, max_input);
    kvr_ids_init(&cli.ids, KVR_CLI_MAX_IDS);

    line = NULL;
    cap = 0;

    for ( ;; ) {
        len = getline(&line, &cap, stdin);
        if (len < 0) {
            break;
        }

        if (len > 0 && line[len - 1] == '\n') {
            len--;
        }

        if ((size_t) len > KVR_CLI_MAX_LINE) {
            kvr_cli_error("line too long");
            continue;
        }

        kvr_cli_line(&cli, line, (size_t) len);
    }

    free(line);
    free(cli.rendered);
    kvr_ids_free(&cli.ids);

    if (cli.chat) {
        kvr_chat_config_free(cli.chat);
    }

    kvr_tokenizer_free(cli.tk);

    return fflush(stdout) == 0 ? 0 : 1;
}
