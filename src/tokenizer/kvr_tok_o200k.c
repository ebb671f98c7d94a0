/*
 * Copyright (C) kvroute developers
 *
 * The o200k pre-tokenizer regex of gpt-oss, hand-coded:
 *
 *   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*
 *       [\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?     (1)
 *   |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+
 *       [\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?     (2)
 *   |\p{N}{1,3}                                                     (3)
 *   | ?[^\s\p{L}\p{N}]+[\r\n/]*                                     (4)
 *   |\s*[\r\n]+|\s+(?!\S)|\s+                                       (5-7)
 *
 * Each alternative is tried in order as a backtracking matcher would,
 * the optional prefix char taken first; where PCRE2 backtracks, the
 * outcome it reaches first is computed directly (see kvr_o200k_words).
 */

#include <stdlib.h>

#include "kvr_tok_o200k.h"
#include "kvr_tok_uclass.h"


/* the matcher's helpers: inline, whatever the compiler's estimate */
#if defined(__GNUC__)
#define kvr_o200k_inline  inline __attribute__((always_inline))
#else
#define kvr_o200k_inline  inline
#endif


#define KVR_O200K_SPACE  0x01      /* \s */
#define KVR_O200K_L      0x02      /* \p{L} */
#define KVR_O200K_N      0x04      /* \p{N} */
#define KVR_O200K_UP     0x08      /* [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] */
#define KVR_O200K_LOW    0x10      /* [\p{Ll}\p{Lm}\p{Lo}\p{M}] */


static const char *const  kvr_o200k_classes[] = {
    "\\s",
    "\\p{L}",
    "\\p{N}",
    "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]",
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]",
};


struct kvr_tok_o200k_s {
    kvr_tok_uclass_t  *uc;
    uint8_t            ascii[128];
};


kvr_tok_o200k_t *
kvr_tok_o200k_create(char *err, size_t errlen)
{
    uint32_t          c;
    kvr_tok_o200k_t  *m;

    m = calloc(1, sizeof(kvr_tok_o200k_t));
    if (m == NULL) {
        return NULL;
    }

    m->uc = kvr_tok_uclass_create(kvr_o200k_classes,
                                  sizeof(kvr_o200k_classes)
                                  / sizeof(kvr_o200k_classes[0]),
                                  err, errlen);
    if (m->uc == NULL) {
        free(m);
        return NULL;
    }

    for (c = 0; c < 128; c++) {
        m->ascii[c] = kvr_tok_uclass_get(m->uc, c);
    }

    return m;
}


void
kvr_tok_o200k_free(kvr_tok_o200k_t *m)
{
    if (m == NULL) {
        return;
    }

    kvr_tok_uclass_free(m->uc);
    free(m);
}


/* the classes of the char at s[i] (valid UTF-8) and its length */
static kvr_o200k_inline size_t
kvr_o200k_char(const kvr_tok_o200k_t *m, const uint8_t *s, size_t i,
    unsigned *cls)
{
    uint32_t  c, cp;

    c = s[i];

    if (c < 0x80) {
        *cls = m->ascii[c];
        return 1;
    }

    if (c < 0xe0) {
        cp = (c & 0x1f) << 6 | (s[i + 1] & 0x3f);
        *cls = kvr_tok_uclass_get(m->uc, cp);
        return 2;
    }

    if (c < 0xf0) {
        cp = (c & 0x0f) << 12 | (s[i + 1] & 0x3f) << 6 | (s[i + 2] & 0x3f);
        *cls = kvr_tok_uclass_get(m->uc, cp);
        return 3;
    }

    cp = (c & 0x07) << 18 | (s[i + 1] & 0x3f) << 12 | (s[i + 2] & 0x3f) << 6
         | (s[i + 3] & 0x3f);
    *cls = kvr_tok_uclass_get(m->uc, cp);

    return 4;
}


/*
 * The letters of (1) and (2) from q: returns where (1) ends, 0 when it
 * fails, and sets *end2 to where (2) ends, 0 when it fails.  (1): UP* as
 * far as it goes, then LOW+ from there if the next char is LOW; if not,
 * UP* gives chars back until LOW+ can take one, i.e. (1) ends after the
 * last UP char that is LOW too (Lm, Lo, M).  (2): UP+ then LOW*.
 */
static kvr_o200k_inline size_t
kvr_o200k_words(const kvr_tok_o200k_t *m, const uint8_t *s, size_t len,
    size_t q, size_t *end2)
{
    size_t    j, n, last_low;
    unsigned  cls;

    j = q;
    last_low = 0;
    cls = 0;
    n = 0;

    while (j < len) {
        n = kvr_o200k_char(m, s, j, &cls);

        if (!(cls & KVR_O200K_UP)) {
            break;
        }

        j += n;

        if (cls & KVR_O200K_LOW) {
            last_low = j;
        }
    }

    if (j < len && (cls & KVR_O200K_LOW)) {
        /* LOW+ (or LOW* of (2)) over the rest of the word */
        do {
            j += n;

            if (j == len) {
                break;
            }

            n = kvr_o200k_char(m, s, j, &cls);

        } while (cls & KVR_O200K_LOW);

        *end2 = j;

        return j;
    }

    *end2 = (j > q) ? j : 0;

    return last_low;
}


/* (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[j]: its length or 0; ſ folds to s */
static kvr_o200k_inline size_t
kvr_o200k_contraction(const uint8_t *s, size_t len, size_t j)
{
    uint8_t  c, d;

    if (j + 1 >= len || s[j] != '\'') {
        return 0;
    }

    c = s[j + 1] | 0x20;

    if (c == 's' || c == 't' || c == 'm' || c == 'd') {
        return 2;
    }

    if (j + 2 >= len) {
        return 0;
    }

    /* U+017F (ſ) is C5 BF; 0x20 | 0xc5 is 0xe5 */
    if (s[j + 1] == 0xc5 && s[j + 2] == 0xbf) {
        return 3;
    }

    d = s[j + 2] | 0x20;

    if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e')
        || (c == 'l' && d == 'l'))
    {
        return 3;
    }

    return 0;
}


/* the length of the match at s[i], 0 when none starts there */
static kvr_o200k_inline size_t
kvr_o200k_match(const kvr_tok_o200k_t *m, const uint8_t *s, size_t len,
    size_t i)
{
    int       prefix;
    size_t    j, k, n, n0, nl, last, e, e2, e2_prefixed;
    unsigned  c0, cls;

    n0 = kvr_o200k_char(m, s, i, &c0);

    /* [^\r\n\p{L}\p{N}]? is taken first, given up if the rest fails */
    prefix = !(c0 & (KVR_O200K_L | KVR_O200K_N)) && s[i] != '\r'
             && s[i] != '\n' && i + n0 < len;

    e2_prefixed = 0;
    e2 = 0;

    if (prefix) {
        e = kvr_o200k_words(m, s, len, i + n0, &e2_prefixed);
        if (e != 0) {
            return e + kvr_o200k_contraction(s, len, e) - i;
        }
    }

    if (c0 & (KVR_O200K_UP | KVR_O200K_LOW)) {
        e = kvr_o200k_words(m, s, len, i, &e2);
        if (e != 0) {
            return e + kvr_o200k_contraction(s, len, e) - i;
        }
    }

    /* (2), prefixed first: only its UP+ run can be left after (1) */
    e = e2_prefixed ? e2_prefixed : e2;

    if (e != 0) {
        return e + kvr_o200k_contraction(s, len, e) - i;
    }

    /* \p{N}{1,3} */
    if (c0 & KVR_O200K_N) {
        j = i + n0;

        for (k = 1; k < 3 && j < len; k++) {
            n = kvr_o200k_char(m, s, j, &cls);

            if (!(cls & KVR_O200K_N)) {
                break;
            }

            j += n;
        }

        return j - i;
    }

    /*  ?[^\s\p{L}\p{N}]+[\r\n/]* */
    j = i;
    cls = c0;
    n = n0;

    if (s[i] == ' ' && i + 1 < len) {
        n = kvr_o200k_char(m, s, i + 1, &cls);
        j = i + 1;

        if (cls & (KVR_O200K_SPACE | KVR_O200K_L | KVR_O200K_N)) {
            j = i;
            cls = c0;
            n = n0;
        }
    }

    if (!(cls & (KVR_O200K_SPACE | KVR_O200K_L | KVR_O200K_N))) {
        do {
            j += n;

            if (j == len) {
                break;
            }

            n = kvr_o200k_char(m, s, j, &cls);

        } while (!(cls & (KVR_O200K_SPACE | KVR_O200K_L | KVR_O200K_N)));

        while (j < len && (s[j] == '\r' || s[j] == '\n' || s[j] == '/')) {
            j++;
        }

        return j - i;
    }

    if (!(c0 & KVR_O200K_SPACE)) {
        return 0;
    }

    /*
     * \s*[\r\n]+ ends after the run's last CR or LF; else \s+(?!\S) gives
     * the run's last char back before a non-space, when it has two;
     * else \s+
     */
    nl = 0;
    last = i;

    for (j = i; j < len; j += n) {
        n = kvr_o200k_char(m, s, j, &cls);

        if (!(cls & KVR_O200K_SPACE)) {
            break;
        }

        last = j;

        if (s[j] == '\r' || s[j] == '\n') {
            nl = j + 1;
        }
    }

    if (nl != 0) {
        return nl - i;
    }

    if (j < len && last > i) {
        return last - i;
    }

    return j - i;
}


int
kvr_tok_o200k_split(const kvr_tok_o200k_t *m, const uint8_t *s, size_t len,
    kvr_tok_piece_pt piece, void *ctx)
{
    int       rc;
    size_t    i, n, gap;
    unsigned  cls;

    /* as PCRE2 searches: a match at the first place one starts */
    gap = 0;

    for (i = 0; i < len; i += n) {
        n = kvr_o200k_match(m, s, len, i);

        if (n == 0) {
            n = kvr_o200k_char(m, s, i, &cls);
            continue;
        }

        rc = kvr_tok_piece_match(piece, ctx, s, &gap, i, n);
        if (rc != 0) {
            return rc;
        }
    }

    return gap < len ? piece(ctx, s + gap, len - gap) : 0;
}
