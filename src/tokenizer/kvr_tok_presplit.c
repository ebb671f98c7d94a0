/*
 * Copyright (C) kvroute developers
 *
 * Pre-tokenizer steps (HF pre_tokenizers/split.rs, metaspace.rs and
 * NormalizedString::split's behaviours), chained by callbacks: a piece of
 * step i is run through step i + 1 at once, so no piece list is built.
 */

#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvr_tokenizer.h"
#include "kvr_tok_presplit.h"
#include "kvr_tok_unicode.h"


#define KVR_PRESPLIT_MAX_STEPS  8

#define KVR_STEP_REGEX      1
#define KVR_STEP_STRING     2
#define KVR_STEP_METASPACE  3

/* NormalizedString::split behaviours (Contiguous is refused) */
#define KVR_SPLIT_ISOLATED   1
#define KVR_SPLIT_REMOVED    2
#define KVR_SPLIT_PREVIOUS   3    /* MergedWithPrevious */
#define KVR_SPLIT_NEXT       4    /* MergedWithNext */

#define KVR_PREPEND_ALWAYS  1
#define KVR_PREPEND_FIRST   2
#define KVR_PREPEND_NEVER   3


typedef struct {
    int                type;
    int                behavior;
    int                invert;
    kvr_tok_pretok_t  *regex;
    char              *literal;       /* String pattern; Metaspace char */
    size_t             literal_len;
    int                prepend;       /* Metaspace */
    int                split;         /* Metaspace */
} kvr_presplit_step_t;


struct kvr_tok_presplit_s {
    kvr_presplit_step_t  steps[KVR_PRESPLIT_MAX_STEPS];
    size_t               n;
    kvr_tok_piece_pt     piece;       /* the run's final callback */
    void                *ctx;
};


/* a piece with its place in the input, for Metaspace's "first" */
typedef struct {
    kvr_tok_presplit_t  *ps;
    size_t               next;        /* the step the piece goes to */
    const uint8_t       *base;
    int                  at_start;
} kvr_presplit_ctx_t;


static int kvr_presplit_step(kvr_tok_presplit_t *ps, size_t i,
    const uint8_t *s, size_t len, int at_start);


static int
kvr_presplit_type(json_t *obj, const char *type)
{
    const char  *t;

    t = json_string_value(json_object_get(obj, "type"));

    return t != NULL && strcmp(t, type) == 0;
}


static int
kvr_presplit_load_split(kvr_presplit_step_t *st, json_t *item, char *err,
    size_t errlen)
{
    json_t      *pattern, *regex, *lit, *invert;
    const char  *behavior;

    pattern = json_object_get(item, "pattern");
    regex = json_object_get(pattern, "Regex");
    lit = json_object_get(pattern, "String");
    behavior = json_string_value(json_object_get(item, "behavior"));
    invert = json_object_get(item, "invert");

    if (behavior == NULL) {
        snprintf(err, errlen, "pre_tokenizer Split without a behavior");
        return -1;
    }

    if (strcmp(behavior, "Isolated") == 0) {
        st->behavior = KVR_SPLIT_ISOLATED;

    } else if (strcmp(behavior, "Removed") == 0) {
        st->behavior = KVR_SPLIT_REMOVED;

    } else if (strcmp(behavior, "MergedWithPrevious") == 0) {
        st->behavior = KVR_SPLIT_PREVIOUS;

    } else if (strcmp(behavior, "MergedWithNext") == 0) {
        st->behavior = KVR_SPLIT_NEXT;

    } else {
        snprintf(err, errlen, "pre_tokenizer Split with behavior %.40s is "
                 "not supported", behavior);
        return -1;
    }

    st->invert = json_is_true(invert);

    if (json_is_string(regex)) {
        st->type = KVR_STEP_REGEX;
        st->regex = kvr_tok_pretok_create(json_string_value(regex), err,
                                          errlen);
        return st->regex != NULL ? 0 : -1;
    }

    if (json_is_string(lit) && json_string_length(lit) != 0) {
        st->type = KVR_STEP_STRING;
        st->literal_len = json_string_length(lit);
        st->literal = malloc(st->literal_len);

        if (st->literal == NULL) {
            snprintf(err, errlen, "pre_tokenizer: out of memory");
            return -1;
        }

        memcpy(st->literal, json_string_value(lit), st->literal_len);

        return 0;
    }

    snprintf(err, errlen, "pre_tokenizer Split without a Regex or a "
             "non-empty String pattern is not supported");

    return -1;
}


static int
kvr_presplit_load_metaspace(kvr_presplit_step_t *st, json_t *item,
    char *err, size_t errlen)
{
    size_t       n;
    json_t      *add_prefix, *split;
    uint32_t     cp;
    const char  *repl, *scheme;

    repl = json_string_value(json_object_get(item, "replacement"));
    scheme = json_string_value(json_object_get(item, "prepend_scheme"));
    add_prefix = json_object_get(item, "add_prefix_space");
    split = json_object_get(item, "split");

    n = repl ? strlen(repl) : 0;

    /* the replacement is one char (serde char) */
    if (n == 0 || kvr_tok_utf8_decode((const uint8_t *) repl, n, &cp) != n)
    {
        snprintf(err, errlen, "pre_tokenizer Metaspace: replacement must "
                 "be one char");
        return -1;
    }

    st->type = KVR_STEP_METASPACE;
    st->literal = strdup(repl);
    st->literal_len = n;

    /* no scheme means always; HF refuses add_prefix_space false else */
    if (json_is_false(add_prefix)) {
        if (scheme == NULL || strcmp(scheme, "never") != 0) {
            snprintf(err, errlen, "pre_tokenizer Metaspace: "
                     "add_prefix_space false without prepend_scheme never");
            return -1;
        }

        st->prepend = KVR_PREPEND_NEVER;

    } else if (scheme == NULL || strcmp(scheme, "always") == 0) {
        st->prepend = KVR_PREPEND_ALWAYS;

    } else if (strcmp(scheme, "first") == 0) {
        st->prepend = KVR_PREPEND_FIRST;

    } else if (strcmp(scheme, "never") == 0) {
        st->prepend = KVR_PREPEND_NEVER;

    } else {
        snprintf(err, errlen, "pre_tokenizer Metaspace with prepend_scheme "
                 "%.20s is not supported", scheme);
        return -1;
    }

    st->split = (split == NULL || json_is_null(split) || json_is_true(split));

    if (st->literal == NULL) {
        snprintf(err, errlen, "pre_tokenizer: out of memory");
        return -1;
    }

    return 0;
}


static int
kvr_presplit_load_step(kvr_tok_presplit_t *ps, json_t *item, int last,
    int *byte_level, char *err, size_t errlen)
{
    const char  *type;

    type = json_string_value(json_object_get(item, "type"));

    if (type == NULL) {
        snprintf(err, errlen, "pre_tokenizer without a type");
        return -1;
    }

    if (strcmp(type, "ByteLevel") == 0) {
        if (!last || json_is_true(json_object_get(item, "add_prefix_space"))
            || !json_is_false(json_object_get(item, "use_regex")))
        {
            snprintf(err, errlen, "pre_tokenizer ByteLevel is only supported"
                     " last, with add_prefix_space and use_regex false");
            return -1;
        }

        *byte_level = 1;

        return 0;
    }

    if (ps->n == KVR_PRESPLIT_MAX_STEPS) {
        snprintf(err, errlen, "pre_tokenizer: Sequence of over %d is not "
                 "supported", KVR_PRESPLIT_MAX_STEPS);
        return -1;
    }

    if (strcmp(type, "Split") == 0) {
        return kvr_presplit_load_split(&ps->steps[ps->n++], item, err,
                                       errlen);
    }

    if (strcmp(type, "Metaspace") == 0) {
        return kvr_presplit_load_metaspace(&ps->steps[ps->n++], item, err,
                                           errlen);
    }

    snprintf(err, errlen, "pre_tokenizer %.40s is not supported", type);

    return -1;
}


kvr_tok_presplit_t *
kvr_tok_presplit_load(json_t *pre, int *byte_level, char *err,
    size_t errlen)
{
    size_t               i, n;
    json_t              *list;
    kvr_tok_presplit_t  *ps;

    *byte_level = 0;

    ps = calloc(1, sizeof(kvr_tok_presplit_t));
    if (ps == NULL) {
        snprintf(err, errlen, "pre_tokenizer: out of memory");
        return NULL;
    }

    if (pre == NULL || json_is_null(pre)) {
        return ps;
    }

    if (!kvr_presplit_type(pre, "Sequence")) {
        if (kvr_presplit_load_step(ps, pre, 1, byte_level, err, errlen)
            != 0)
        {
            goto failed;
        }

        return ps;
    }

    list = json_object_get(pre, "pretokenizers");

    if (!json_is_array(list)) {
        snprintf(err, errlen, "pre_tokenizer Sequence without a list");
        goto failed;
    }

    n = json_array_size(list);

    for (i = 0; i < n; i++) {
        if (kvr_presplit_type(json_array_get(list, i), "Sequence")) {
            snprintf(err, errlen, "pre_tokenizer Sequence inside a Sequence"
                     " is not supported");
            goto failed;
        }

        if (kvr_presplit_load_step(ps, json_array_get(list, i), i + 1 == n,
                                   byte_level, err, errlen)
            != 0)
        {
            goto failed;
        }
    }

    return ps;

failed:

    kvr_tok_presplit_free(ps);

    return NULL;
}


void
kvr_tok_presplit_free(kvr_tok_presplit_t *ps)
{
    size_t  i;

    if (ps == NULL) {
        return;
    }

    for (i = 0; i < KVR_PRESPLIT_MAX_STEPS; i++) {
        kvr_tok_pretok_free(ps->steps[i].regex);
        free(ps->steps[i].literal);
    }

    free(ps);
}


int
kvr_tok_presplit_first_sensitive(const kvr_tok_presplit_t *ps)
{
    size_t  i;

    for (i = 0; i < ps->n; i++) {
        if (ps->steps[i].type == KVR_STEP_METASPACE
            && ps->steps[i].prepend == KVR_PREPEND_FIRST)
        {
            return 1;
        }
    }

    return 0;
}


int
kvr_tok_presplit_in_place(const kvr_tok_presplit_t *ps)
{
    size_t  i;

    for (i = 0; i < ps->n; i++) {
        if (ps->steps[i].type == KVR_STEP_METASPACE) {
            return 0;
        }
    }

    return 1;
}


int
kvr_tok_presplit_whole(const kvr_tok_presplit_t *ps,
    const kvr_tok_norm_t *norm)
{
    size_t                      i;
    const kvr_presplit_step_t  *st;

    for (i = 0; i < ps->n; i++) {
        st = &ps->steps[i];

        /* no match: every behaviour keeps the piece whole */
        if (st->type != KVR_STEP_STRING || st->invert
            || !kvr_tok_norm_excludes(norm, (const uint8_t *) st->literal,
                                      st->literal_len))
        {
            return 0;
        }
    }

    return 1;
}


/* a piece of step ctx->next - 1, from the fast Isolated regex split */
static int
kvr_presplit_isolated_piece(void *data, const uint8_t *piece, size_t len)
{
    kvr_presplit_ctx_t  *ctx;

    ctx = data;

    return kvr_presplit_step(ctx->ps, ctx->next, piece, len,
                             ctx->at_start && piece == ctx->base);
}


/* the next match of a Split step: 0, 1 when none, or a KVR_TOK_* status */
static int
kvr_presplit_find(kvr_presplit_step_t *st, const uint8_t *s, size_t len,
    size_t from, size_t *start, size_t *end)
{
    const uint8_t  *hit;

    if (st->type == KVR_STEP_REGEX) {
        return kvr_tok_pretok_find(st->regex, s, len, from, start, end);
    }

    if (from >= len) {
        return 1;
    }

    hit = memmem(s + from, len - from, st->literal, st->literal_len);
    if (hit == NULL) {
        return 1;
    }

    *start = (size_t) (hit - s);
    *end = *start + st->literal_len;

    return 0;
}


/* emits [start, end) of s to step i + 1 unless empty */
static int
kvr_presplit_emit(kvr_tok_presplit_t *ps, size_t i, const uint8_t *s,
    size_t start, size_t end, int at_start)
{
    if (end <= start) {
        return 0;
    }

    return kvr_presplit_step(ps, i + 1, s + start, end - start,
                             at_start && start == 0);
}


/*
 * Split with any behaviour: walks HF's list of (offsets, is_match), the
 * matches and the gaps between them, and folds it as
 * NormalizedString::split does.  held is a piece not yet emitted: the
 * last gap (MergedWithPrevious may extend it over the next match) or the
 * last match (MergedWithNext may extend the next gap over it).
 */
static int
kvr_presplit_split(kvr_tok_presplit_t *ps, size_t i, const uint8_t *s,
    size_t len, int at_start)
{
    int                   rc, is_match, prev_match, have_held;
    size_t                pos, m_start, m_end, start, end, held_start;
    size_t                held_end;
    kvr_presplit_step_t  *st;

    st = &ps->steps[i];
    pos = 0;
    prev_match = 0;
    have_held = 0;
    held_start = 0;
    held_end = 0;

    while (pos < len) {
        rc = kvr_presplit_find(st, s, len, pos, &m_start, &m_end);
        if (rc < 0) {
            return rc;
        }

        if (rc == 1) {
            m_start = len;
            m_end = len;
        }

        /* the gap before the match, then the match */
        for (is_match = 0; is_match < 2; is_match++) {
            start = is_match ? m_start : pos;
            end = is_match ? m_end : m_start;

            if (start == end) {
                continue;
            }

            if (st->invert ? !is_match : is_match) {

                switch (st->behavior) {

                case KVR_SPLIT_REMOVED:
                    prev_match = 1;
                    continue;

                case KVR_SPLIT_PREVIOUS:
                    if (!prev_match && have_held) {
                        held_end = end;
                        prev_match = 1;
                        continue;
                    }

                    break;

                case KVR_SPLIT_NEXT:
                    /* held until the next entry shows if it is a gap */
                    if (have_held) {
                        rc = kvr_presplit_emit(ps, i, s, held_start,
                                               held_end, at_start);
                        if (rc != 0) {
                            return rc;
                        }
                    }

                    held_start = start;
                    held_end = end;
                    have_held = 1;
                    prev_match = 1;
                    continue;

                default:
                    break;
                }

                prev_match = 1;

            } else {
                if (st->behavior == KVR_SPLIT_NEXT && have_held
                    && prev_match)
                {
                    /* the held match joins this gap */
                    start = held_start;
                    have_held = 0;
                }

                prev_match = 0;
            }

            /* a new piece: the held one is final */
            if (have_held) {
                rc = kvr_presplit_emit(ps, i, s, held_start, held_end,
                                       at_start);
                if (rc != 0) {
                    return rc;
                }
            }

            held_start = start;
            held_end = end;
            have_held = 1;
        }

        pos = m_end;
    }

    if (have_held) {
        return kvr_presplit_emit(ps, i, s, held_start, held_end, at_start);
    }

    return 0;
}


/* Metaspace: spaces replaced, the prefix, then split before each char */
static int
kvr_presplit_metaspace(kvr_tok_presplit_t *ps, size_t i, const uint8_t *s,
    size_t len, int at_start)
{
    int                   rc;
    size_t                j, n, start;
    uint8_t              *buf;
    kvr_presplit_step_t  *st;

    st = &ps->steps[i];

    buf = malloc(len * st->literal_len + st->literal_len + 1);
    if (buf == NULL) {
        return KVR_TOK_NO_MEMORY;
    }

    n = 0;

    for (j = 0; j < len; j++) {
        if (s[j] == ' ') {
            memcpy(buf + n, st->literal, st->literal_len);
            n += st->literal_len;

        } else {
            buf[n++] = s[j];
        }
    }

    if ((st->prepend == KVR_PREPEND_ALWAYS
         || (st->prepend == KVR_PREPEND_FIRST && at_start))
        && !(n >= st->literal_len
             && memcmp(buf, st->literal, st->literal_len) == 0))
    {
        memmove(buf + st->literal_len, buf, n);
        memcpy(buf, st->literal, st->literal_len);
        n += st->literal_len;
    }

    rc = 0;

    if (!st->split) {
        rc = kvr_presplit_emit(ps, i, buf, 0, n, at_start);
        free(buf);
        return rc;
    }

    /* MergedWithNext on the char: every piece starts with it */
    start = 0;

    for (j = 1; rc == 0 && j + st->literal_len <= n; j++) {
        if (memcmp(buf + j, st->literal, st->literal_len) == 0) {
            rc = kvr_presplit_emit(ps, i, buf, start, j, at_start);
            start = j;
        }
    }

    if (rc == 0) {
        rc = kvr_presplit_emit(ps, i, buf, start, n, at_start);
    }

    free(buf);

    return rc;
}


static int
kvr_presplit_step(kvr_tok_presplit_t *ps, size_t i, const uint8_t *s,
    size_t len, int at_start)
{
    kvr_presplit_ctx_t    ctx;
    kvr_presplit_step_t  *st;

    if (i == ps->n) {
        return ps->piece(ps->ctx, s, len);
    }

    st = &ps->steps[i];

    if (st->type == KVR_STEP_METASPACE) {
        return kvr_presplit_metaspace(ps, i, s, len, at_start);
    }

    if (st->type == KVR_STEP_REGEX && st->behavior == KVR_SPLIT_ISOLATED) {
        /* matches and gaps alike are pieces: the fast split */
        ctx.ps = ps;
        ctx.next = i + 1;
        ctx.base = s;
        ctx.at_start = at_start;

        return kvr_tok_pretok_split(st->regex, s, len,
                                    kvr_presplit_isolated_piece, &ctx);
    }

    return kvr_presplit_split(ps, i, s, len, at_start);
}


int
kvr_tok_presplit_run(kvr_tok_presplit_t *ps, const uint8_t *s, size_t len,
    int at_start, kvr_tok_piece_pt piece, void *ctx)
{
    if (len == 0) {
        return 0;
    }

    ps->piece = piece;
    ps->ctx = ctx;

    return kvr_presplit_step(ps, 0, s, len, at_start);
}
