/*
 * Copyright (C) kvroute developers
 *
 * Unit tests of the hand-coded o200k matcher (gpt-oss's pre-tokenizer
 * regex, src/tokenizer/kvr_tok_o200k.c) against PCRE2 running the
 * rewritten pattern, which the oracle tests hold equal to HF tokenizers:
 * the code point classes it reads (from utf8proc) against the same
 * classes probed from PCRE2, every code point in contexts that reach each
 * alternative, and random strings over code points of every class the
 * pattern names.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tok_ends.h"
#include "kvr_tok_pretok.h"
#include "kvr_tok_uclass.h"


/* gpt-oss's pre-tokenizer regex */
#define O200K_RE                                                             \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*"             \
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"             \
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"            \
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"             \
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+"              \
    "|\\s+(?!\\S)|\\s+"



static size_t
put_utf8(uint8_t *p, uint32_t cp)
{
    if (cp < 0x80) {
        p[0] = (uint8_t) cp;
        return 1;
    }

    if (cp < 0x800) {
        p[0] = (uint8_t) (0xc0 | cp >> 6);
        p[1] = (uint8_t) (0x80 | (cp & 0x3f));
        return 2;
    }

    if (cp < 0x10000) {
        p[0] = (uint8_t) (0xe0 | cp >> 12);
        p[1] = (uint8_t) (0x80 | ((cp >> 6) & 0x3f));
        p[2] = (uint8_t) (0x80 | (cp & 0x3f));
        return 3;
    }

    p[0] = (uint8_t) (0xf0 | cp >> 18);
    p[1] = (uint8_t) (0x80 | ((cp >> 12) & 0x3f));
    p[2] = (uint8_t) (0x80 | ((cp >> 6) & 0x3f));
    p[3] = (uint8_t) (0x80 | (cp & 0x3f));

    return 4;
}


/* 0 when the matcher and PCRE2 cut s alike */
static int
differs(kvr_tok_pretok_t *pt, const uint8_t *s, size_t len)
{
    int     failed;
    ends_t  a, b;

    a.n = 0;
    a.at = 0;
    b.n = 0;
    b.at = 0;

    failed = kvr_tok_pretok_split(pt, s, len, collect_end, &a)
             | kvr_tok_pretok_split_pcre2(pt, s, len, collect_end, &b);

    return failed || a.n != b.n
           || memcmp(a.ends, b.ends, a.n * sizeof(size_t)) != 0;
}


static void
show(const char *what, const uint8_t *s, size_t len)
{
    size_t  i;

    printf("# %s differs: \"", what);

    for (i = 0; i < len; i++) {
        printf(s[i] >= 0x20 && s[i] < 0x7f ? "%c" : "\\x%02x", s[i]);
    }

    printf("\"\n");
}


/*
 * Contexts around each code point c ('C' marks it): after a prefix
 * char, between upper and lower case letters, runs of it, before and
 * after digits, spaces, CR/LF and contractions
 */
static const char  *contexts[] = {
    "xCy CC1C\nC CC's C  a'CC\tCACa aCA CAb\xcb\xb0" "C\xe4\xb8\xad"
    "C\xcc\x81 C/\r\nC  C",
    "'Ca 'CCx 1CCC2C C'S'LLC'\xc5\xbf" "aC'Ve",
};


static void
test_every_code_point(kvr_tok_pretok_t *pt)
{
    int        bad;
    size_t     k, len;
    uint8_t    s[256];
    uint32_t   cp;
    const char *p;

    bad = 0;

    for (cp = 0; cp < 0x110000; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) {
            continue;
        }

        for (k = 0; k < sizeof(contexts) / sizeof(contexts[0]); k++) {
            len = 0;

            for (p = contexts[k]; *p != '\0'; p++) {
                if (*p == 'C') {
                    len += put_utf8(s + len, cp);

                } else {
                    s[len++] = (uint8_t) *p;
                }
            }

            if (differs(pt, s, len) && bad++ < 5) {
                show("code point context", s, len);
            }
        }
    }

    tap_ok(bad == 0, "o200k: matcher = PCRE2 on every code point in %zu "
           "contexts (%d differ)", sizeof(contexts) / sizeof(contexts[0]),
           bad);
}


/* code points of every class the pattern names, and its other chars */
static const uint32_t  alphabet[] = {
    'a', 'z', 's', 't', 'd', 'm', 'l', 'r', 'e', 'v', 'A', 'S', 'T', 'L',
    'R', 'E', 'V', 'M', 'D', 0x00df, 0x017f, 0x03c3, 0x00e9,   /* Ll */
    0x00c0, 0x03a3, 0x0130,                                     /* Lu */
    0x01c5, 0x1f88,                                             /* Lt */
    0x02b0, 0x02c6, 0x30fc,                                     /* Lm */
    0x4e2d, 0x05d0, 0x0e01, 0x1c89, 0x13460,                   /* Lo */
    0x0301, 0x0903, 0x20dd, 0x1df6,                             /* M */
    '0', '7', 0x0661, 0x00b2, 0x216b, 0x00bd, 0x10d40,         /* N */
    ' ', ' ', ' ', '\t', '\n', '\r', 0x0b, 0x0c, 0x00a0, 0x2003,
    0x3000, 0x0085, 0x2028, 0x180e, 0x200b, 0xfeff,            /* spaces */
    '\'', '\'', '\'', '"', '/', '/', '.', ',', '-', '!', '?', '$',
    0x20ac, 0x2019, 0x01, 0x7f, 0x1f600,                       /* other */
};


static void
test_random(kvr_tok_pretok_t *pt)
{
    int        i, j, n, bad;
    size_t     len;
    uint8_t    s[256];
    uint32_t   seed;

    seed = 20261202;
    bad = 0;

    for (i = 0; i < 300000; i++) {
        seed = seed * 1103515245 + 12345;
        n = 1 + (seed >> 16) % 40;
        len = 0;

        for (j = 0; j < n; j++) {
            seed = seed * 1103515245 + 12345;
            len += put_utf8(s + len, alphabet[(seed >> 16)
                                              % (sizeof(alphabet)
                                                 / sizeof(alphabet[0]))]);
        }

        if (differs(pt, s, len) && bad++ < 5) {
            show("random string", s, len);
        }
    }

    tap_ok(bad == 0, "o200k: matcher = PCRE2 on 300k random strings "
           "(%d differ)", bad);
}


/* o200k's classes and DeepSeek-V3's; then every category on its own */
static const char  *classes[2][KVR_TOK_UCLASS_MAX] = {
    { "\\s", "\\p{L}", "\\p{N}", "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]",
      "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]", "\\p{P}", "\\p{S}", "[\\p{L}\\p{M}]" },
    { "\\p{Lu}", "\\p{Ll}", "\\p{Lt}", "\\p{Lm}", "\\p{Lo}", "\\p{M}",
      "[\\s\\p{N}]", "[\\p{P}\\p{S}]" },
};


/* the classes from utf8proc = the classes probed from PCRE2 */
static void
test_classes(void)
{
    int                 bad;
    char                err[256];
    size_t              k;
    uint32_t            cp;
    kvr_tok_uclass_t   *made, *probed;

    for (k = 0; k < 2; k++) {
        made = kvr_tok_uclass_create(classes[k], KVR_TOK_UCLASS_MAX, err,
                                     sizeof(err));
        probed = kvr_tok_uclass_probe(classes[k], KVR_TOK_UCLASS_MAX, err,
                                      sizeof(err));
        bad = (made == NULL || probed == NULL);

        for (cp = 0; !bad && cp < 0x110000; cp++) {
            if (kvr_tok_uclass_get(made, cp)
                != kvr_tok_uclass_get(probed, cp))
            {
                printf("# U+%04X: %02x from utf8proc, %02x from PCRE2\n", cp,
                       kvr_tok_uclass_get(made, cp),
                       kvr_tok_uclass_get(probed, cp));
                bad = 1;
            }
        }

        tap_ok(!bad, "classes %zu: utf8proc's = PCRE2's on every code point "
               "(%s)", k, made && probed ? "both made" : err);

        kvr_tok_uclass_free(made);
        kvr_tok_uclass_free(probed);
    }
}


int
main(void)
{
    char               err[256];
    kvr_tok_pretok_t  *pt;

    test_classes();

    pt = kvr_tok_pretok_create(O200K_RE, err, sizeof(err));
    tap_ok(pt != NULL, "o200k: compiles (%s)", pt ? "ok" : err);

    if (pt != NULL) {
        test_every_code_point(pt);
        test_random(pt);
        kvr_tok_pretok_free(pt);
    }

    return tap_done();
}
