/*
 * Copyright (C) kvroute developers
 *
 * The GPT-2 byte-level alphabet (bytes_to_unicode).
 */

#ifndef _KVR_TOK_BYTELEVEL_H_INCLUDED_
#define _KVR_TOK_BYTELEVEL_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/*
 * Decodes a vocab or merge string (UTF-8 of the mapped chars) to raw
 * bytes.  out must hold len bytes.  Returns the byte count, or -1 when a
 * char is not in the alphabet.
 */
long kvr_tok_bytelevel_decode(const char *s, size_t len, uint8_t *out);

/* the mapped char of a byte (e.g. 0x20 -> U+0120) */
uint32_t kvr_tok_bytelevel_char(uint8_t byte);


#endif /* _KVR_TOK_BYTELEVEL_H_INCLUDED_ */
