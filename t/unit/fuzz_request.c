/*
 * Copyright (C) kvroute developers
 *
 * libFuzzer target for kvr_request_parse(): every input is parsed for both
 * endpoints, with a roomy and with a tight max_prompt, and the output
 * invariants of kvr_request.h are checked.  Not part of the default build
 * (mk/unit.mk only picks up test_*.c):
 *
 *   make build/fuzz/fuzz_request
 *   build/fuzz/fuzz_request -max_total_time=60 t/unit/corpus/request
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_request.h"


static void
fuzz_one(kvr_endpoint_e ep, const char *data, size_t size, size_t max)
{
    kvr_request_t        req;
    kvr_parse_status_e   rc;

    rc = kvr_request_parse(&req, ep, data, size, max);

    if (rc == KVR_PARSE_OK) {
        /* exactly one of text / ids, within the bound */
        if ((req.text == NULL) == (req.ids == NULL)) {
            abort();
        }

        if (req.text != NULL
            && (req.text_len == 0 || req.text_len > max
                || req.text[req.text_len] != '\0'))
        {
            abort();
        }

        if (req.ids != NULL && (req.n_ids == 0 || req.n_ids > max / 4)) {
            abort();
        }

    } else if (req.text != NULL || req.ids != NULL) {
        abort();
    }

    /* a body that parsed as JSON stays in root */
    if ((rc == KVR_PARSE_OK || rc == KVR_PARSE_NOT_OBJECT
         || rc == KVR_PARSE_NO_PROMPT || rc == KVR_PARSE_EMPTY_PROMPT
         || rc == KVR_PARSE_TOO_LARGE)
        && req.root == NULL)
    {
        abort();
    }

    if (req.model != NULL && req.model[req.model_len] != '\0') {
        abort();
    }

    if (strcmp(kvr_parse_status_name(rc), "unknown") == 0) {
        abort();
    }

    kvr_request_free(&req);
}


int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    const char  *body;

    body = (const char *) data;

    fuzz_one(KVR_ENDPOINT_COMPLETIONS, body, size, 1 << 20);
    fuzz_one(KVR_ENDPOINT_CHAT, body, size, 1 << 20);
    fuzz_one(KVR_ENDPOINT_COMPLETIONS, body, size, 16);
    fuzz_one(KVR_ENDPOINT_CHAT, body, size, 64);

    (void) kvr_endpoint_from_path(body, size);

    return 0;
}
