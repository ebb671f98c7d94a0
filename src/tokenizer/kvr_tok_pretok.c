/*
 * Copyright (C) kvroute developers
 *
 * Pre-tokenizer regex split with PCRE2.  Only patterns known to translate
 * exactly are accepted; the translation itself is a character walk that
 * tracks whether it is inside a [...] class.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "kvr_tokenizer.h"
#include "kvr_tok_o200k.h"
#include "kvr_tok_pretok.h"
#include "kvr_tok_unicode.h"


/* the Unicode version whose gaps kvr_tok_pcre2_missing_* fill */
#define KVR_PRETOK_PCRE2_UNICODE  "14.0.0"

#define KVR_PRETOK_MATCH_LIMIT    100000000
#define KVR_PRETOK_JIT_STACK_MIN  (32 * 1024)
#define KVR_PRETOK_JIT_STACK_MAX  (4 * 1024 * 1024)


/* Oniguruma's \s (Unicode White_Space) as PCRE2 class contents */
#define KVR_PRETOK_WS                                                        \
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"   \
    "\\x{202F}\\x{205F}\\x{3000}"


struct kvr_tok_pretok_s {
    int                  jit;        /* 0: JIT unavailable, interpret */
    int                  ascii;      /* KVR_PRETOK_ASCII_*: the matcher */
    kvr_tok_o200k_t     *o200k;      /* gpt-oss: all text, not only ASCII */
    pcre2_code          *code;
    pcre2_match_data    *match_data;
    pcre2_match_context *match_ctx;
    pcre2_jit_stack     *jit_stack;
};


/* the hand-coded matchers of ASCII text, by pattern */
#define KVR_PRETOK_ASCII_NONE    0    /* PCRE2 only */
#define KVR_PRETOK_ASCII_QWEN    1    /* \p{N} */
#define KVR_PRETOK_ASCII_LLAMA3  3    /* \p{N}{1,3} */
#define KVR_PRETOK_ASCII_O200K   4    /* kvr_tok_o200k.c, any text */
#define KVR_PRETOK_ASCII_DIGITS3  5    /* DeepSeek-V3's three */
#define KVR_PRETOK_ASCII_NO_MATCH 6
#define KVR_PRETOK_ASCII_DEEPSEEK 7


/*
 * The Split patterns known to translate exactly (verified against Rust on
 * every code point and on fuzz strings), with their ASCII matcher.
 */
typedef struct {
    const char  *pattern;
    int          ascii;
} kvr_pretok_known_t;


static const kvr_pretok_known_t  kvr_pretok_known[] = {

    /* Qwen2/2.5/3 */
    { "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
      "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      KVR_PRETOK_ASCII_QWEN },

    /* Llama-3.x */
    { "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
      "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)"
      "|\\s+", KVR_PRETOK_ASCII_LLAMA3 },

    /* DeepSeek-V3 / R1: digits, CJK runs, then the rest (3 Splits) */
    { "\\p{N}{1,3}", KVR_PRETOK_ASCII_DIGITS3 },

    { "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-"
      "\xe3\x83\xbf]+", KVR_PRETOK_ASCII_NO_MATCH },

    { "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+"
      "|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
      "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
      KVR_PRETOK_ASCII_DEEPSEEK },

    /* gpt-oss (o200k) */
    { "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*"
      "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
      "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
      "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
      "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+"
      "|\\s+(?!\\S)|\\s+", KVR_PRETOK_ASCII_O200K },

    { NULL, 0 }
};


typedef struct {
    char    *data;
    size_t   len;
    size_t   cap;
    int      failed;
} kvr_pretok_str_t;


static void
kvr_pretok_add_n(kvr_pretok_str_t *str, const char *s, size_t len)
{
    size_t   cap;
    char    *data;

    if (str->failed) {
        return;
    }

    if (str->len + len + 1 > str->cap) {
        cap = (str->len + len + 1) * 2;
        data = realloc(str->data, cap);
        if (data == NULL) {
            str->failed = 1;
            return;
        }

        str->data = data;
        str->cap = cap;
    }

    memcpy(str->data + str->len, s, len);
    str->len += len;
    str->data[str->len] = '\0';
}


static void
kvr_pretok_add(kvr_pretok_str_t *str, const char *s)
{
    kvr_pretok_add_n(str, s, strlen(s));
}


static void
kvr_pretok_add_ranges(kvr_pretok_str_t *str, const kvr_tok_range_t *ranges,
    size_t n)
{
    char    item[40];
    size_t  i;

    for (i = 0; i < n; i++) {
        if (ranges[i].first == ranges[i].last) {
            snprintf(item, sizeof(item), "\\x{%x}", ranges[i].first);

        } else {
            snprintf(item, sizeof(item), "\\x{%x}-\\x{%x}",
                     ranges[i].first, ranges[i].last);
        }

        kvr_pretok_add(str, item);
    }
}


char *
kvr_tok_pretok_rewrite(const char *pattern, char *err, size_t errlen)
{
    int                     in_class;
    char                    one[3];
    size_t                  n_extra;
    const char             *p, *end;
    kvr_pretok_str_t        str;
    const kvr_tok_range_t  *extra;

    memset(&str, 0, sizeof(str));
    in_class = 0;
    p = pattern;

    while (*p != '\0') {

        if (p[0] == '\\' && p[1] == 's') {
            kvr_pretok_add(&str, in_class ? KVR_PRETOK_WS
                                          : "[" KVR_PRETOK_WS "]");
            p += 2;
            continue;
        }

        if (p[0] == '\\' && p[1] == 'S') {
            if (in_class) {
                snprintf(err, errlen, "regex: \\S inside a class");
                goto failed;
            }

            kvr_pretok_add(&str, "[^" KVR_PRETOK_WS "]");
            p += 2;
            continue;
        }

        if (strncmp(p, "\\p{", 3) == 0) {
            /* a general category, with what PCRE2 10.42 lacks of it */
            end = strchr(p + 3, '}');
            extra = (end == NULL) ? NULL
                    : kvr_tok_pcre2_missing(p + 3, (size_t) (end - p - 3),
                                            &n_extra);

            if (extra == NULL) {
                snprintf(err, errlen, "regex: property %.12s not supported",
                         p);
                goto failed;
            }

            if (!in_class) {
                kvr_pretok_add(&str, "[");
            }

            kvr_pretok_add_n(&str, p, (size_t) (end - p + 1));
            kvr_pretok_add_ranges(&str, extra, n_extra);

            if (!in_class) {
                kvr_pretok_add(&str, "]");
            }

            p = end + 1;
            continue;
        }

        if (p[0] == '\\') {
            /* only escapes that mean the same in both engines */
            if (p[1] == '\0' || strchr("rnt'\\[]-^.?*+(){}|", p[1]) == NULL)
            {
                snprintf(err, errlen, "regex: escape \\%c not supported",
                         p[1] ? p[1] : '0');
                goto failed;
            }

            one[0] = p[0];
            one[1] = p[1];
            one[2] = '\0';
            kvr_pretok_add(&str, one);
            p += 2;
            continue;
        }

        if (p[0] == '[') {
            if (in_class) {
                snprintf(err, errlen, "regex: nested class not supported");
                goto failed;
            }

            in_class = 1;

        } else if (p[0] == ']' && in_class) {
            in_class = 0;
        }

        one[0] = p[0];
        one[1] = '\0';
        kvr_pretok_add(&str, one);
        p++;
    }

    if (in_class) {
        snprintf(err, errlen, "regex: unterminated class");
        goto failed;
    }

    if (str.failed || str.data == NULL) {
        snprintf(err, errlen, "regex: out of memory");
        goto failed;
    }

    return str.data;

failed:

    free(str.data);

    return NULL;
}


kvr_tok_pretok_t *
kvr_tok_pretok_create(const char *pattern, char *err, size_t errlen)
{
    int                i, known, rc;
    char              *rewritten;
    uint32_t           min_len;
    char               version[32];
    PCRE2_SIZE         erroff;
    PCRE2_UCHAR        msg[256];
    kvr_tok_pretok_t  *pt;

    known = -1;

    for (i = 0; kvr_pretok_known[i].pattern != NULL; i++) {
        if (strcmp(pattern, kvr_pretok_known[i].pattern) == 0) {
            known = kvr_pretok_known[i].ascii;
        }
    }

    if (known < 0) {
        snprintf(err, errlen, "pre_tokenizer: Split regex is not one of "
                 "the patterns known to translate to PCRE2 exactly");
        return NULL;
    }

    if (pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, version) < 0
        || strcmp(version, KVR_PRETOK_PCRE2_UNICODE) != 0)
    {
        snprintf(err, errlen, "pre_tokenizer: PCRE2 has Unicode %s tables, "
                 "the letter/number fixes are for %s", version,
                 KVR_PRETOK_PCRE2_UNICODE);
        return NULL;
    }

    rewritten = kvr_tok_pretok_rewrite(pattern, err, errlen);
    if (rewritten == NULL) {
        return NULL;
    }

    pt = calloc(1, sizeof(kvr_tok_pretok_t));
    if (pt == NULL) {
        free(rewritten);
        snprintf(err, errlen, "pre_tokenizer: out of memory");
        return NULL;
    }

    pt->ascii = known;

    pt->code = pcre2_compile((PCRE2_SPTR) rewritten, PCRE2_ZERO_TERMINATED,
                             PCRE2_UTF | PCRE2_UCP, &rc, &erroff, NULL);
    free(rewritten);

    if (pt->code == NULL) {
        pcre2_get_error_message(rc, msg, sizeof(msg));
        snprintf(err, errlen, "pre_tokenizer: PCRE2 compile failed at %zu: "
                 "%s", (size_t) erroff, (char *) msg);
        goto failed;
    }

    /*
     * an empty match would split a gap in HF (find_iter) and not here;
     * none of the known patterns can match empty
     */
    if (pcre2_pattern_info(pt->code, PCRE2_INFO_MINLENGTH, &min_len) != 0
        || min_len == 0)
    {
        snprintf(err, errlen, "pre_tokenizer: Split regex can match the "
                 "empty string");
        goto failed;
    }

    /* without JIT (e.g. no executable memory) the interpreter agrees */
    pt->jit = (pcre2_jit_compile(pt->code, PCRE2_JIT_COMPLETE) == 0);

    pt->match_data = pcre2_match_data_create_from_pattern(pt->code, NULL);
    pt->match_ctx = pcre2_match_context_create(NULL);
    pt->jit_stack = pcre2_jit_stack_create(KVR_PRETOK_JIT_STACK_MIN,
                                           KVR_PRETOK_JIT_STACK_MAX, NULL);

    if (pt->match_data == NULL || pt->match_ctx == NULL
        || pt->jit_stack == NULL)
    {
        snprintf(err, errlen, "pre_tokenizer: out of memory");
        goto failed;
    }

    pcre2_jit_stack_assign(pt->match_ctx, NULL, pt->jit_stack);
    pcre2_set_match_limit(pt->match_ctx, KVR_PRETOK_MATCH_LIMIT);
    pcre2_set_depth_limit(pt->match_ctx, KVR_PRETOK_MATCH_LIMIT);

    if (known == KVR_PRETOK_ASCII_O200K) {
        pt->o200k = kvr_tok_o200k_create(err, errlen);
        if (pt->o200k == NULL) {
            goto failed;
        }
    }

    return pt;

failed:

    kvr_tok_pretok_free(pt);

    return NULL;
}


void
kvr_tok_pretok_free(kvr_tok_pretok_t *pt)
{
    if (pt == NULL) {
        return;
    }

    kvr_tok_o200k_free(pt->o200k);
    pcre2_jit_stack_free(pt->jit_stack);
    pcre2_match_context_free(pt->match_ctx);
    pcre2_match_data_free(pt->match_data);
    pcre2_code_free(pt->code);
    free(pt);
}


int
kvr_tok_pretok_find(kvr_tok_pretok_t *pt, const uint8_t *s, size_t len,
    size_t from, size_t *start, size_t *end)
{
    int          rc;
    PCRE2_SIZE  *ov;

    if (from >= len) {
        return 1;
    }

    if (pt->jit) {
        rc = pcre2_jit_match(pt->code, s, len, from, PCRE2_NO_UTF_CHECK,
                             pt->match_data, pt->match_ctx);

    } else {
        rc = pcre2_match(pt->code, s, len, from, PCRE2_NO_UTF_CHECK,
                         pt->match_data, pt->match_ctx);
    }

    if (rc == PCRE2_ERROR_NOMATCH) {
        return 1;
    }

    if (rc < 0) {
        return rc == PCRE2_ERROR_NOMEMORY ? KVR_TOK_NO_MEMORY : KVR_TOK_REGEX;
    }

    ov = pcre2_get_ovector_pointer(pt->match_data);
    *start = ov[0];
    *end = ov[1];

    return 0;
}


int
kvr_tok_pretok_split_pcre2(kvr_tok_pretok_t *pt, const uint8_t *s,
    size_t len, kvr_tok_piece_pt piece, void *ctx)
{
    int          rc;
    size_t       gap, search, n;
    uint32_t     cp;
    PCRE2_SIZE  *ov;

    gap = 0;
    search = 0;

    while (search < len) {
        if (pt->jit) {
            rc = pcre2_jit_match(pt->code, s, len, search,
                                 PCRE2_NO_UTF_CHECK, pt->match_data,
                                 pt->match_ctx);

        } else {
            rc = pcre2_match(pt->code, s, len, search, PCRE2_NO_UTF_CHECK,
                             pt->match_data, pt->match_ctx);
        }

        if (rc == PCRE2_ERROR_NOMATCH) {
            break;
        }

        if (rc < 0) {
            return rc == PCRE2_ERROR_NOMEMORY ? KVR_TOK_NO_MEMORY
                                              : KVR_TOK_REGEX;
        }

        ov = pcre2_get_ovector_pointer(pt->match_data);

        if (ov[1] == ov[0]) {
            /* an empty match is no piece; look again one char later */
            n = kvr_tok_utf8_decode(s + ov[1], len - ov[1], &cp);
            search = ov[1] + (n ? n : 1);
            continue;
        }

        if (ov[0] > gap) {
            rc = piece(ctx, s + gap, ov[0] - gap);
            if (rc != 0) {
                return rc;
            }
        }

        rc = piece(ctx, s + ov[0], ov[1] - ov[0]);
        if (rc != 0) {
            return rc;
        }

        gap = ov[1];
        search = ov[1];
    }

    if (len > gap) {
        return piece(ctx, s + gap, len - gap);
    }

    return 0;
}


/* ASCII classes of the known patterns: \s is 09-0D and 20 */
#define KVR_ASCII_SPACE   1
#define KVR_ASCII_LETTER  2
#define KVR_ASCII_DIGIT   3
#define KVR_ASCII_OTHER   4


static int
kvr_pretok_ascii_class(uint8_t c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        return KVR_ASCII_LETTER;
    }

    if (c >= '0' && c <= '9') {
        return KVR_ASCII_DIGIT;
    }

    if (c == ' ' || (c >= 0x09 && c <= 0x0d)) {
        return KVR_ASCII_SPACE;
    }

    return KVR_ASCII_OTHER;
}


/* the length of the match at s[i] of the known patterns, ASCII only */
static size_t
kvr_pretok_ascii_match(const uint8_t *s, size_t len, size_t i,
    int max_digits)
{
    int     cls;
    size_t  j, k, nl;

#define CLS(p)  kvr_pretok_ascii_class(s[p])
#define LOW(p)  (s[p] | 0x20)

    cls = CLS(i);

    /* (?i:'s|'t|'re|'ve|'m|'ll|'d) */
    if (s[i] == '\'' && i + 1 < len) {
        if (LOW(i + 1) == 's' || LOW(i + 1) == 't' || LOW(i + 1) == 'm'
            || LOW(i + 1) == 'd')
        {
            return 2;
        }

        if (i + 2 < len
            && ((LOW(i + 1) == 'r' && LOW(i + 2) == 'e')
                || (LOW(i + 1) == 'v' && LOW(i + 2) == 'e')
                || (LOW(i + 1) == 'l' && LOW(i + 2) == 'l')))
        {
            return 3;
        }
    }

    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    j = i;

    if (cls != KVR_ASCII_LETTER && cls != KVR_ASCII_DIGIT && s[i] != '\r'
        && s[i] != '\n' && i + 1 < len && CLS(i + 1) == KVR_ASCII_LETTER)
    {
        j = i + 1;
    }

    if (CLS(j) == KVR_ASCII_LETTER) {
        while (j < len && CLS(j) == KVR_ASCII_LETTER) {
            j++;
        }

        return j - i;
    }

    /* \p{N} or \p{N}{1,3} */
    if (cls == KVR_ASCII_DIGIT) {
        for (j = i; j < len && j - i < (size_t) max_digits; j++) {
            if (CLS(j) != KVR_ASCII_DIGIT) {
                break;
            }
        }

        return j - i;
    }

    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    j = i;

    if (s[i] == ' ' && i + 1 < len && CLS(i + 1) == KVR_ASCII_OTHER) {
        j = i + 1;
    }

    if (CLS(j) == KVR_ASCII_OTHER) {
        while (j < len && CLS(j) == KVR_ASCII_OTHER) {
            j++;
        }

        while (j < len && (s[j] == '\r' || s[j] == '\n')) {
            j++;
        }

        return j - i;
    }

    /* here s[i] is white space: j ends the run, nl follows its last CR/LF */
    nl = 0;

    for (j = i; j < len && CLS(j) == KVR_ASCII_SPACE; j++) {
        if (s[j] == '\r' || s[j] == '\n') {
            nl = j + 1;
        }
    }

    /* \s*[\r\n]+ */
    if (nl != 0) {
        return nl - i;
    }

    /* \s+(?!\S) gives back one char before a non-space; then \s+ */
    k = j - i;

    if (j < len && k >= 2) {
        return k - 1;
    }

    return k;

#undef CLS
#undef LOW
}


/*
 * The length of the match at s[i] of DeepSeek-V3's third pattern, ASCII
 * only, or 0 when none starts there (the char then joins a gap).  There
 * \p{P} and \p{S} together are the 32 printable chars other than letters,
 * digits and space, \p{M} is empty.
 */
static size_t
kvr_pretok_ascii_match_deepseek(const uint8_t *s, size_t len, size_t i)
{
    int     cls;
    size_t  j, k, nl;

#define CLS(p)    kvr_pretok_ascii_class(s[p])
#define PUNCT(p)  (s[p] > 0x20 && s[p] < 0x7f && CLS(p) == KVR_ASCII_OTHER)

    cls = CLS(i);

    /* [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+ */
    if (PUNCT(i) && i + 1 < len && CLS(i + 1) == KVR_ASCII_LETTER) {
        for (j = i + 1; j < len && CLS(j) == KVR_ASCII_LETTER; j++) {
            /* void */
        }

        return j - i;
    }

    /* [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ */
    j = i;

    if (cls != KVR_ASCII_LETTER && !PUNCT(i) && s[i] != '\r' && s[i] != '\n'
        && i + 1 < len && CLS(i + 1) == KVR_ASCII_LETTER)
    {
        j = i + 1;
    }

    if (CLS(j) == KVR_ASCII_LETTER) {
        while (j < len && CLS(j) == KVR_ASCII_LETTER) {
            j++;
        }

        return j - i;
    }

    /*  ?[\p{P}\p{S}]+[\r\n]* */
    j = (s[i] == ' ' && i + 1 < len && PUNCT(i + 1)) ? i + 1 : i;

    if (PUNCT(j)) {
        while (j < len && PUNCT(j)) {
            j++;
        }

        while (j < len && (s[j] == '\r' || s[j] == '\n')) {
            j++;
        }

        return j - i;
    }

    if (cls != KVR_ASCII_SPACE) {
        /* a digit or a control char: no alternative starts with it */
        return 0;
    }

    /* white space, as in the Qwen / Llama-3 patterns */
    nl = 0;

    for (j = i; j < len && CLS(j) == KVR_ASCII_SPACE; j++) {
        if (s[j] == '\r' || s[j] == '\n') {
            nl = j + 1;
        }
    }

    if (nl != 0) {
        return nl - i;
    }

    k = j - i;

    return (j < len && k >= 2) ? k - 1 : k;

#undef CLS
#undef PUNCT
}


/* the ASCII match at s[i] of the pattern, 0 when none starts there */
static size_t
kvr_pretok_ascii_next(kvr_tok_pretok_t *pt, const uint8_t *s, size_t len,
    size_t i)
{
    size_t  j;

    switch (pt->ascii) {

    case KVR_PRETOK_ASCII_DEEPSEEK:
        return kvr_pretok_ascii_match_deepseek(s, len, i);

    case KVR_PRETOK_ASCII_DIGITS3:
        for (j = i; j < len && j - i < 3 && s[j] >= '0' && s[j] <= '9'; j++)
        {
            /* void */
        }

        return j - i;

    case KVR_PRETOK_ASCII_NO_MATCH:
        return 0;

    default:
        return kvr_pretok_ascii_match(s, len, i, pt->ascii);
    }
}


int
kvr_tok_pretok_split_ascii(kvr_tok_pretok_t *pt, const uint8_t *s,
    size_t len, kvr_tok_piece_pt piece, void *ctx)
{
    int     rc;
    size_t  i, n, gap;

    if (pt->o200k != NULL) {
        return kvr_tok_o200k_split(pt->o200k, s, len, piece, ctx);
    }

    /* as PCRE2 searches: a match at the first place one starts */
    gap = 0;

    for (i = 0; i < len; i += n) {
        n = kvr_pretok_ascii_next(pt, s, len, i);

        if (n == 0) {
            n = 1;
            continue;
        }

        rc = kvr_tok_piece_match(piece, ctx, s, &gap, i, n);
        if (rc != 0) {
            return rc;
        }
    }

    return gap < len ? piece(ctx, s + gap, len - gap) : 0;
}


int
kvr_tok_pretok_split(kvr_tok_pretok_t *pt, const uint8_t *s, size_t len,
    kvr_tok_piece_pt piece, void *ctx)
{
    size_t  i;

    if (pt->o200k != NULL) {
        return kvr_tok_o200k_split(pt->o200k, s, len, piece, ctx);
    }

    if (pt->ascii == KVR_PRETOK_ASCII_NONE) {
        return kvr_tok_pretok_split_pcre2(pt, s, len, piece, ctx);
    }

    for (i = 0; i < len; i++) {
        if (s[i] >= 0x80) {
            return kvr_tok_pretok_split_pcre2(pt, s, len, piece, ctx);
        }
    }

    return kvr_tok_pretok_split_ascii(pt, s, len, piece, ctx);
}
