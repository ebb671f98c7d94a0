/*
 * Copyright (C) kvroute developers
 *
 * Code point tables from docs/tokenizer.md Appendix A (the data files) and a
 * strict UTF-8 decoder.
 */

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "kvr_tok_unicode.h"


/* Oniguruma \s in tokenizers 0.23.2: Unicode White_Space (no U+180E) */
const kvr_tok_range_t  kvr_tok_white_space[] = {
    { 0x0009, 0x000d }, { 0x0020, 0x0020 }, { 0x0085, 0x0085 },
    { 0x00a0, 0x00a0 }, { 0x1680, 0x1680 }, { 0x2000, 0x200a },
    { 0x2028, 0x2029 }, { 0x202f, 0x202f }, { 0x205f, 0x205f },
    { 0x3000, 0x3000 },
};
const size_t  kvr_tok_white_space_n = 10;    /* 25 code points */


/* letters of Unicode 15-16 that PCRE2 10.42 (Unicode 14) lacks */
const kvr_tok_range_t  kvr_tok_pcre2_missing_letter[] = {
    { 0x1c89, 0x1c8a }, { 0xa7cb, 0xa7cd }, { 0xa7da, 0xa7dc },
    { 0x105c0, 0x105f3 }, { 0x10d4a, 0x10d65 }, { 0x10d6f, 0x10d85 },
    { 0x10ec2, 0x10ec4 }, { 0x1123f, 0x11240 }, { 0x11380, 0x11389 },
    { 0x1138b, 0x1138b }, { 0x1138e, 0x1138e }, { 0x11390, 0x113b5 },
    { 0x113b7, 0x113b7 }, { 0x113d1, 0x113d1 }, { 0x113d3, 0x113d3 },
    { 0x11bc0, 0x11be0 }, { 0x11f02, 0x11f02 }, { 0x11f04, 0x11f10 },
    { 0x11f12, 0x11f33 }, { 0x1342f, 0x1342f }, { 0x13441, 0x13446 },
    { 0x13460, 0x143fa }, { 0x16100, 0x1611d }, { 0x16d40, 0x16d6c },
    { 0x18cff, 0x18cff }, { 0x1b132, 0x1b132 }, { 0x1b155, 0x1b155 },
    { 0x1df25, 0x1df2a }, { 0x1e030, 0x1e06d }, { 0x1e4d0, 0x1e4eb },
    { 0x1e5d0, 0x1e5ed }, { 0x1e5f0, 0x1e5f0 }, { 0x2b739, 0x2b739 },
    { 0x2ebf0, 0x2ee5d }, { 0x31350, 0x323af },
};
const size_t  kvr_tok_pcre2_missing_letter_n = 35;    /* 9272 code points */


/* numbers of Unicode 15-16 that PCRE2 10.42 lacks */
const kvr_tok_range_t  kvr_tok_pcre2_missing_number[] = {
    { 0x10d40, 0x10d49 }, { 0x116d0, 0x116e3 }, { 0x11bf0, 0x11bf9 },
    { 0x11f50, 0x11f59 }, { 0x16130, 0x16139 }, { 0x16d70, 0x16d79 },
    { 0x1ccf0, 0x1ccf9 }, { 0x1d2c0, 0x1d2d3 }, { 0x1e4f0, 0x1e4f9 },
    { 0x1e5f1, 0x1e5fa },
};
const size_t  kvr_tok_pcre2_missing_number_n = 10;    /* 120 code points */


/*
 * the other general categories the known pre-tokenizer regexes name
 * (DeepSeek-V3, gpt-oss): what Oniguruma in tokenizers 0.23.2 (Unicode 16)
 * has and PCRE2 10.42 lacks, probed code point by code point through the
 * npm binding; PCRE2 has none that Oniguruma lacks
 */
static const kvr_tok_range_t  kvr_tok_missing_punctuation[] = {
    { 0x1b4e, 0x1b4f }, { 0x1b7f, 0x1b7f }, { 0x10d6e, 0x10d6e },
    { 0x113d4, 0x113d5 }, { 0x113d7, 0x113d8 }, { 0x11b00, 0x11b09 },
    { 0x11be1, 0x11be1 }, { 0x11f43, 0x11f4f }, { 0x16d6d, 0x16d6f },
    { 0x1e5ff, 0x1e5ff },
};

static const kvr_tok_range_t  kvr_tok_missing_symbol[] = {
    { 0x2427, 0x2429 }, { 0x2ffc, 0x2fff }, { 0x31e4, 0x31e5 },
    { 0x31ef, 0x31ef }, { 0x10d8e, 0x10d8f }, { 0x1cc00, 0x1ccef },
    { 0x1cd00, 0x1ceb3 }, { 0x1f6dc, 0x1f6dc }, { 0x1f774, 0x1f776 },
    { 0x1f77b, 0x1f77f }, { 0x1f7d9, 0x1f7d9 }, { 0x1f8b2, 0x1f8bb },
    { 0x1f8c0, 0x1f8c1 }, { 0x1fa75, 0x1fa77 }, { 0x1fa87, 0x1fa89 },
    { 0x1fa8f, 0x1fa8f }, { 0x1faad, 0x1faaf }, { 0x1fabb, 0x1fabf },
    { 0x1fac6, 0x1fac6 }, { 0x1face, 0x1facf }, { 0x1fada, 0x1fadc },
    { 0x1fadf, 0x1fadf }, { 0x1fae8, 0x1fae9 }, { 0x1faf7, 0x1faf8 },
    { 0x1fbcb, 0x1fbef },
};

static const kvr_tok_range_t  kvr_tok_missing_mark[] = {
    { 0x0897, 0x0897 }, { 0x0cf3, 0x0cf3 }, { 0x0ece, 0x0ece },
    { 0x10d69, 0x10d6d }, { 0x10efc, 0x10eff }, { 0x11241, 0x11241 },
    { 0x113b8, 0x113c0 }, { 0x113c2, 0x113c2 }, { 0x113c5, 0x113c5 },
    { 0x113c7, 0x113ca }, { 0x113cc, 0x113d0 }, { 0x113d2, 0x113d2 },
    { 0x113e1, 0x113e2 }, { 0x11f00, 0x11f01 }, { 0x11f03, 0x11f03 },
    { 0x11f34, 0x11f3a }, { 0x11f3e, 0x11f42 }, { 0x11f5a, 0x11f5a },
    { 0x13440, 0x13440 }, { 0x13447, 0x13455 }, { 0x1611e, 0x1612f },
    { 0x1e08f, 0x1e08f }, { 0x1e4ec, 0x1e4ef }, { 0x1e5ee, 0x1e5ef },
};

static const kvr_tok_range_t  kvr_tok_missing_upper[] = {
    { 0x1c89, 0x1c89 }, { 0xa7cb, 0xa7cc }, { 0xa7da, 0xa7da },
    { 0xa7dc, 0xa7dc }, { 0x10d50, 0x10d65 },
};

static const kvr_tok_range_t  kvr_tok_missing_lower[] = {
    { 0x1c8a, 0x1c8a }, { 0xa7cd, 0xa7cd }, { 0xa7db, 0xa7db },
    { 0x10d70, 0x10d85 }, { 0x1df25, 0x1df2a },
};

static const kvr_tok_range_t  kvr_tok_missing_modifier[] = {
    { 0x10d4e, 0x10d4e }, { 0x10d6f, 0x10d6f }, { 0x16d40, 0x16d42 },
    { 0x16d6b, 0x16d6c }, { 0x1e030, 0x1e06d }, { 0x1e4eb, 0x1e4eb },
};

static const kvr_tok_range_t  kvr_tok_missing_other_letter[] = {
    { 0x105c0, 0x105f3 }, { 0x10d4a, 0x10d4d }, { 0x10d4f, 0x10d4f },
    { 0x10ec2, 0x10ec4 }, { 0x1123f, 0x11240 }, { 0x11380, 0x11389 },
    { 0x1138b, 0x1138b }, { 0x1138e, 0x1138e }, { 0x11390, 0x113b5 },
    { 0x113b7, 0x113b7 }, { 0x113d1, 0x113d1 }, { 0x113d3, 0x113d3 },
    { 0x11bc0, 0x11be0 }, { 0x11f02, 0x11f02 }, { 0x11f04, 0x11f10 },
    { 0x11f12, 0x11f33 }, { 0x1342f, 0x1342f }, { 0x13441, 0x13446 },
    { 0x13460, 0x143fa }, { 0x16100, 0x1611d }, { 0x16d43, 0x16d6a },
    { 0x18cff, 0x18cff }, { 0x1b132, 0x1b132 }, { 0x1b155, 0x1b155 },
    { 0x1e4d0, 0x1e4ea }, { 0x1e5d0, 0x1e5ed }, { 0x1e5f0, 0x1e5f0 },
    { 0x2b739, 0x2b739 }, { 0x2ebf0, 0x2ee5d }, { 0x31350, 0x323af },
};

typedef struct {
    const char             *name;
    const kvr_tok_range_t  *ranges;
    size_t                  n;
} kvr_tok_category_t;


#define kvr_tok_cat(name, table)                                           \
    { name, table, sizeof(table) / sizeof(kvr_tok_range_t) }

static const kvr_tok_category_t  kvr_tok_categories[] = {
    { "L", kvr_tok_pcre2_missing_letter, 35 },
    { "N", kvr_tok_pcre2_missing_number, 10 },
    kvr_tok_cat("P", kvr_tok_missing_punctuation),
    kvr_tok_cat("S", kvr_tok_missing_symbol),
    kvr_tok_cat("M", kvr_tok_missing_mark),
    kvr_tok_cat("Lu", kvr_tok_missing_upper),
    kvr_tok_cat("Ll", kvr_tok_missing_lower),
    { "Lt", NULL, 0 },
    kvr_tok_cat("Lm", kvr_tok_missing_modifier),
    kvr_tok_cat("Lo", kvr_tok_missing_other_letter),
};


#define KVR_TOK_N_CATEGORIES                                               \
    (sizeof(kvr_tok_categories) / sizeof(kvr_tok_category_t))


const kvr_tok_range_t *
kvr_tok_pcre2_missing(const char *category, size_t len, size_t *n)
{
    size_t  i;

    for (i = 0; i < KVR_TOK_N_CATEGORIES; i++) {
        if (strlen(kvr_tok_categories[i].name) == len
            && memcmp(kvr_tok_categories[i].name, category, len) == 0)
        {
            *n = kvr_tok_categories[i].n;
            return kvr_tok_categories[i].ranges
                   ? kvr_tok_categories[i].ranges : kvr_tok_white_space;
        }
    }

    return NULL;
}


/*
 * marks HF NFC (Unicode 9 tables) treats as unassigned but utf8proc 2.8
 * would reorder or compose, plus U+11930 and U+11935
 */
const kvr_tok_range_t  kvr_tok_nfc_passthrough[] = {
    { 0x07fd, 0x07fd }, { 0x0898, 0x089f }, { 0x08ca, 0x08d3 },
    { 0x09fe, 0x09fe }, { 0x0c3c, 0x0c3c }, { 0x0d3b, 0x0d3c },
    { 0x0eba, 0x0eba }, { 0x1715, 0x1715 }, { 0x1abf, 0x1ace },
    { 0x1df6, 0x1dfa }, { 0xa82c, 0xa82c }, { 0x10d24, 0x10d27 },
    { 0x10eab, 0x10eac }, { 0x10efd, 0x10eff }, { 0x10f46, 0x10f50 },
    { 0x10f82, 0x10f85 }, { 0x11070, 0x11070 }, { 0x1133b, 0x1133b },
    { 0x1145e, 0x1145e }, { 0x11839, 0x1183a }, { 0x11930, 0x11930 },
    { 0x11935, 0x11935 }, { 0x11938, 0x11938 }, { 0x1193d, 0x1193e },
    { 0x11943, 0x11943 }, { 0x119e0, 0x119e0 }, { 0x11a34, 0x11a34 },
    { 0x11a47, 0x11a47 }, { 0x11a99, 0x11a99 }, { 0x11d42, 0x11d42 },
    { 0x11d44, 0x11d45 }, { 0x11d97, 0x11d97 }, { 0x11f41, 0x11f42 },
    { 0x16ff0, 0x16ff1 }, { 0x1e08f, 0x1e08f }, { 0x1e130, 0x1e136 },
    { 0x1e2ae, 0x1e2ae }, { 0x1e2ec, 0x1e2ef }, { 0x1e4ec, 0x1e4ef },
};
const size_t  kvr_tok_nfc_passthrough_n = 39;    /* 111 code points */


int
kvr_tok_in_ranges(const kvr_tok_range_t *ranges, size_t n, uint32_t cp)
{
    size_t  lo, hi, mid;

    lo = 0;
    hi = n;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;

        if (cp < ranges[mid].first) {
            hi = mid;

        } else if (cp > ranges[mid].last) {
            lo = mid + 1;

        } else {
            return 1;
        }
    }

    return 0;
}


size_t
kvr_tok_utf8_decode(const uint8_t *s, size_t len, uint32_t *cp)
{
    size_t    n, i;
    uint32_t  c, min;

    if (len == 0) {
        return 0;
    }

    c = s[0];

    if (c < 0x80) {
        *cp = c;
        return 1;
    }

    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        c &= 0x1f;
        min = 0x80;

    } else if ((c & 0xf0) == 0xe0) {
        n = 3;
        c &= 0x0f;
        min = 0x800;

    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        c &= 0x07;
        min = 0x10000;

    } else {
        return 0;
    }

    if (len < n) {
        return 0;
    }

    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }

        c = c << 6 | (s[i] & 0x3f);
    }

    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
        return 0;
    }

    *cp = c;

    return n;
}


int
kvr_tok_utf8_valid(const uint8_t *s, size_t len)
{
    size_t    i, n;
    uint32_t  cp;
    uint64_t  word;
#ifdef __SSE2__
    uint64_t  high;
    __m128i   a, b, c, d;
#else
    uint64_t  words[4];
#endif

    i = 0;

    while (i < len) {
#ifdef __SSE2__
        /*
         * 64 bytes at a time: all ASCII is skipped, else i goes to the
         * first byte >= 0x80 (text beyond ASCII costs a test a char)
         */
        if (len - i >= 64) {
            a = _mm_loadu_si128((const __m128i *) (s + i));
            b = _mm_loadu_si128((const __m128i *) (s + i + 16));
            c = _mm_loadu_si128((const __m128i *) (s + i + 32));
            d = _mm_loadu_si128((const __m128i *) (s + i + 48));

            high = (uint64_t) (uint16_t) _mm_movemask_epi8(a)
                   | (uint64_t) (uint16_t) _mm_movemask_epi8(b) << 16
                   | (uint64_t) (uint16_t) _mm_movemask_epi8(c) << 32
                   | (uint64_t) (uint16_t) _mm_movemask_epi8(d) << 48;

            if (high == 0) {
                i += 64;
                continue;
            }

            i += (size_t) __builtin_ctzll(high);
        }
#else
        /* ascii runs 32 bytes at a time */
        if (len - i >= 32) {
            memcpy(words, s + i, 32);

            if (((words[0] | words[1] | words[2] | words[3])
                 & 0x8080808080808080ull) == 0)
            {
                i += 32;
                continue;
            }
        }
#endif

        /* then eight, then one */
        if (len - i >= 8) {
            memcpy(&word, s + i, 8);

            if ((word & 0x8080808080808080ull) == 0) {
                i += 8;
                continue;
            }
        }

        if (s[i] < 0x80) {
            i++;
            continue;
        }

        n = kvr_tok_utf8_decode(s + i, len - i, &cp);
        if (n == 0) {
            return 0;
        }

        i += n;
    }

    return 1;
}
