/*
 * Copyright (C) kvroute developers
 *
 * The kvroute directive's NAME=VALUE parameters, table-driven as nginx's
 * own directives are (ngx_command_t with ngx_conf_set_*_slot()): each
 * entry names a parameter, its setter, the field's offset in the
 * upstream's configuration and the setter's bounds or words.  Every error
 * says the parameter, the value, what it wants, and the file:line.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_kvroute.h"


/* one NAME=VALUE parameter of kvroute, as ngx_command_t is a directive */

typedef struct ngx_http_kvroute_param_s  ngx_http_kvroute_param_t;

typedef char *(*ngx_http_kvroute_set_pt)(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);

struct ngx_http_kvroute_param_s {
    ngx_str_t                    name;
    ngx_http_kvroute_set_pt      set;
    size_t                       offset;  /* in ngx_http_kvroute_srv_conf_t */
    void                        *post;    /* bounds, words: the setter's */
};


typedef struct {
    ngx_uint_t                   min;
    ngx_uint_t                   max;
} ngx_http_kvroute_uint_bounds_t;


typedef struct {
    double                       min;
    double                       max;
} ngx_http_kvroute_double_bounds_t;


static char *ngx_http_kvroute_set_enum(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);
static char *ngx_http_kvroute_set_policy(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);
static char *ngx_http_kvroute_set_uint(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);
static char *ngx_http_kvroute_set_uint32(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);
static char *ngx_http_kvroute_set_double(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);
static char *ngx_http_kvroute_set_decode(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);
static char *ngx_http_kvroute_set_size(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);
static u_char *ngx_http_kvroute_size_text(u_char *p, size_t size);
static char *ngx_http_kvroute_set_port(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);
static char *ngx_http_kvroute_set_ranks(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);
static char *ngx_http_kvroute_set_str(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);
static char *ngx_http_kvroute_set_zone(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);
static char *ngx_http_kvroute_set_msec(ngx_conf_t *cf,
    ngx_http_kvroute_param_t *param, ngx_str_t *value, void *field);


static ngx_conf_enum_t  ngx_http_kvroute_modes[] = {
    { ngx_string("approx"), NGX_HTTP_KVROUTE_MODE_APPROX },
    { ngx_string("kv"), NGX_HTTP_KVROUTE_MODE_KV },
    { ngx_string("round_robin"), NGX_HTTP_KVROUTE_MODE_ROUND_ROBIN },
    { ngx_string("random"), NGX_HTTP_KVROUTE_MODE_RANDOM },
    { ngx_null_string, 0 }
};

static ngx_conf_enum_t  ngx_http_kvroute_on_off[] = {
    { ngx_string("on"), 1 },
    { ngx_string("off"), 0 },
    { ngx_null_string, 0 }
};

static ngx_http_kvroute_uint_bounds_t  ngx_http_kvroute_block_size_bounds =
    { 1, 4096 };
static ngx_http_kvroute_uint_bounds_t  ngx_http_kvroute_blocks_bounds =
    { 0, 1000000000 };
static ngx_http_kvroute_uint_bounds_t  ngx_http_kvroute_count_bounds =
    { 0, 1000000 };
static ngx_http_kvroute_uint_bounds_t  ngx_http_kvroute_max_body_bounds =
    { 64, 1024 * 1024 * 1024 };
static ngx_http_kvroute_uint_bounds_t  ngx_http_kvroute_text_chunk_bounds =
    { 1, 1048576 };
static ngx_http_kvroute_uint_bounds_t  ngx_http_kvroute_ranks_bounds =
    { 1, NGX_HTTP_KVROUTE_MAX_RANKS };
static ngx_http_kvroute_uint_bounds_t  ngx_http_kvroute_interval_bounds =
    { 50, 60000 };                                      /* ms */

static ngx_http_kvroute_double_bounds_t  ngx_http_kvroute_weight_bounds =
    { 0, 1000 };
static ngx_http_kvroute_double_bounds_t  ngx_http_kvroute_ratio_bounds =
    { 1, 1000 };
static ngx_http_kvroute_double_bounds_t  ngx_http_kvroute_tokens_bounds =
    { 0, 1e9 };
static ngx_http_kvroute_double_bounds_t  ngx_http_kvroute_tier_bounds =
    { 0, 1 };


#define ngx_http_kvroute_param_offset(field)                                 \
    offsetof(ngx_http_kvroute_srv_conf_t, field)


static ngx_http_kvroute_param_t  ngx_http_kvroute_params[] = {

    { ngx_string("mode"),
      ngx_http_kvroute_set_enum,
      ngx_http_kvroute_param_offset(mode),
      ngx_http_kvroute_modes },

    { ngx_string("zone"),
      ngx_http_kvroute_set_zone,
      ngx_http_kvroute_param_offset(zone_conf),
      NULL },

    { ngx_string("block_size"),
      ngx_http_kvroute_set_uint,
      ngx_http_kvroute_param_offset(block_size),
      &ngx_http_kvroute_block_size_bounds },

    { ngx_string("capacity"),
      ngx_http_kvroute_set_uint,
      ngx_http_kvroute_param_offset(capacity),
      &ngx_http_kvroute_blocks_bounds },

    { ngx_string("policy"),
      ngx_http_kvroute_set_policy,
      ngx_http_kvroute_param_offset(policy.policy),
      NULL },

    { ngx_string("overlap_weight"),
      ngx_http_kvroute_set_double,
      ngx_http_kvroute_param_offset(policy.overlap_weight),
      &ngx_http_kvroute_weight_bounds },

    { ngx_string("balance_abs"),
      ngx_http_kvroute_set_uint32,
      ngx_http_kvroute_param_offset(policy.balance_abs),
      &ngx_http_kvroute_count_bounds },

    { ngx_string("balance_rel"),
      ngx_http_kvroute_set_double,
      ngx_http_kvroute_param_offset(policy.balance_rel),
      &ngx_http_kvroute_ratio_bounds },

    { ngx_string("spread"),
      ngx_http_kvroute_set_uint32,
      ngx_http_kvroute_param_offset(policy.spread),
      &ngx_http_kvroute_count_bounds },

    { ngx_string("corun"),
      ngx_http_kvroute_set_double,
      ngx_http_kvroute_param_offset(policy.corun),
      &ngx_http_kvroute_tokens_bounds },

    { ngx_string("evict"),
      ngx_http_kvroute_set_double,
      ngx_http_kvroute_param_offset(policy.evict),
      &ngx_http_kvroute_weight_bounds },

    { ngx_string("ttft_decode"),
      ngx_http_kvroute_set_decode,
      ngx_http_kvroute_param_offset(policy.ttft_decode),
      &ngx_http_kvroute_tokens_bounds },

    { ngx_string("ttft_evict"),
      ngx_http_kvroute_set_double,
      ngx_http_kvroute_param_offset(policy.ttft_evict),
      &ngx_http_kvroute_weight_bounds },

    { ngx_string("ttft_wait"),
      ngx_http_kvroute_set_double,
      ngx_http_kvroute_param_offset(policy.ttft_wait),
      &ngx_http_kvroute_tokens_bounds },

    { ngx_string("ttft_own"),
      ngx_http_kvroute_set_double,
      ngx_http_kvroute_param_offset(policy.ttft_own),
      &ngx_http_kvroute_tokens_bounds },

    { ngx_string("place_slack"),
      ngx_http_kvroute_set_double,
      ngx_http_kvroute_param_offset(policy.place_slack),
      &ngx_http_kvroute_tokens_bounds },

    { ngx_string("host_weight"),
      ngx_http_kvroute_set_double,
      ngx_http_kvroute_param_offset(policy.host_weight),
      &ngx_http_kvroute_tier_bounds },

    { ngx_string("disk_weight"),
      ngx_http_kvroute_set_double,
      ngx_http_kvroute_param_offset(policy.disk_weight),
      &ngx_http_kvroute_tier_bounds },

    { ngx_string("ttft_output"),
      ngx_http_kvroute_set_uint,
      ngx_http_kvroute_param_offset(output),
      &ngx_http_kvroute_count_bounds },

    { ngx_string("max_body"),
      ngx_http_kvroute_set_size,
      ngx_http_kvroute_param_offset(max_body),
      &ngx_http_kvroute_max_body_bounds },

    { ngx_string("text_chunk"),
      ngx_http_kvroute_set_uint,
      ngx_http_kvroute_param_offset(chunk_bytes),
      &ngx_http_kvroute_text_chunk_bounds },

    { ngx_string("events_port"),
      ngx_http_kvroute_set_port,
      ngx_http_kvroute_param_offset(events_port),
      NULL },

    { ngx_string("replay_port"),
      ngx_http_kvroute_set_port,
      ngx_http_kvroute_param_offset(replay_port),
      NULL },

    { ngx_string("events_ranks"),
      ngx_http_kvroute_set_ranks,
      ngx_http_kvroute_param_offset(events_ranks),
      &ngx_http_kvroute_ranks_bounds },

    { ngx_string("events_topic"),
      ngx_http_kvroute_set_str,
      ngx_http_kvroute_param_offset(events_topic),
      NULL },

    { ngx_string("predict"),
      ngx_http_kvroute_set_uint,
      ngx_http_kvroute_param_offset(predict),
      &ngx_http_kvroute_count_bounds },

    { ngx_string("metrics"),
      ngx_http_kvroute_set_enum,
      ngx_http_kvroute_param_offset(metrics),
      ngx_http_kvroute_on_off },

    { ngx_string("metrics_speed"),
      ngx_http_kvroute_set_enum,
      ngx_http_kvroute_param_offset(metrics_speed),
      ngx_http_kvroute_on_off },

    { ngx_string("metrics_load"),
      ngx_http_kvroute_set_enum,
      ngx_http_kvroute_param_offset(metrics_load),
      ngx_http_kvroute_on_off },

    { ngx_string("metrics_path"),
      ngx_http_kvroute_set_str,
      ngx_http_kvroute_param_offset(metrics_path),
      "a path, as \"/metrics\"" },

    { ngx_string("metrics_interval"),
      ngx_http_kvroute_set_msec,
      ngx_http_kvroute_param_offset(metrics_interval),
      &ngx_http_kvroute_interval_bounds },

    { ngx_string("metrics_port"),
      ngx_http_kvroute_set_port,
      ngx_http_kvroute_param_offset(metrics_port),
      NULL },

    { ngx_string("models"),
      ngx_http_kvroute_set_str,
      ngx_http_kvroute_param_offset(models),
      "model names, separated by \",\"" },

    { ngx_string("tokenizer"),
      ngx_http_kvroute_set_str,
      ngx_http_kvroute_param_offset(tokenizer_json),
      NULL },

    { ngx_string("tokenizer_config"),
      ngx_http_kvroute_set_str,
      ngx_http_kvroute_param_offset(tokenizer_config),
      NULL },

    { ngx_null_string, NULL, 0, NULL }
};


/* every parameter of the kvroute line, into kcf */

char *
ngx_http_kvroute_set_params(ngx_conf_t *cf, ngx_http_kvroute_srv_conf_t *kcf)
{
    u_char                    *eq;
    ngx_str_t                 *value, name, arg;
    ngx_uint_t                 i;
    ngx_http_kvroute_param_t  *param;

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        eq = ngx_strlchr(value[i].data, value[i].data + value[i].len, '=');

        name.data = value[i].data;
        name.len = eq ? (size_t) (eq - value[i].data) : 0;

        for (param = ngx_http_kvroute_params; param->name.len; param++) {
            if (param->name.len == name.len
                && ngx_strncmp(param->name.data, name.data, name.len) == 0)
            {
                break;
            }
        }

        if (eq == NULL || param->set == NULL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        arg.data = eq + 1;
        arg.len = value[i].data + value[i].len - arg.data;

        if (param->set(cf, param, &arg, (u_char *) kcf + param->offset)
            != NGX_CONF_OK)
        {
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


/* the parameters' setters: each writes one field, or says what it wants */

static char *
ngx_http_kvroute_set_enum(ngx_conf_t *cf, ngx_http_kvroute_param_t *param,
    ngx_str_t *value, void *field)
{
    u_char           *p, *last, words[256];
    ngx_uint_t        i, n;
    ngx_conf_enum_t  *e;

    e = param->post;

    for (n = 0; e[n].name.len; n++) {
        if (e[n].name.len == value->len
            && ngx_strncmp(e[n].name.data, value->data, value->len) == 0)
        {
            *(ngx_uint_t *) field = e[n].value;
            return NGX_CONF_OK;
        }
    }

    /* "a, b, c or d" */

    p = words;
    last = words + sizeof(words);

    for (i = 0; i < n; i++) {
        p = ngx_slprintf(p, last, "%s%V",
                         i == 0 ? "" : (i == n - 1 ? " or " : ", "),
                         &e[i].name);
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid \"%V\" value \"%V\": expected %*s",
                       &param->name, value, p - words, words);

    return NGX_CONF_ERROR;
}


static char *
ngx_http_kvroute_set_policy(ngx_conf_t *cf, ngx_http_kvroute_param_t *param,
    ngx_str_t *value, void *field)
{
    int  policy;

    policy = kvr_policy_from_name((char *) value->data, value->len);

    if (policy < 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%V\" value \"%V\": expected ttft, "
                           "cost, kvroute or dynamo", &param->name, value);
        return NGX_CONF_ERROR;
    }

    *(kvr_policy_e *) field = policy;

    return NGX_CONF_OK;
}


static char *
ngx_http_kvroute_set_uint(ngx_conf_t *cf, ngx_http_kvroute_param_t *param,
    ngx_str_t *value, void *field)
{
    ngx_int_t                        n;
    ngx_http_kvroute_uint_bounds_t  *b;

    b = param->post;

    n = ngx_atoi(value->data, value->len);

    if (n == NGX_ERROR || (ngx_uint_t) n < b->min || (ngx_uint_t) n > b->max) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%V\" value \"%V\": expected an "
                           "integer from %ui to %ui",
                           &param->name, value, b->min, b->max);
        return NGX_CONF_ERROR;
    }

    *(ngx_uint_t *) field = n;

    return NGX_CONF_OK;
}


static char *
ngx_http_kvroute_set_uint32(ngx_conf_t *cf, ngx_http_kvroute_param_t *param,
    ngx_str_t *value, void *field)
{
    ngx_uint_t  n;

    /* the bounds keep it within 32 bits */

    if (ngx_http_kvroute_set_uint(cf, param, value, &n) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    *(uint32_t *) field = (uint32_t) n;

    return NGX_CONF_OK;
}


static char *
ngx_http_kvroute_set_double(ngx_conf_t *cf, ngx_http_kvroute_param_t *param,
    ngx_str_t *value, void *field)
{
    u_char                            *p, *last;
    double                             n, scale;
    ngx_uint_t                         digits;
    ngx_http_kvroute_double_bounds_t  *b;

    b = param->post;

    /* a plain decimal: digits, optionally a point and more digits */

    p = value->data;
    last = value->data + value->len;
    n = 0;
    scale = 0;
    digits = 0;

    for ( /* void */ ; p < last; p++) {
        if (*p == '.' && scale == 0) {
            scale = 1;
            continue;
        }

        if (*p < '0' || *p > '9') {
            digits = 0;
            break;
        }

        digits++;

        if (scale) {
            scale /= 10;
            n += (*p - '0') * scale;

        } else {
            n = n * 10 + (*p - '0');
        }
    }

    if (digits == 0 || n < b->min || n > b->max) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%V\" value \"%V\": expected a number "
                           "from %.1f to %.1f",
                           &param->name, value, b->min, b->max);
        return NGX_CONF_ERROR;
    }

    *(double *) field = n;

    return NGX_CONF_OK;
}


/* ttft_decode=N, or auto: learned (NGX_HTTP_KVROUTE_DECODE_AUTO) */

static char *
ngx_http_kvroute_set_decode(ngx_conf_t *cf, ngx_http_kvroute_param_t *param,
    ngx_str_t *value, void *field)
{
    if (value->len == 4 && ngx_strncmp(value->data, "auto", 4) == 0) {
        *(double *) field = NGX_HTTP_KVROUTE_DECODE_AUTO;
        return NGX_CONF_OK;
    }

    /* a word that is not a number was meant as one of the words */

    if (value->len && (value->data[0] < '0' || value->data[0] > '9')
        && value->data[0] != '.')
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%V\" value \"%V\": expected a number "
                           "of prompt tokens or \"auto\"",
                           &param->name, value);
        return NGX_CONF_ERROR;
    }

    return ngx_http_kvroute_set_double(cf, param, value, field);
}


/* a size as nginx writes one: 512, 64k, 8m, 1g */

static char *
ngx_http_kvroute_set_size(ngx_conf_t *cf, ngx_http_kvroute_param_t *param,
    ngx_str_t *value, void *field)
{
    u_char                           min[NGX_OFF_T_LEN + 1];
    u_char                           max[NGX_OFF_T_LEN + 1];
    u_char                          *min_end, *max_end;
    ssize_t                          size;
    ngx_http_kvroute_uint_bounds_t  *b;

    b = param->post;

    size = ngx_parse_size(value);

    if (size == NGX_ERROR || (size_t) size < b->min || (size_t) size > b->max)
    {
        min_end = ngx_http_kvroute_size_text(min, b->min);
        max_end = ngx_http_kvroute_size_text(max, b->max);

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%V\" value \"%V\": expected a size "
                           "from %*s to %*s", &param->name, value,
                           min_end - min, min, max_end - max, max);
        return NGX_CONF_ERROR;
    }

    *(size_t *) field = size;

    return NGX_CONF_OK;
}


static u_char *
ngx_http_kvroute_size_text(u_char *p, size_t size)
{
    if (size && size % (1024 * 1024 * 1024) == 0) {
        return ngx_sprintf(p, "%uzg", size / (1024 * 1024 * 1024));
    }

    if (size && size % (1024 * 1024) == 0) {
        return ngx_sprintf(p, "%uzm", size / (1024 * 1024));
    }

    if (size && size % 1024 == 0) {
        return ngx_sprintf(p, "%uzk", size / 1024);
    }

    return ngx_sprintf(p, "%uz", size);
}


/* [+]N: a port, or with "+" one N above each server's own port */

static char *
ngx_http_kvroute_set_port(ngx_conf_t *cf, ngx_http_kvroute_param_t *param,
    ngx_str_t *value, void *field)
{
    ngx_int_t                 n;
    ngx_str_t                 number;
    ngx_http_kvroute_port_t  *port;

    port = field;
    number = *value;

    port->relative = (number.len > 0 && number.data[0] == '+');

    if (port->relative) {
        number.data++;
        number.len--;
    }

    n = ngx_atoi(number.data, number.len);

    if (n == NGX_ERROR || n < 1 || n > 65535) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%V\" value \"%V\": expected a port "
                           "from 1 to 65535, or +N above each server's port",
                           &param->name, value);
        return NGX_CONF_ERROR;
    }

    port->number = n;

    return NGX_CONF_OK;
}


/* a string, kept as the configuration holds it; post: it must not be empty */

/*
 * events_ranks=N: ranks 0 to N-1; events_ranks=K-M: ranks K to M (an API
 * server started with --data-parallel-start-rank K)
 */

static char *
ngx_http_kvroute_set_ranks(ngx_conf_t *cf, ngx_http_kvroute_param_t *param,
    ngx_str_t *value, void *field)
{
    u_char                          *dash;
    ngx_int_t                        first, last;
    ngx_http_kvroute_ranks_t        *ranks;
    ngx_http_kvroute_uint_bounds_t  *b;

    ranks = field;
    b = param->post;

    dash = ngx_strlchr(value->data, value->data + value->len, '-');

    if (dash == NULL) {
        first = 0;
        last = ngx_atoi(value->data, value->len);
        last = (last == NGX_ERROR) ? NGX_ERROR : last - 1;

    } else {
        first = ngx_atoi(value->data, dash - value->data);
        last = ngx_atoi(dash + 1, value->data + value->len - dash - 1);
    }

    if (first == NGX_ERROR || last == NGX_ERROR || last < first
        || (ngx_uint_t) (last - first + 1) < b->min
        || (ngx_uint_t) (last - first + 1) > b->max
        || last > 65535)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%V\" value \"%V\": expected a "
                           "count from %ui to %ui, or ranks FIRST-LAST "
                           "(at most %ui of them, up to 65535)",
                           &param->name, value, b->min, b->max, b->max);
        return NGX_CONF_ERROR;
    }

    ranks->first = first;
    ranks->count = last - first + 1;

    return NGX_CONF_OK;
}


static char *
ngx_http_kvroute_set_str(ngx_conf_t *cf, ngx_http_kvroute_param_t *param,
    ngx_str_t *value, void *field)
{
    if (param->post && value->len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%V\" value \"\": expected %s",
                           &param->name, (char *) param->post);
        return NGX_CONF_ERROR;
    }

    *(ngx_str_t *) field = *value;

    return NGX_CONF_OK;
}


/* a time, "500ms" or "1s", within bounds in ms */

static char *
ngx_http_kvroute_set_msec(ngx_conf_t *cf, ngx_http_kvroute_param_t *param,
    ngx_str_t *value, void *field)
{
    ngx_int_t                        ms;
    ngx_http_kvroute_uint_bounds_t  *b;

    b = param->post;

    ms = ngx_parse_time(value, 0);

    if (ms == NGX_ERROR || (ngx_uint_t) ms < b->min
        || (ngx_uint_t) ms > b->max)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%V\" value \"%V\": expected a time "
                           "from %uims to %uims", &param->name, value,
                           b->min, b->max);
        return NGX_CONF_ERROR;
    }

    *(ngx_msec_t *) field = (ngx_msec_t) ms;

    return NGX_CONF_OK;
}


/* name[:size] */

static char *
ngx_http_kvroute_set_zone(ngx_conf_t *cf, ngx_http_kvroute_param_t *param,
    ngx_str_t *value, void *field)
{
    u_char                        *colon;
    size_t                         min;
    ssize_t                        size;
    ngx_str_t                      s;
    ngx_http_kvroute_zone_conf_t  *zone;

    zone = field;

    colon = ngx_strlchr(value->data, value->data + value->len, ':');

    zone->name.data = value->data;
    zone->name.len = colon ? (size_t) (colon - value->data) : value->len;

    if (colon) {
        s.data = colon + 1;
        s.len = value->data + value->len - s.data;

        /* the index, and room for the rest of the zone */
        min = kvr_index_min_size() + 256 * 1024;

        size = ngx_parse_size(&s);

        if (size == NGX_ERROR || (size_t) size < min) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"zone\" size \"%V\": "
                               "expected at least %uzk", &s, min / 1024 + 1);
            return NGX_CONF_ERROR;
        }

        zone->size = size;
    }

    if (zone->name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"zone\": empty name");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}
