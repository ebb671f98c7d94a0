/*
 * Copyright (C) kvroute developers
 *
 * The added-token matcher of HF's AddedVocabulary: a byte trie over the
 * contents of the added tokens, searched leftmost-longest (as daachorse's
 * MatchKind::LeftmostLongest does) on the raw text.
 */

#ifndef _KVR_TOK_ADDED_H_INCLUDED_
#define _KVR_TOK_ADDED_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define KVR_TOK_ADDED_SPECIAL  0x01
#define KVR_TOK_ADDED_LSTRIP   0x02
#define KVR_TOK_ADDED_RSTRIP   0x04


typedef struct kvr_tok_added_s  kvr_tok_added_t;


typedef struct {
    size_t    start;
    size_t    end;
    uint32_t  id;
    unsigned  flags;
} kvr_tok_added_match_t;


kvr_tok_added_t *kvr_tok_added_create(void);
void kvr_tok_added_free(kvr_tok_added_t *at);

/* returns 0, 1 when the content was already added (kept), -1 no memory */
int kvr_tok_added_add(kvr_tok_added_t *at, const uint8_t *content,
    size_t len, uint32_t id, unsigned flags);

/*
 * Finds the leftmost match starting at or after from, the longest one at
 * that position.  Returns 0 and fills m, or -1 when there is none.
 */
int kvr_tok_added_find(const kvr_tok_added_t *at, const uint8_t *s,
    size_t len, size_t from, kvr_tok_added_match_t *m);


#endif /* _KVR_TOK_ADDED_H_INCLUDED_ */
