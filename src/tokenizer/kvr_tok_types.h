/*
 * Copyright (C) kvroute developers
 *
 * The tokenizer's types that its parts share below kvr_tokenizer.h:
 * encode statuses, the array of token ids and the segment cache's
 * counters.  kvr_tokenizer.h includes this; the parts (kvr_tok_bpe.h,
 * kvr_tok_cache.h) include only this, so that no part's header needs the
 * tokenizer's own.
 */

#ifndef _KVR_TOK_TYPES_H_INCLUDED_
#define _KVR_TOK_TYPES_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* encode status; 0 is success */
#define KVR_TOK_OK             0
#define KVR_TOK_BAD_UTF8      -1   /* input is not valid UTF-8 */
#define KVR_TOK_TOO_LONG      -2   /* input longer than max_input */
#define KVR_TOK_TOO_MANY      -3   /* more ids than the output allows */
#define KVR_TOK_NO_MEMORY     -4
#define KVR_TOK_REGEX         -5   /* regex engine gave up (limits) */
#define KVR_TOK_NORMALIZE     -6   /* utf8proc failed */
#define KVR_TOK_CACHE_DIFFERS -7   /* check mode: a cache hit was wrong */


/* a growable array of token ids, never longer than max */
typedef struct {
    uint32_t  *ids;
    size_t     n;
    size_t     cap;
    size_t     max;
} kvr_ids_t;


/* the segment cache's counters (kvr_tokenizer_cache_stats) */
typedef struct {
    size_t    entries;
    size_t    bytes;        /* counted memory of the entries */
    size_t    max_bytes;
    uint64_t  hits;
    uint64_t  misses;
    uint64_t  evictions;
} kvr_tokenizer_cache_stats_t;


/* appends n ids; as many as fit and KVR_TOK_TOO_MANY when over max */
int kvr_ids_append(kvr_ids_t *out, const uint32_t *ids, size_t n);

/* ids arrays: init with a maximum count, reset keeps the memory */
void kvr_ids_init(kvr_ids_t *out, size_t max);
int kvr_ids_push(kvr_ids_t *out, uint32_t id);
void kvr_ids_reset(kvr_ids_t *out);
void kvr_ids_free(kvr_ids_t *out);


#endif /* _KVR_TOK_TYPES_H_INCLUDED_ */
