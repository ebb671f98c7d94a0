/*
 * Copyright (C) kvroute developers
 *
 * The BPE model of a tokenizer.json (HF models/bpe): the vocab and the
 * merges, both keyed by raw bytes (byte-level vocab keys are decoded from
 * the GPT-2 byte-to-unicode alphabet once at load), the heap merge of one
 * piece, ignore_merges, byte fallback and unk for SentencePiece-style
 * files, and a bounded per-process word cache.
 */

#ifndef _KVR_TOK_BPE_H_INCLUDED_
#define _KVR_TOK_BPE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_tok_types.h"


typedef struct kvr_tok_bpe_s  kvr_tok_bpe_t;


kvr_tok_bpe_t *kvr_tok_bpe_create(size_t n_vocab, size_t n_merges);
void kvr_tok_bpe_free(kvr_tok_bpe_t *bpe);

/* returns 0, 1 when the key was already present (id kept), -1 no memory */
int kvr_tok_bpe_add_token(kvr_tok_bpe_t *bpe, const uint8_t *key,
    size_t len, uint32_t id);

/* returns 0 and sets *id when key is in the vocab, else -1 */
int kvr_tok_bpe_lookup(const kvr_tok_bpe_t *bpe, const uint8_t *key,
    size_t len, uint32_t *id);

/* a later merge of the same pair replaces an earlier one (HF's HashMap) */
int kvr_tok_bpe_add_merge(kvr_tok_bpe_t *bpe, uint32_t left,
    uint32_t right, uint32_t rank, uint32_t new_id);

/*
 * The SentencePiece-style model (no ByteLevel pre-tokenizer): vocab keys
 * are the raw UTF-8 strings and the initial symbols a piece's chars; an
 * unknown char goes to its <0xNN> tokens (byte_fallback), else to unk_id
 * (KVR_TOK_BPE_NO_UNK: dropped), consecutive unks fused when fuse_unk.
 * Call right after create.
 */
#define KVR_TOK_BPE_NO_UNK  0xffffffffu

int kvr_tok_bpe_set_chars(kvr_tok_bpe_t *bpe, int byte_fallback,
    uint32_t unk_id, int fuse_unk);

/*
 * The char model: a merge's left token ends with code point last and its
 * right token starts with first.  Pieces are cut between chars that are
 * no junction of any merge.  -1 when out of memory.
 */
int kvr_tok_bpe_add_junction(kvr_tok_bpe_t *bpe, uint32_t last,
    uint32_t first);

/*
 * 1 when a piece's ids are those of its parts cut between chars no merge
 * joins (the char model, byte fallback complete or no unk, no
 * ignore_merges' whole-piece lookup)
 */
int kvr_tok_bpe_cuts_words(const kvr_tok_bpe_t *bpe);

/* 1 when some merge joins a symbol ending in last to one starting first */
int kvr_tok_bpe_joins(const kvr_tok_bpe_t *bpe, uint32_t last,
    uint32_t first);

/* call after vocab and merges are complete; -1 when out of memory */
int kvr_tok_bpe_finish(kvr_tok_bpe_t *bpe, int ignore_merges);

/*
 * A piece's word cache slot fetched ahead, while the piece before it is
 * encoded: returns what kvr_tok_bpe_encode_ahead takes for it
 */
uint64_t kvr_tok_bpe_ahead(const kvr_tok_bpe_t *bpe, const uint8_t *piece,
    size_t len);
int kvr_tok_bpe_encode_ahead(kvr_tok_bpe_t *bpe, const uint8_t *piece,
    size_t len, uint64_t ahead, kvr_ids_t *out);

/* appends the ids of one pre-tokenized piece (raw bytes) */
int kvr_tok_bpe_encode(kvr_tok_bpe_t *bpe, const uint8_t *piece,
    size_t len, kvr_ids_t *out);


#endif /* _KVR_TOK_BPE_H_INCLUDED_ */
