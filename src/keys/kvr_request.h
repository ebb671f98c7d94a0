/*
 * Copyright (C) kvroute developers
 *
 * Request understanding: an OpenAI /v1/completions or /v1/chat/completions
 * JSON body turned into the prompt that decides routing.  Plain C (the JSON
 * is parsed by kvr_json), no nginx types.
 */

#ifndef _KVR_REQUEST_H_INCLUDED_
#define _KVR_REQUEST_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include "kvr_json.h"


/* model and cache_salt up to this many bytes need no allocation */
#define KVR_REQUEST_FIELDS_SMALL  128


typedef enum {
    KVR_ENDPOINT_COMPLETIONS = 0,
    KVR_ENDPOINT_CHAT
} kvr_endpoint_e;


/* why a body could not be used; KVR_PARSE_OK when it could */
typedef enum {
    KVR_PARSE_OK = 0,
    KVR_PARSE_NOT_JSON,         /* syntax error, truncated, too deep */
    KVR_PARSE_INVALID_UTF8,
    KVR_PARSE_NOT_OBJECT,       /* top level is not an object */
    KVR_PARSE_NO_PROMPT,        /* prompt / messages missing or wrong type */
    KVR_PARSE_EMPTY_PROMPT,     /* present but renders to nothing */
    KVR_PARSE_TOO_LARGE,        /* rendered prompt exceeds max_prompt */
    KVR_PARSE_NO_MEMORY
} kvr_parse_status_e;


/* points into itself: never copied by value */
typedef struct {
    /*
     * the parsed body's nodes, owned; NULL if the body is not JSON.  They
     * point into the caller's body: use them only while it is alive.
     */
    kvr_json_doc_t   *root;

    /*
     * Exactly one of text / ids is set on KVR_PARSE_OK (text not with a
     * sink, see kvr_request_prompt()).
     * text: the canonical rendering of the prompt (malloc'ed, owned);
     * ids: token ids given by the client (malloc'ed, owned).
     */
    char             *text;
    size_t            text_len;
    uint32_t         *ids;
    size_t            n_ids;

    /* decoded copies in fields, NUL-terminated; NULL when absent */
    const char       *model;
    size_t            model_len;
    const char       *cache_salt;
    size_t            cache_salt_len;
    char             *fields;        /* storage of model, cache_salt */
    char              fields_small[KVR_REQUEST_FIELDS_SMALL];

    /* max_tokens (or max_completion_tokens) when given, else 0 */
    uint32_t          max_tokens;

    /* true when "stream": true */
    unsigned          stream:1;
} kvr_request_t;



/* receives the rendered prompt piece by piece, in order */
typedef void (*kvr_request_sink_pt)(void *data, const char *p, size_t len);


/*
 * Parses body (len bytes, not NUL-terminated).  max_prompt bounds the
 * rendered text in bytes (and ids * 4).  On any status the caller must call
 * kvr_request_free().  The same as kvr_request_parse_body() followed, when
 * that succeeds, by kvr_request_prompt() without a sink.
 */
kvr_parse_status_e kvr_request_parse(kvr_request_t *req, kvr_endpoint_e ep,
    const char *body, size_t len, size_t max_prompt);

/* the first step: the JSON, model, cache_salt and stream */
kvr_parse_status_e kvr_request_parse_body(kvr_request_t *req,
    const char *body, size_t len);

/*
 * The second step: the prompt.  Without a sink, text or ids are set.  With
 * a sink, a text prompt is not kept: its bytes are given to sink in order
 * (they concatenate to the text kvr_request_parse() renders), text stays
 * NULL and text_len is their total; ids are set as without a sink.  A
 * failing status may come after some pieces were given.
 */
kvr_parse_status_e kvr_request_prompt(kvr_request_t *req, kvr_endpoint_e ep,
    size_t max_prompt, kvr_request_sink_pt sink, void *data);

void kvr_request_free(kvr_request_t *req);

/* short stable name of a status for logs and variables, e.g. "not-json" */
const char *kvr_parse_status_name(kvr_parse_status_e status);

/* endpoint from a URI path ending; returns -1 when not an inference path */
int kvr_endpoint_from_path(const char *path, size_t len);


#endif /* _KVR_REQUEST_H_INCLUDED_ */
