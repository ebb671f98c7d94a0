/*
 * Copyright (C) kvroute developers
 *
 * kvroute-tokenize: encodes JSON lines with the kvroute tokenizer, for the
 * oracle tests and for checking a model's files by hand.
 *
 *   kvroute-tokenize --tokenizer tokenizer.json
 *       [--config tokenizer_config.json] [--max-input BYTES]
 *       --jsonl < in.jsonl > out.jsonl
 *
 * Each input line is {"text": "..."} (encoded without special tokens) or
 * {"prompt": "..."} (a completions prompt: with special tokens, as vLLM
 * does).  Each output line is {"ids": [...]} or {"error": "..."}.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "kvr_tokenizer.h"


#define KVR_CLI_MAX_LINE  (64 * 1024 * 1024)
#define KVR_CLI_MAX_IDS   (16 * 1024 * 1024)


static void
kvr_cli_usage(void)
{
    fprintf(stderr, "usage: kvroute-tokenize --tokenizer tokenizer.json "
            "[--config tokenizer_config.json] [--max-input BYTES] "
            "--jsonl\n");
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
kvr_cli_ids(const kvr_ids_t *ids)
{
    size_t  i;

    fputs("{\"ids\":[", stdout);

    for (i = 0; i < ids->n; i++) {
        printf(i ? ",%u" : "%u", ids->ids[i]);
    }

    fputs("]}\n", stdout);
}


static void
kvr_cli_line(kvr_tokenizer_t *tk, const char *line, size_t len,
    kvr_ids_t *ids)
{
    int            rc, add_special;
    json_t        *obj, *text;
    json_error_t   jerr;

    obj = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);

    if (!json_is_object(obj)) {
        kvr_cli_error(obj ? "not a JSON object" : jerr.text);
        json_decref(obj);
        return;
    }

    text = json_object_get(obj, "text");
    add_special = 0;

    if (text == NULL) {
        text = json_object_get(obj, "prompt");
        add_special = 1;
    }

    if (text == NULL && json_object_get(obj, "messages") != NULL) {
        kvr_cli_error("chat requests are not supported yet");
        json_decref(obj);
        return;
    }

    if (!json_is_string(text)) {
        kvr_cli_error("need a string \"text\" or \"prompt\"");
        json_decref(obj);
        return;
    }

    kvr_ids_reset(ids);

    rc = kvr_tokenizer_encode(tk, json_string_value(text),
                              json_string_length(text), add_special, ids);

    if (rc != KVR_TOK_OK) {
        kvr_cli_error(kvr_tokenizer_status_name(rc));

    } else {
        kvr_cli_ids(ids);
    }

    json_decref(obj);
}


int
main(int argc, char **argv)
{
    int               i, jsonl;
    char              err[512], *line;
    size_t            cap, max_input;
    ssize_t           len;
    kvr_ids_t         ids;
    const char       *json_path, *config_path;
    kvr_tokenizer_t  *tk;

    json_path = NULL;
    config_path = NULL;
    max_input = 0;
    jsonl = 0;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tokenizer") == 0 && i + 1 < argc) {
            json_path = argv[++i];

        } else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            config_path = argv[++i];

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

    tk = kvr_tokenizer_load(json_path, config_path, err, sizeof(err));
    if (tk == NULL) {
        fprintf(stderr, "kvroute-tokenize: %s\n", err);
        return 1;
    }

    kvr_tokenizer_set_max_input(tk, max_input);
    kvr_ids_init(&ids, KVR_CLI_MAX_IDS);

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

        kvr_cli_line(tk, line, (size_t) len, &ids);
    }

    free(line);
    kvr_ids_free(&ids);
    kvr_tokenizer_free(tk);

    return fflush(stdout) == 0 ? 0 : 1;
}
