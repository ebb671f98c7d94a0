/*
 * Copyright (C) kvroute developers
 *
 * A validating, zero-copy JSON parser: one pass over the input builds a
 * flat array of nodes that point into it (offset and length), nothing is
 * allocated per value.  Plain C, no nginx types.
 *
 * Layout: the root is node 0; a container's descendants follow it in
 * document order and nodes[i].end is one past the last of them, so the
 * next sibling of node i is node nodes[i].end.  An object's members are
 * pairs of nodes: the key (a string node), then its value.  The input must
 * stay alive and unchanged while the nodes are used.
 *
 * Validation is RFC 8259 in full: grammar, numbers, escapes, no raw
 * control characters in strings, well-formed UTF-8 (no overlong forms, no
 * encoded surrogates, nothing above U+10FFFF).  Escaped lone surrogates
 * ("\ud800", "\udc00", a high one not followed by a low one) are rejected
 * as jansson rejects them.  "\u0000" is accepted, also in keys (jansson
 * refuses it in keys, python does not).
 */

#ifndef _KVR_JSON_H_INCLUDED_
#define _KVR_JSON_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* a value nested deeper than this is an error (the root is at depth 1) */
#define KVR_JSON_MAX_DEPTH   2048

/* the default bound on the node count; inputs also stay below 4 GiB */
#define KVR_JSON_MAX_NODES   (1u << 20)

/* parse flag: numbers must fit jansson's types (int64, finite double) */
#define KVR_JSON_NUMBER_RANGE  0x01


typedef enum {
    KVR_JSON_OK = 0,
    KVR_JSON_ERR_SYNTAX,        /* grammar, truncated input, bad escape */
    KVR_JSON_ERR_UTF8,          /* invalid UTF-8 (not a cut sequence) */
    KVR_JSON_ERR_DEPTH,         /* nested deeper than KVR_JSON_MAX_DEPTH */
    KVR_JSON_ERR_TOO_BIG,       /* too many nodes, or input >= 4 GiB */
    KVR_JSON_ERR_NUMBER,        /* out of range, with KVR_JSON_NUMBER_RANGE */
    KVR_JSON_ERR_NO_MEMORY
} kvr_json_status_e;


typedef enum {
    KVR_JSON_OBJECT = 1,
    KVR_JSON_ARRAY,
    KVR_JSON_STRING,
    KVR_JSON_NUMBER,
    KVR_JSON_TRUE,
    KVR_JSON_FALSE,
    KVR_JSON_NULL
} kvr_json_type_e;


/* info bits: type in the low 3 bits, flags, child count from bit 8 */
#define KVR_JSON_TYPE_MASK   0x07
#define KVR_JSON_ESCAPED     0x08    /* string: holds backslash escapes */
#define KVR_JSON_REAL        0x10    /* number: has a fraction/exponent */
#define KVR_JSON_COUNT_SHIFT 8


typedef struct {
    uint32_t             off;       /* first byte of the raw value */
    uint32_t             len;       /* raw length, quotes included */
    uint32_t             end;       /* one past the last descendant */
    uint32_t             info;      /* type, flags, child count */
} kvr_json_node_t;


typedef struct {
    const char          *input;
    size_t               len;
    kvr_json_node_t     *nodes;
    uint32_t             n_nodes;
    uint32_t             cap;
    size_t               err_off;   /* where the error was found */
    kvr_json_status_e    status;
    size_t               block_size; /* kvr_json_parse()'s allocation */
    unsigned             owned:1;   /* allocated by kvr_json_parse() */
} kvr_json_doc_t;


/*
 * Parses into an allocated document (the struct and min(len / 2 + 2,
 * KVR_JSON_MAX_NODES) nodes in one block).  Returns NULL only when that
 * allocation fails; otherwise doc->status tells the outcome and the
 * document must be released with kvr_json_free().
 */
kvr_json_doc_t *kvr_json_parse(const char *input, size_t len,
    unsigned flags);

/* parses into a caller-supplied node array of cap nodes */
kvr_json_status_e kvr_json_parse_into(kvr_json_doc_t *doc,
    const char *input, size_t len, kvr_json_node_t *nodes, size_t cap,
    unsigned flags);

void kvr_json_free(kvr_json_doc_t *doc);

const char *kvr_json_status_name(kvr_json_status_e status);


static inline kvr_json_type_e
kvr_json_type(const kvr_json_doc_t *doc, uint32_t i)
{
    return (kvr_json_type_e) (doc->nodes[i].info & KVR_JSON_TYPE_MASK);
}


/* elements of an array, members (key-value pairs) of an object */
static inline uint32_t
kvr_json_count(const kvr_json_doc_t *doc, uint32_t i)
{
    return doc->nodes[i].info >> KVR_JSON_COUNT_SHIFT;
}


/* raw bytes of any node, as in the input */
static inline const char *
kvr_json_raw(const kvr_json_doc_t *doc, uint32_t i, size_t *len)
{
    *len = doc->nodes[i].len;
    return doc->input + doc->nodes[i].off;
}


/*
 * Iteration, with 0 meaning "none" (node 0 is the root, which is never
 * an element or a member):
 *   for (v = kvr_json_first(doc, arr); v; v = kvr_json_next(doc, arr, v))
 *   for (k = kvr_json_first(doc, obj); k; k = kvr_json_next(doc, obj, k))
 * yields array elements, or object keys (the value of key k is k + 1).
 */
static inline uint32_t
kvr_json_first(const kvr_json_doc_t *doc, uint32_t parent)
{
    return (doc->nodes[parent].end > parent + 1) ? parent + 1 : 0;
}


static inline uint32_t
kvr_json_next(const kvr_json_doc_t *doc, uint32_t parent, uint32_t i)
{
    uint32_t  next;

    if ((doc->nodes[parent].info & KVR_JSON_TYPE_MASK) == KVR_JSON_OBJECT) {
        i++;
    }

    next = doc->nodes[i].end;

    return (next < doc->nodes[parent].end) ? next : 0;
}


/*
 * The value of key in an object (key compared with the decoded member
 * names); when a key repeats, the last one wins, as in python's
 * json.loads.  Returns 0 when absent or when obj is not an object.
 */
uint32_t kvr_json_find(const kvr_json_doc_t *doc, uint32_t obj,
    const char *key, size_t key_len);

/* whether a node is a string whose decoded bytes are s[0..n) */
int kvr_json_string_eq(const kvr_json_doc_t *doc, uint32_t i,
    const char *s, size_t n);

/* orders two string nodes by their decoded bytes, like memcmp */
int kvr_json_string_cmp(const kvr_json_doc_t *doc, uint32_t a,
    uint32_t b);

/*
 * Decodes a string node into buf (at most size bytes, no nul added).
 * Returns the decoded length, or (size_t) -1 if it does not fit.  The
 * decoded length never exceeds the raw length minus the two quotes.
 */
size_t kvr_json_string_decode(const kvr_json_doc_t *doc, uint32_t i,
    char *buf, size_t size);

/* an integer number node in 0..UINT32_MAX ("-0" is 0); -1 otherwise */
int kvr_json_uint32(const kvr_json_doc_t *doc, uint32_t i, uint32_t *value);


#endif /* _KVR_JSON_H_INCLUDED_ */
