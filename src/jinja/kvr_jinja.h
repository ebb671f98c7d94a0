/*
 * Copyright (C) kvroute developers
 *
 * A Jinja2 subset that renders Hugging Face chat templates exactly as
 * Python Jinja2 does with transformers' settings (ImmutableSandboxed-
 * Environment, trim_blocks, lstrip_blocks, loopcontrols, the globals
 * raise_exception and strftime_now, transformers' tojson).  Plain C, no
 * nginx types.
 *
 * Use:
 *   tpl = kvr_jinja_compile(src, len, err, sizeof(err));   once, at config
 *   r = kvr_jinja_render_create(&limits);                   per request
 *   kvr_jinja_set_*(r, "messages", ...)                     the variables
 *   rc = kvr_jinja_render(tpl, r, out, max_out, &out_len);
 *   kvr_jinja_render_destroy(r);
 *
 * The subset:
 *   statements  if/elif/else, for (tuple targets, "if" filter, else,
 *               loop.index/index0/revindex/revindex0/first/last/length/
 *               previtem/nextitem/cycle), set (names, tuples, ns.attr,
 *               block set), macro (positional and keyword arguments,
 *               defaults), break, continue, generation (a no-op);
 *   expressions literals (str with python escapes, int, float, list,
 *               tuple, dict, true/false/none), + - * / // % ** ~, chained
 *               comparisons, in / not in, and/or/not, x if c else y,
 *               attributes and subscripts as the sandbox resolves them,
 *               slices with steps, calls;
 *   filters     abs capitalize count d default dictsort first float
 *               indent int items join last length list lower map reject
 *               rejectattr replace reverse select selectattr sort string
 *               sum title tojson (transformers': ensure_ascii=False,
 *               indent, separators, sort_keys) trim upper;
 *   tests       defined undefined none boolean false true integer float
 *               number string mapping iterable sequence callable sameas in
 *               eq/equalto/== ne/!= lt/</lessthan le/<= gt/>/greaterthan
 *               ge/>= odd even divisibleby lower upper;
 *   globals     range namespace dict raise_exception strftime_now;
 *   methods     str: startswith endswith strip lstrip rstrip split rsplit
 *               replace upper lower title capitalize find rfind count
 *               join isdigit isspace isalpha isalnum removeprefix
 *               removesuffix splitlines; dict: items keys values get;
 *               list/tuple: count index.
 * Refused when compiling: other tags (include, import, extends, block,
 * raw, with, filter, call, do, autoescape), other filters and tests
 * (escape and safe among them: Markup semantics), recursive loops,
 * star arguments, names starting with "_", caller/varargs/kwargs.
 * Refused when rendering (KVR_JINJA_UNSUPPORTED): case mapping and
 * character classes of non-ASCII letters, repr() of code points whose
 * printability is not known, printing generators, ranges or dict views,
 * str.format and "%" formatting, integers beyond 64 bits, float powers,
 * and a few places where Jinja2's optimizer or lazy generators make the
 * outcome depend on more than the value (slices of non-sequences, errors
 * inside map/select/items, "-1 ** x").
 *
 * A template using a construct outside the subset is refused by the
 * compiler with a message.  What can only be seen while rendering (an
 * unsupported method, a python error such as 'str' + undefined,
 * raise_exception, a limit) makes the render fail with a status and a
 * message; the output is then to be discarded.  A compiled template is
 * only read while rendering; several renders may use it at once.
 */

#ifndef _KVR_JINJA_H_INCLUDED_
#define _KVR_JINJA_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* render status; 0 is success */
#define KVR_JINJA_OK            0
#define KVR_JINJA_ERROR        -1   /* python would raise (TypeError...) */
#define KVR_JINJA_RAISED       -2   /* the template called raise_exception */
#define KVR_JINJA_UNSUPPORTED  -3   /* outside the subset: not rendered */
#define KVR_JINJA_TOO_LONG     -4   /* output above max_out */
#define KVR_JINJA_LIMIT        -5   /* memory, steps or depth limit */


typedef struct kvr_jinja_tpl_s     kvr_jinja_tpl_t;
typedef struct kvr_jinja_render_s  kvr_jinja_render_t;
typedef struct kvr_jv_s            kvr_jv_t;


typedef struct {
    size_t     max_memory;      /* arena bytes (values, scopes, strings) */
    uint64_t   max_steps;       /* loop iterations plus calls */
    uint32_t   max_depth;       /* nested macro calls and evaluations */
    int        utc;             /* strftime_now in UTC, not local time */
} kvr_jinja_limits_t;

#define KVR_JINJA_DEFAULT_MEMORY  (64u << 20)
#define KVR_JINJA_DEFAULT_STEPS   1000000
#define KVR_JINJA_DEFAULT_DEPTH   200


/*
 * Compiles a template (len bytes, UTF-8).  Returns NULL with a message
 * ("line N: ...") in err when it is malformed or uses something outside
 * the subset.
 */
kvr_jinja_tpl_t *kvr_jinja_compile(const char *src, size_t len, char *err,
    size_t errlen);

void kvr_jinja_free(kvr_jinja_tpl_t *tpl);

/*
 * Whether a for loop of the template iterates over an expression reading
 * attribute or item name (e.g. "content": vLLM then passes message
 * contents as lists of parts, its "openai" content format).
 */
int kvr_jinja_loops_over(const kvr_jinja_tpl_t *tpl, const char *name);


/* a render context: an arena holding the variables and all the values */
kvr_jinja_render_t *kvr_jinja_render_create(const kvr_jinja_limits_t *lim);

void kvr_jinja_render_destroy(kvr_jinja_render_t *r);

/*
 * Renders into out (at most max_out bytes, no nul added).  Returns
 * KVR_JINJA_OK or a negative status; kvr_jinja_error() then says why.
 * A context is used for one render.
 */
int kvr_jinja_render(const kvr_jinja_tpl_t *tpl, kvr_jinja_render_t *r,
    char *out, size_t max_out, size_t *out_len);

const char *kvr_jinja_error(const kvr_jinja_render_t *r);


/*
 * Template variables.  Values live in the context's arena; a
 * constructor that runs out of memory marks the context failed and the
 * render then returns KVR_JINJA_LIMIT.  Strings are copied.
 */
void kvr_jinja_set(kvr_jinja_render_t *r, const char *name, kvr_jv_t *v);

kvr_jv_t *kvr_jinja_new_none(kvr_jinja_render_t *r);
kvr_jv_t *kvr_jinja_new_bool(kvr_jinja_render_t *r, int b);
kvr_jv_t *kvr_jinja_new_int(kvr_jinja_render_t *r, int64_t i);
kvr_jv_t *kvr_jinja_new_float(kvr_jinja_render_t *r, double f);
kvr_jv_t *kvr_jinja_new_str(kvr_jinja_render_t *r, const char *s,
    size_t len);
kvr_jv_t *kvr_jinja_new_list(kvr_jinja_render_t *r);
kvr_jv_t *kvr_jinja_new_dict(kvr_jinja_render_t *r);
/* appends to a list made by kvr_jinja_new_list */
void kvr_jinja_list_push(kvr_jinja_render_t *r, kvr_jv_t *list,
    kvr_jv_t *item);
/* sets a key (a later set of the same key keeps its first position) */
void kvr_jinja_dict_set(kvr_jinja_render_t *r, kvr_jv_t *dict,
    const char *key, size_t key_len, kvr_jv_t *val);
/* a string value's bytes (and length), or NULL for other types */
const char *kvr_jinja_str_ptr(const kvr_jv_t *v, size_t *len);


#endif /* _KVR_JINJA_H_INCLUDED_ */
