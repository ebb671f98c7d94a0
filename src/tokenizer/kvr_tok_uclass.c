/*
 * Copyright (C) kvroute developers
 *
 * Code point classes, two ways that give the same table:
 *   - from utf8proc 2.8's general categories (Unicode 15) plus the code
 *     points kvr_tok_pcre2_missing adds: about 10 ms;
 *   - probed from PCRE2: every class matched as runs over one text
 *     holding each code point in order, so that a match's bytes decode to
 *     the very code points it covers: several hundred ms.
 * The first is taken when utf8proc has Unicode 15 and every class is
 * made of \s and \p{X} only; t/unit/test_tok_o200k.c checks that both
 * agree on every code point.  The flat table is then cut into rows of
 * 256 code points, equal rows stored once (unassigned planes, CJK).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "kvr_tok_pretok.h"
#include "kvr_tok_uclass.h"
#include "kvr_tok_unicode.h"


#define KVR_UCLASS_CODE_POINTS  0x110000
#define KVR_UCLASS_BLOCKS       (KVR_UCLASS_CODE_POINTS >> 8)
#define KVR_UCLASS_ROW_SLOTS    8192    /* > KVR_UCLASS_BLOCKS, power of 2 */

/* the Unicode version of utf8proc that the missing lists complete */
#define KVR_UCLASS_UTF8PROC_UNICODE  "15.0.0"


/* a class from utf8proc: categories, plus \s, plus what PCRE2 lacks */
typedef struct {
    uint32_t                cats;          /* 1 << UTF8PROC_CATEGORY_* */
    int                     space;
    const kvr_tok_range_t  *extra[KVR_TOK_UCLASS_MAX];
    size_t                  n_extra[KVR_TOK_UCLASS_MAX];
    size_t                  n_lists;
} kvr_uclass_set_t;


#define kvr_uclass_cat(c)  (1u << UTF8PROC_CATEGORY_ ## c)


/* the utf8proc categories of \p{name} */
static uint32_t
kvr_uclass_cats(const char *name, size_t len)
{
    static const struct {
        const char  *name;
        uint32_t     cats;
    }  map[] = {
        { "L", kvr_uclass_cat(LU) | kvr_uclass_cat(LL) | kvr_uclass_cat(LT)
               | kvr_uclass_cat(LM) | kvr_uclass_cat(LO) },
        { "Lu", kvr_uclass_cat(LU) },
        { "Ll", kvr_uclass_cat(LL) },
        { "Lt", kvr_uclass_cat(LT) },
        { "Lm", kvr_uclass_cat(LM) },
        { "Lo", kvr_uclass_cat(LO) },
        { "M", kvr_uclass_cat(MN) | kvr_uclass_cat(MC) | kvr_uclass_cat(ME) },
        { "N", kvr_uclass_cat(ND) | kvr_uclass_cat(NL) | kvr_uclass_cat(NO) },
        { "P", kvr_uclass_cat(PC) | kvr_uclass_cat(PD) | kvr_uclass_cat(PS)
               | kvr_uclass_cat(PE) | kvr_uclass_cat(PI) | kvr_uclass_cat(PF)
               | kvr_uclass_cat(PO) },
        { "S", kvr_uclass_cat(SM) | kvr_uclass_cat(SC) | kvr_uclass_cat(SK)
               | kvr_uclass_cat(SO) },
    };

    size_t  i;

    for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (strlen(map[i].name) == len
            && memcmp(map[i].name, name, len) == 0)
        {
            return map[i].cats;
        }
    }

    return 0;
}


/*
 * \s, \p{X} or [...] of those: 0 and the set, -1 for anything else (the
 * class is then probed)
 */
static int
kvr_uclass_parse(const char *cls, kvr_uclass_set_t *set)
{
    int          bracket;
    uint32_t     cats;
    const char  *p, *end;

    memset(set, 0, sizeof(kvr_uclass_set_t));
    p = cls;
    bracket = (*p == '[');
    p += bracket;

    do {
        if (p[0] == '\\' && p[1] == 's') {
            set->space = 1;
            p += 2;
            continue;
        }

        if (strncmp(p, "\\p{", 3) != 0 || set->n_lists == KVR_TOK_UCLASS_MAX
            || (end = strchr(p + 3, '}')) == NULL)
        {
            return -1;
        }

        cats = kvr_uclass_cats(p + 3, (size_t) (end - p - 3));
        set->extra[set->n_lists] = kvr_tok_pcre2_missing(p + 3,
                                       (size_t) (end - p - 3),
                                       &set->n_extra[set->n_lists]);

        if (cats == 0 || set->extra[set->n_lists] == NULL) {
            return -1;
        }

        set->cats |= cats;
        set->n_lists++;
        p = end + 1;

    } while (bracket && *p != ']' && *p != '\0');

    return (bracket ? (p[0] == ']' && p[1] == '\0') : (*p == '\0')) ? 0 : -1;
}


static void
kvr_uclass_set_ranges(uint8_t *flat, const kvr_tok_range_t *ranges,
    size_t n, uint8_t bit)
{
    size_t    i;
    uint32_t  cp;

    for (i = 0; i < n; i++) {
        for (cp = ranges[i].first; cp <= ranges[i].last; cp++) {
            flat[cp] |= bit;
        }
    }
}


/* the classes from utf8proc; -1 when one is beyond \s and \p{X} */
static int
kvr_uclass_from_utf8proc(const char *const *classes, size_t n,
    uint8_t *flat)
{
    size_t             i, k;
    uint8_t            bit;
    uint32_t           cp, cats[KVR_TOK_UCLASS_MAX];
    kvr_uclass_set_t   sets[KVR_TOK_UCLASS_MAX];

    for (i = 0; i < n; i++) {
        if (kvr_uclass_parse(classes[i], &sets[i]) != 0) {
            return -1;
        }

        cats[i] = sets[i].cats;
    }

    for (cp = 0; cp < KVR_UCLASS_CODE_POINTS; cp++) {
        k = (size_t) utf8proc_category((utf8proc_int32_t) cp);

        for (i = 0; i < n; i++) {
            if ((cats[i] >> k) & 1) {
                flat[cp] |= (uint8_t) (1u << i);
            }
        }
    }

    for (i = 0; i < n; i++) {
        bit = (uint8_t) (1u << i);

        if (sets[i].space) {
            kvr_uclass_set_ranges(flat, kvr_tok_white_space,
                                  kvr_tok_white_space_n, bit);
        }

        for (k = 0; k < sets[i].n_lists; k++) {
            kvr_uclass_set_ranges(flat, sets[i].extra[k], sets[i].n_extra[k],
                                  bit);
        }
    }

    return 0;
}


/* every code point but the surrogates, in order, as UTF-8 */
static uint8_t *
kvr_uclass_text(size_t *len)
{
    size_t    n;
    uint8_t  *text, *p;
    uint32_t  cp;

    text = malloc(4 * KVR_UCLASS_CODE_POINTS);
    if (text == NULL) {
        return NULL;
    }

    p = text;

    for (cp = 0; cp < KVR_UCLASS_CODE_POINTS; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) {
            continue;
        }

        if (cp < 0x80) {
            *p++ = (uint8_t) cp;
            continue;
        }

        if (cp < 0x800) {
            *p++ = (uint8_t) (0xc0 | cp >> 6);
            n = 1;

        } else if (cp < 0x10000) {
            *p++ = (uint8_t) (0xe0 | cp >> 12);
            n = 2;

        } else {
            *p++ = (uint8_t) (0xf0 | cp >> 18);
            n = 3;
        }

        while (n-- > 0) {
            *p++ = (uint8_t) (0x80 | ((cp >> (6 * n)) & 0x3f));
        }
    }

    *len = (size_t) (p - text);

    return text;
}


/* sets bit in flat[cp] for each code point the class matches */
static int
kvr_uclass_probe_one(const char *cls, uint8_t bit, const uint8_t *text,
    size_t len, uint8_t *flat, char *err, size_t errlen)
{
    int                rc, jit;
    char              *rewritten, *pattern;
    size_t             at, i, n;
    uint32_t           cp;
    PCRE2_SIZE         erroff, *ov;
    pcre2_code        *code;
    pcre2_match_data  *md;

    rewritten = kvr_tok_pretok_rewrite(cls, err, errlen);
    if (rewritten == NULL) {
        return -1;
    }

    /*
     * a run at a time (far fewer matches than code points), possessive:
     * the class is one atom, and a run of 100k letters needs no stack
     */
    pattern = malloc(strlen(rewritten) + 3);
    if (pattern == NULL) {
        free(rewritten);
        snprintf(err, errlen, "pre_tokenizer: out of memory");
        return -1;
    }

    sprintf(pattern, "%s++", rewritten);
    free(rewritten);

    code = pcre2_compile((PCRE2_SPTR) pattern, PCRE2_ZERO_TERMINATED,
                         PCRE2_UTF | PCRE2_UCP, &rc, &erroff, NULL);
    free(pattern);

    if (code == NULL) {
        snprintf(err, errlen, "pre_tokenizer: class %.40s does not compile",
                 cls);
        return -1;
    }

    jit = (pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0);

    md = pcre2_match_data_create_from_pattern(code, NULL);
    if (md == NULL) {
        pcre2_code_free(code);
        snprintf(err, errlen, "pre_tokenizer: out of memory");
        return -1;
    }

    at = 0;

    for ( ;; ) {
        rc = jit ? pcre2_jit_match(code, text, len, at, PCRE2_NO_UTF_CHECK,
                                   md, NULL)
                 : pcre2_match(code, text, len, at, PCRE2_NO_UTF_CHECK, md,
                               NULL);
        if (rc < 0) {
            break;
        }

        ov = pcre2_get_ovector_pointer(md);

        for (i = ov[0]; i < ov[1]; i += n) {
            n = kvr_tok_utf8_decode(text + i, len - i, &cp);
            flat[cp] |= bit;
        }

        /* a class matches one char or more: never empty */
        at = ov[1];
    }

    pcre2_match_data_free(md);
    pcre2_code_free(code);

    if (rc != PCRE2_ERROR_NOMATCH) {
        snprintf(err, errlen, "pre_tokenizer: class %.40s failed to match",
                 cls);
        return -1;
    }

    return 0;
}


static int
kvr_uclass_from_pcre2(const char *const *classes, size_t n, uint8_t *flat,
    char *err, size_t errlen)
{
    int       rc;
    size_t    i, len;
    uint8_t  *text;

    text = kvr_uclass_text(&len);
    if (text == NULL) {
        snprintf(err, errlen, "pre_tokenizer: out of memory");
        return -1;
    }

    rc = 0;

    for (i = 0; rc == 0 && i < n; i++) {
        rc = kvr_uclass_probe_one(classes[i], (uint8_t) (1u << i), text, len,
                                  flat, err, errlen);
    }

    free(text);

    return rc;
}


/* the flat table as blocks of shared rows */
static int
kvr_uclass_compress(kvr_tok_uclass_t *uc, const uint8_t *flat)
{
    size_t     b, h, i, n;
    uint8_t   *rows;
    uint16_t  *slots;
    uint64_t   hash;

    slots = malloc(KVR_UCLASS_ROW_SLOTS * sizeof(uint16_t));
    uc->blocks = malloc(KVR_UCLASS_BLOCKS * sizeof(uint16_t));
    rows = malloc(KVR_UCLASS_CODE_POINTS);

    if (slots == NULL || uc->blocks == NULL || rows == NULL) {
        free(slots);
        free(rows);
        return -1;
    }

    memset(slots, 0xff, KVR_UCLASS_ROW_SLOTS * sizeof(uint16_t));
    n = 0;

    for (b = 0; b < KVR_UCLASS_BLOCKS; b++) {
        hash = XXH3_64bits(flat + (b << 8), 256);

        for (h = hash & (KVR_UCLASS_ROW_SLOTS - 1); /* void */ ;
             h = (h + 1) & (KVR_UCLASS_ROW_SLOTS - 1))
        {
            i = slots[h];

            if (i == 0xffff) {
                memcpy(rows + (n << 8), flat + (b << 8), 256);
                slots[h] = (uint16_t) n;
                i = n++;
                break;
            }

            if (memcmp(rows + (i << 8), flat + (b << 8), 256) == 0) {
                break;
            }
        }

        uc->blocks[b] = (uint16_t) i;
    }

    free(slots);

    /* keep only the rows in use */
    uc->rows = realloc(rows, n << 8);
    if (uc->rows == NULL) {
        uc->rows = rows;
    }

    uc->n_rows = n;

    return 0;
}


static kvr_tok_uclass_t *
kvr_uclass_create(const char *const *classes, size_t n, int probe,
    char *err, size_t errlen)
{
    uint8_t           *flat;
    kvr_tok_uclass_t  *uc;

    if (n > KVR_TOK_UCLASS_MAX) {
        snprintf(err, errlen, "pre_tokenizer: too many classes");
        return NULL;
    }

    uc = calloc(1, sizeof(kvr_tok_uclass_t));
    flat = calloc(KVR_UCLASS_CODE_POINTS, 1);

    if (uc == NULL || flat == NULL) {
        snprintf(err, errlen, "pre_tokenizer: out of memory");
        goto failed;
    }

    if (probe
        || strcmp(utf8proc_unicode_version(), KVR_UCLASS_UTF8PROC_UNICODE)
           != 0
        || kvr_uclass_from_utf8proc(classes, n, flat) != 0)
    {
        memset(flat, 0, KVR_UCLASS_CODE_POINTS);

        if (kvr_uclass_from_pcre2(classes, n, flat, err, errlen) != 0) {
            goto failed;
        }
    }

    if (kvr_uclass_compress(uc, flat) != 0) {
        snprintf(err, errlen, "pre_tokenizer: out of memory");
        goto failed;
    }

    free(flat);

    return uc;

failed:

    free(flat);
    kvr_tok_uclass_free(uc);

    return NULL;
}


kvr_tok_uclass_t *
kvr_tok_uclass_create(const char *const *classes, size_t n, char *err,
    size_t errlen)
{
    return kvr_uclass_create(classes, n, 0, err, errlen);
}


kvr_tok_uclass_t *
kvr_tok_uclass_probe(const char *const *classes, size_t n, char *err,
    size_t errlen)
{
    return kvr_uclass_create(classes, n, 1, err, errlen);
}


void
kvr_tok_uclass_free(kvr_tok_uclass_t *uc)
{
    if (uc == NULL) {
        return;
    }

    free(uc->blocks);
    free(uc->rows);
    free(uc);
}
