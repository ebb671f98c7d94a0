/*
 * Copyright (C) kvroute developers
 *
 * kvroute-tokenize: the token ids and block keys kvroute computes for a
 * request, with the module's own keying pipeline (kvr_keys.h); for the
 * oracle tests and for operators asking "why didn't this request hit?".
 *
 *   kvroute-tokenize [--tokenizer tokenizer.json]
 *       [--chat-template tokenizer_config.json]
 *       [--config tokenizer_config.json]
 *       [--mode approx|kv] [--models NAME[,NAME...]] [--block-size N]
 *       [--text-chunk BYTES] [--max-body BYTES] [--max-input BYTES]
 *       --jsonl < in.jsonl > out.jsonl
 *
 * The options are the kvroute directive's parameters of the same names
 * (tokenizer=, tokenizer_config=, mode=, models=, block_size=,
 * text_chunk=, max_body=), with the same defaults.
 *
 * Each input line is one of
 *   {"text": "..."}               encoded without special tokens (needs
 *                                 --tokenizer);
 *   an OpenAI completions body    {"prompt": ...};
 *   an OpenAI chat body           {"messages": [...], ...};
 * a body is keyed as the module keys it (kvr_keys.h).  Each output line is
 * {"ids": [...]} (the ids keyed: tokens or the client's ids) with "keys"
 * (what the keys were made of: "tokens", "ids" or "text"), for chat bodies
 * rendered by the template "text", and, with --block-size or --mode,
 * "blocks": the keys the index holds, in hex, as $kvroute_block_keys
 * shows them.  A body keyed by text has no "ids"; when that is because
 * the chat template or the tokenizer refused it, "error" says why.  A body
 * kvroute cannot key at all gives {"error": "..."} only.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "kvr_keys.h"


#define KVR_CLI_MAX_LINE    (64 * 1024 * 1024)
#define KVR_CLI_MAX_IDS     (16 * 1024 * 1024)

/* kvr_keys_make() allocates at most 3 times (kvr_keys.c) */
#define KVR_CLI_ALLOCS      4

/* the module's defaults (ngx_http_kvroute_module.c) */
#define KVR_CLI_BLOCK_SIZE  16
#define KVR_CLI_MAX_BODY    (1024 * 1024)


typedef struct {
    kvr_keys_conf_t      conf;
    kvr_keys_scratch_t   scratch;
    int                  blocks;       /* print the block keys */
    kvr_ids_t            ids;          /* {"text"} lines */

    void                *allocs[KVR_CLI_ALLOCS];
    size_t               nallocs;
} kvr_cli_t;


static void
kvr_cli_usage(void)
{
    fprintf(stderr, "usage: kvroute-tokenize [--tokenizer tokenizer.json] "
            "[--chat-template tokenizer_config.json] "
            "[--config tokenizer_config.json] [--mode approx|kv] "
            "[--models NAME[,NAME...]] [--block-size N] "
            "[--text-chunk BYTES] [--max-body BYTES] "
            "[--max-input BYTES] --jsonl\n");
}


/* the keys' memory, freed after each line */
static void *
kvr_cli_alloc(void *data, size_t size)
{
    void       *p;
    kvr_cli_t  *cli = data;

    if (cli->nallocs == KVR_CLI_ALLOCS) {
        return NULL;
    }

    p = malloc(size ? size : 1);
    if (p != NULL) {
        cli->allocs[cli->nallocs++] = p;
    }

    return p;
}


static void
kvr_cli_free_allocs(kvr_cli_t *cli)
{
    while (cli->nallocs) {
        free(cli->allocs[--cli->nallocs]);
    }
}


static void
kvr_cli_string(const char *name, const char *s, size_t len)
{
    char    *dumped;
    json_t  *str;

    str = json_stringn(s, len);
    dumped = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;

    printf("\"%s\":%s", name, dumped ? dumped : "null");

    free(dumped);
    json_decref(str);
}


static void
kvr_cli_error(const char *msg)
{
    fputs("{", stdout);
    kvr_cli_string("error", msg, strlen(msg));
    fputs("}\n", stdout);
}


/* "ids" in decimal, or "blocks" in hex as $kvroute_block_keys shows them */
static void
kvr_cli_list(const char *name, const uint32_t *ids, const uint64_t *blocks,
    size_t n)
{
    size_t  i;

    printf("\"%s\":[", name);

    for (i = 0; i < n; i++) {
        if (ids) {
            printf(i ? ",%u" : "%u", ids[i]);

        } else {
            printf(i ? ",\"%016llx\"" : "\"%016llx\"",
                   (unsigned long long) blocks[i]);
        }
    }

    fputs("]", stdout);
}


/* {"text": ...}: the tokenizer alone, keyed as a request without model */
static void
kvr_cli_text(kvr_cli_t *cli, json_t *text)
{
    int        rc;
    size_t     n;
    uint64_t  *blocks;

    if (cli->conf.tokenizer == NULL) {
        kvr_cli_error("a \"text\" line needs --tokenizer");
        return;
    }

    if (!json_is_string(text)) {
        kvr_cli_error("\"text\" must be a string");
        return;
    }

    kvr_ids_reset(&cli->ids);

    rc = kvr_tokenizer_encode(cli->conf.tokenizer, json_string_value(text),
                              json_string_length(text), 0, &cli->ids);

    if (rc != KVR_TOK_OK) {
        kvr_cli_error(kvr_tokenizer_status_name(rc));
        return;
    }

    fputs("{", stdout);
    kvr_cli_list("ids", cli->ids.ids, NULL, cli->ids.n);

    if (cli->blocks) {
        n = cli->ids.n / cli->conf.block_size;
        blocks = malloc((n + 1) * sizeof(uint64_t));
        n = blocks ? kvr_keys_token_blocks(&cli->conf, NULL, 0, NULL, 0,
                                           cli->ids.ids, cli->ids.n, blocks,
                                           n)
                   : 0;
        fputs(",", stdout);
        kvr_cli_list("blocks", NULL, blocks, n);
        free(blocks);
    }

    fputs("}\n", stdout);
}


/* a request body, keyed by kvr_keys as the module keys it */
static void
kvr_cli_body(kvr_cli_t *cli, const char *line, size_t len, kvr_endpoint_e ep)
{
    char                why[256];
    kvr_keys_t          k;
    kvr_keys_status_e   rc;

    k.alloc = kvr_cli_alloc;
    k.alloc_data = cli;

    rc = kvr_keys_make(&k, &cli->conf, &cli->scratch, ep, line, len);

    switch (rc) {

    case KVR_KEYS_BAD_REQUEST:
        kvr_cli_error(kvr_parse_status_name(k.parse));
        goto done;

    case KVR_KEYS_NO_MEMORY:
        kvr_cli_error("out of memory");
        goto done;

    default:
        /* KVR_KEYS_OK, KVR_KEYS_SHORT: keys (perhaps none) to print */
        break;
    }

    fputs("{", stdout);

    why[0] = '\0';

    if (k.ids) {
        kvr_cli_list("ids", k.ids, NULL, k.n_ids);
        fputs(",", stdout);

    } else if (k.refused) {
        snprintf(why, sizeof(why), "%s: %s", k.refused, k.refused_why);

    } else if (cli->conf.tokenizer && ep == KVR_ENDPOINT_CHAT) {
        snprintf(why, sizeof(why), "chat request: give --chat-template");
    }

    if (why[0]) {
        kvr_cli_string("error", why, strlen(why));
        fputs(",", stdout);
    }

    printf("\"keys\":\"%s\"", kvr_keys_kind_name(k.kind));

    if (k.rendered) {
        fputs(",", stdout);
        kvr_cli_string("text", k.rendered, k.rendered_len);
    }

    if (cli->blocks) {
        fputs(",", stdout);
        kvr_cli_list("blocks", NULL, k.hashes,
                     rc == KVR_KEYS_OK ? k.nblocks : 0);
    }

    fputs("}\n", stdout);

done:

    kvr_keys_done(&k);
    kvr_cli_free_allocs(cli);
}


static void
kvr_cli_line(kvr_cli_t *cli, const char *line, size_t len)
{
    json_t          *obj, *text;
    json_error_t     jerr;
    kvr_endpoint_e   ep;

    obj = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);

    if (!json_is_object(obj)) {
        kvr_cli_error(obj ? "not a JSON object" : jerr.text);
        json_decref(obj);
        return;
    }

    text = json_object_get(obj, "text");

    if (text) {
        kvr_cli_text(cli, text);
        json_decref(obj);
        return;
    }

    ep = json_object_get(obj, "messages") ? KVR_ENDPOINT_CHAT
                                          : KVR_ENDPOINT_COMPLETIONS;
    json_decref(obj);

    kvr_cli_body(cli, line, len, ep);
}


/* the options; 0 when they make a configuration, else the exit status */
static int
kvr_cli_options(kvr_cli_t *cli, int argc, char **argv)
{
    int          i, jsonl;
    char         err[512];
    size_t       max_input, chunk_bytes;
    const char  *json_path, *config_path, *template_path, *mode;

    json_path = NULL;
    config_path = NULL;
    template_path = NULL;
    mode = NULL;
    max_input = 0;
    chunk_bytes = 0;
    jsonl = 0;

    cli->conf.block_size = KVR_CLI_BLOCK_SIZE;
    cli->conf.max_prompt = KVR_CLI_MAX_BODY;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--jsonl") == 0) {
            jsonl = 1;
            continue;
        }

        if (i + 1 == argc) {
            kvr_cli_usage();
            return 2;
        }

        if (strcmp(argv[i], "--tokenizer") == 0) {
            json_path = argv[++i];

        } else if (strcmp(argv[i], "--config") == 0) {
            config_path = argv[++i];

        } else if (strcmp(argv[i], "--chat-template") == 0) {
            template_path = argv[++i];

        } else if (strcmp(argv[i], "--mode") == 0) {
            mode = argv[++i];
            cli->blocks = 1;

        } else if (strcmp(argv[i], "--models") == 0) {
            cli->conf.models = argv[++i];
            cli->conf.models_len = strlen(cli->conf.models);

        } else if (strcmp(argv[i], "--block-size") == 0) {
            cli->conf.block_size = strtoul(argv[++i], NULL, 10);
            cli->blocks = 1;

        } else if (strcmp(argv[i], "--text-chunk") == 0) {
            chunk_bytes = strtoul(argv[++i], NULL, 10);

        } else if (strcmp(argv[i], "--max-body") == 0) {
            cli->conf.max_prompt = strtoul(argv[++i], NULL, 10);

        } else if (strcmp(argv[i], "--max-input") == 0) {
            max_input = strtoul(argv[++i], NULL, 10);

        } else {
            kvr_cli_usage();
            return 2;
        }
    }

    if (!jsonl || cli->conf.block_size == 0
        || (json_path == NULL && (config_path || template_path)))
    {
        kvr_cli_usage();
        return 2;
    }

    if (mode == NULL || strcmp(mode, "approx") == 0) {
        cli->conf.mode = KVR_KEYS_APPROX;

    } else if (strcmp(mode, "kv") == 0) {
        cli->conf.mode = KVR_KEYS_KV;

    } else {
        fprintf(stderr, "kvroute-tokenize: --mode approx or kv\n");
        return 2;
    }

    /* about 4 bytes of text per token: a chunk stands for a block */
    cli->conf.chunk_bytes = chunk_bytes ? chunk_bytes
                                        : 4 * cli->conf.block_size;

    if (json_path == NULL) {
        return 0;
    }

    /* the chat template's file is also the tokenizer's config */
    if (config_path == NULL) {
        config_path = template_path;
    }

    if (template_path == NULL) {
        template_path = config_path;
    }

    cli->conf.tokenizer = kvr_tokenizer_load(json_path, config_path, err,
                                             sizeof(err));
    if (cli->conf.tokenizer == NULL) {
        fprintf(stderr, "kvroute-tokenize: %s\n", err);
        return 1;
    }

    kvr_tokenizer_set_max_input(cli->conf.tokenizer, max_input);

    if (template_path) {
        cli->conf.chat = kvr_chat_config_load(template_path, NULL, err,
                                              sizeof(err));
        if (cli->conf.chat == NULL) {
            fprintf(stderr, "kvroute-tokenize: chat template: %s\n", err);
        }
    }

    return 0;
}


int
main(int argc, char **argv)
{
    int         rc;
    char       *line;
    size_t      cap;
    ssize_t     len;
    kvr_cli_t   cli;

    memset(&cli, 0, sizeof(cli));

    rc = kvr_cli_options(&cli, argc, argv);
    if (rc != 0) {
        return rc;
    }

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
    kvr_ids_free(&cli.ids);
    kvr_keys_scratch_free(&cli.scratch);

    if (cli.conf.chat) {
        kvr_chat_config_free((kvr_chat_config_t *) cli.conf.chat);
    }

    if (cli.conf.tokenizer) {
        kvr_tokenizer_free(cli.conf.tokenizer);
    }

    return fflush(stdout) == 0 ? 0 : 1;
}
