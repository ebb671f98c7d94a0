/*
 * Copyright (C) kvroute developers
 *
 * The pre_tokenizer of a tokenizer.json as a chain of steps, each run on
 * every piece the previous one produced (HF PreTokenizedString::split,
 * empty pieces dropped):
 *   - Split: a known regex (kvr_tok_pretok.h) or a literal String, with
 *     behavior Isolated, Removed, MergedWithPrevious or MergedWithNext,
 *     invert or not;
 *   - Metaspace: spaces to the replacement char, prepend_scheme always /
 *     first / never, split on the replacement (merged with the next piece);
 *   - ByteLevel(add_prefix_space=false, use_regex=false), only last: the
 *     model is then byte-level (its vocab is in the GPT-2 byte alphabet),
 *     otherwise it sees the pieces' chars.
 * Anything else (e.g. behavior Contiguous) is refused by name.
 */

#ifndef _KVR_TOK_PRESPLIT_H_INCLUDED_
#define _KVR_TOK_PRESPLIT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "kvr_tok_normalizers.h"
#include "kvr_tok_pretok.h"


typedef struct kvr_tok_presplit_s  kvr_tok_presplit_t;


/*
 * Loads "pre_tokenizer" (null: one piece per segment).  *byte_level is set
 * when the chain ends in ByteLevel.  NULL with a message naming the
 * component in err.
 */
kvr_tok_presplit_t *kvr_tok_presplit_load(json_t *pre, int *byte_level,
    char *err, size_t errlen);

void kvr_tok_presplit_free(kvr_tok_presplit_t *ps);

/*
 * 1 when a segment's pieces depend on whether it starts the input
 * (Metaspace prepend_scheme "first"), so the segment cache must key on it
 */
int kvr_tok_presplit_first_sensitive(const kvr_tok_presplit_t *ps);

/*
 * 1 when every piece lies in the segment's own text until the run ends
 * (no Metaspace step, which builds a text of its own)
 */
int kvr_tok_presplit_in_place(const kvr_tok_presplit_t *ps);

/*
 * 1 when every segment norm gives is one piece: no steps, or Splits (not
 * inverted) on literals that norm's text never holds (Gemma 3's Split on
 * " " after its Replace of " ")
 */
int kvr_tok_presplit_whole(const kvr_tok_presplit_t *ps,
    const kvr_tok_norm_t *norm);

/*
 * Runs the chain on one normalized segment of valid UTF-8; at_start: the
 * segment begins at offset 0 of the input.  Every final non-empty piece
 * goes to piece(ctx, ...).  Returns 0, the callback's non-zero value, or
 * a KVR_TOK_* status.
 */
int kvr_tok_presplit_run(kvr_tok_presplit_t *ps, const uint8_t *s,
    size_t len, int at_start, kvr_tok_piece_pt piece, void *ctx);


#endif /* _KVR_TOK_PRESPLIT_H_INCLUDED_ */
