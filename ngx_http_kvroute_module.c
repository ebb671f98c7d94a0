/*
 * Copyright (C) kvroute developers
 *
 * kvroute: KV-cache-aware upstream balancing for LLM inference servers.
 * This file holds the directives and the module glue only; the work is in
 * src/.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_kvroute.h"


#define NGX_HTTP_KVROUTE_DEFAULT_ZONE_SIZE  (32 * 1024 * 1024)


static char *ngx_http_kvroute(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_kvroute_capacity(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_kvroute_events(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_kvroute_check_server(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, char *directive, ngx_str_t *server,
    u_char *file_name, ngx_uint_t line);
static char *ngx_http_kvroute_load_tokenizer(ngx_conf_t *cf,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_str_t *json, ngx_str_t *config);
static void ngx_http_kvroute_free_tokenizer(void *data);
static void ngx_http_kvroute_free_chat(void *data);
static char *ngx_http_kvroute_param_uint(ngx_conf_t *cf, ngx_str_t *value,
    size_t skip, ngx_uint_t min, ngx_uint_t max, ngx_uint_t *out);
static char *ngx_http_kvroute_param_ttft(ngx_conf_t *cf,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_str_t *value);
static char *ngx_http_kvroute_param_double(ngx_conf_t *cf, ngx_str_t *value,
    size_t skip, double min, double max, double *out);
static void *ngx_http_kvroute_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_kvroute_create_srv_conf(ngx_conf_t *cf);
static void *ngx_http_kvroute_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_kvroute_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_kvroute_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_kvroute_postconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_kvroute_init_process(ngx_cycle_t *cycle);
static void ngx_http_kvroute_exit_process(ngx_cycle_t *cycle);


static ngx_command_t  ngx_http_kvroute_commands[] = {

    { ngx_string("kvroute"),
      NGX_HTTP_UPS_CONF|NGX_CONF_ANY,
      ngx_http_kvroute,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("kvroute_events"),
      NGX_HTTP_UPS_CONF|NGX_CONF_TAKE23,
      ngx_http_kvroute_events,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("kvroute_capacity"),
      NGX_HTTP_UPS_CONF|NGX_CONF_TAKE2,
      ngx_http_kvroute_capacity,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("kvroute_read_body"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_kvroute_loc_conf_t, read_body),
      NULL },

    { ngx_string("kvroute_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_kvroute_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_kvroute_module_ctx = {
    ngx_http_kvroute_preconfiguration,     /* preconfiguration */
    ngx_http_kvroute_postconfiguration,    /* postconfiguration */

    ngx_http_kvroute_create_main_conf,     /* create main configuration */
    NULL,                                  /* init main configuration */

    ngx_http_kvroute_create_srv_conf,      /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_kvroute_create_loc_conf,      /* create location configuration */
    ngx_http_kvroute_merge_loc_conf        /* merge location configuration */
};


ngx_module_t  ngx_http_kvroute_module = {
    NGX_MODULE_V1,
    &ngx_http_kvroute_module_ctx,          /* module context */
    ngx_http_kvroute_commands,             /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_kvroute_init_process,         /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_kvroute_exit_process,         /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/*
 * kvroute [mode=approx|kv|round_robin|random] [zone=name[:size]]
 *         [events_port=[+]N [replay_port=[+]N] [events_ranks=K]
 *          [events_topic=T] [predict=blocks] [models=name[,name...]]]
 *         [block_size=16] [capacity=blocks]
 *         [policy=ttft|cost|kvroute|dynamo]
 *         [overlap_weight=1.0] [balance_abs=N] [balance_rel=R] [spread=N]
 *         [corun=tokens] [evict=W]
 *         [ttft_decode=tokens] [ttft_evict=W] [ttft_wait=tokens]
 *         [ttft_output=tokens]
 *         [max_body=size] [text_chunk=bytes]
 *         [tokenizer=tokenizer.json [tokenizer_config=tokenizer_config.json]];
 */

static char *
ngx_http_kvroute(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_kvroute_srv_conf_t *kcf = conf;

    u_char                        *p;
    size_t                         zone_size;
    ssize_t                        size;
    ngx_int_t                      policy;
    ngx_str_t                     *value, zone_name, s, tok_json, tok_conf;
    ngx_uint_t                     i, block_size, number, chunk_set;
    ngx_http_kvroute_main_conf_t  *kmcf;
    ngx_http_upstream_srv_conf_t  *uscf, **up;

    if (kcf->upstream) {
        return "is duplicate";
    }

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "load balancing method redefined");
    }

    value = cf->args->elts;

    zone_name.len = 0;
    zone_size = NGX_HTTP_KVROUTE_DEFAULT_ZONE_SIZE;
    block_size = 16;
    chunk_set = 0;
    ngx_str_null(&tok_json);
    ngx_str_null(&tok_conf);

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "mode=", 5) == 0) {
            s.data = value[i].data + 5;
            s.len = value[i].len - 5;

            if (s.len == 6 && ngx_strncmp(s.data, "approx", 6) == 0) {
                kcf->mode = NGX_HTTP_KVROUTE_MODE_APPROX;

            } else if (s.len == 11
                       && ngx_strncmp(s.data, "round_robin", 11) == 0)
            {
                kcf->mode = NGX_HTTP_KVROUTE_MODE_ROUND_ROBIN;

            } else if (s.len == 6 && ngx_strncmp(s.data, "random", 6) == 0) {
                kcf->mode = NGX_HTTP_KVROUTE_MODE_RANDOM;

            } else if (s.len == 2 && ngx_strncmp(s.data, "kv", 2) == 0) {
                kcf->mode = NGX_HTTP_KVROUTE_MODE_KV;

            } else {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid \"mode\" value \"%V\": expected "
                                   "approx, kv, round_robin or random", &s);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {
            s.data = value[i].data + 5;
            s.len = value[i].len - 5;

            p = ngx_strlchr(s.data, s.data + s.len, ':');

            if (p) {
                zone_name.data = s.data;
                zone_name.len = p - s.data;
                s.data = p + 1;
                s.len = value[i].data + value[i].len - s.data;

                size = ngx_parse_size(&s);

                if (size == NGX_ERROR
                    || (size_t) size < kvr_index_min_size() + 256 * 1024)
                {
                    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                       "invalid \"zone\" size \"%V\": "
                                       "expected at least %uzk", &s,
                                       (kvr_index_min_size() + 256 * 1024)
                                       / 1024 + 1);
                    return NGX_CONF_ERROR;
                }

                zone_size = size;

            } else {
                zone_name = s;
            }

            if (zone_name.len == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid \"zone\": empty name");
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "block_size=", 11) == 0) {
            if (ngx_http_kvroute_param_uint(cf, &value[i], 11, 1, 4096,
                                            &block_size)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "capacity=", 9) == 0) {
            if (ngx_http_kvroute_param_uint(cf, &value[i], 9, 0,
                                            1000000000, &kcf->capacity)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "policy=", 7) == 0) {
            policy = kvr_policy_from_name((char *) value[i].data + 7,
                                          value[i].len - 7);
            if (policy < 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid \"policy\" value \"%V\": "
                                   "expected ttft, cost, kvroute or "
                                   "dynamo",
                                   &value[i]);
                return NGX_CONF_ERROR;
            }

            kcf->policy.policy = policy;
            continue;
        }

        if (ngx_strncmp(value[i].data, "overlap_weight=", 15) == 0) {
            if (ngx_http_kvroute_param_double(cf, &value[i], 15, 0, 1000,
                                              &kcf->policy.overlap_weight)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "balance_abs=", 12) == 0) {
            if (ngx_http_kvroute_param_uint(cf, &value[i], 12, 0, 1000000,
                                            &number)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            kcf->policy.balance_abs = number;
            continue;
        }

        if (ngx_strncmp(value[i].data, "spread=", 7) == 0) {
            if (ngx_http_kvroute_param_uint(cf, &value[i], 7, 0, 1000000,
                                            &number)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            kcf->policy.spread = number;
            continue;
        }

        if (ngx_strncmp(value[i].data, "corun=", 6) == 0) {
            if (ngx_http_kvroute_param_double(cf, &value[i], 6, 0, 1e9,
                                              &kcf->policy.corun)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "evict=", 6) == 0) {
            if (ngx_http_kvroute_param_double(cf, &value[i], 6, 0, 1000,
                                              &kcf->policy.evict)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "ttft_", 5) == 0) {
            if (ngx_http_kvroute_param_ttft(cf, kcf, &value[i])
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "balance_rel=", 12) == 0) {
            if (ngx_http_kvroute_param_double(cf, &value[i], 12, 1, 1000,
                                              &kcf->policy.balance_rel)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "max_body=", 9) == 0) {
            s.data = value[i].data + 9;
            s.len = value[i].len - 9;

            size = ngx_parse_size(&s);

            if (size == NGX_ERROR || size < 64 || size > 1024 * 1024 * 1024) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid \"max_body\" value \"%V\": "
                                   "expected a size from 64 to 1g", &s);
                return NGX_CONF_ERROR;
            }

            kcf->max_body = size;
            continue;
        }

        if (ngx_strncmp(value[i].data, "text_chunk=", 11) == 0) {
            if (ngx_http_kvroute_param_uint(cf, &value[i], 11, 1, 1048576,
                                            &kcf->chunk_bytes)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            chunk_set = 1;
            continue;
        }

        if (ngx_strncmp(value[i].data, "events_port=", 12) == 0) {

            /* "+N": N above each server's own port (several per host) */

            kcf->events_offset = (value[i].len > 12 && value[i].data[12] == '+');

            if (ngx_http_kvroute_param_uint(cf, &value[i],
                                            12 + kcf->events_offset, 1, 65535,
                                            &kcf->events_port)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "replay_port=", 12) == 0) {
            kcf->replay_offset = (value[i].len > 12 && value[i].data[12] == '+');

            if (ngx_http_kvroute_param_uint(cf, &value[i],
                                            12 + kcf->replay_offset, 1, 65535,
                                            &kcf->replay_port)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "predict=", 8) == 0) {
            if (ngx_http_kvroute_param_uint(cf, &value[i], 8, 0, 1000000,
                                            &kcf->predict)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "events_ranks=", 13) == 0) {
            if (ngx_http_kvroute_param_uint(cf, &value[i], 13, 1, 64,
                                            &kcf->events_ranks)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "events_topic=", 13) == 0) {
            kcf->events_topic.data = value[i].data + 13;
            kcf->events_topic.len = value[i].len - 13;
            continue;
        }

        if (ngx_strncmp(value[i].data, "models=", 7) == 0) {
            kcf->models.data = value[i].data + 7;
            kcf->models.len = value[i].len - 7;

            if (kcf->models.len == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "tokenizer=", 10) == 0) {
            tok_json.data = value[i].data + 10;
            tok_json.len = value[i].len - 10;
            continue;
        }

        if (ngx_strncmp(value[i].data, "tokenizer_config=", 17) == 0) {
            tok_conf.data = value[i].data + 17;
            tok_conf.len = value[i].len - 17;
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", &value[i]);
        return NGX_CONF_ERROR;
    }

    if (tok_conf.len && tok_json.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tokenizer_config\" needs \"tokenizer\"");
        return NGX_CONF_ERROR;
    }

    if (tok_json.len
        && ngx_http_kvroute_load_tokenizer(cf, kcf, &tok_json, &tok_conf)
           != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    kcf->block_size = block_size;
    kcf->policy.block_size = block_size;

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) {
        if (kcf->events_port + kcf->events_ranks - 1 > 65535) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"events_ranks\": ports beyond 65535");
            return NGX_CONF_ERROR;
        }

        if (kcf->tokenizer == NULL) {
            ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                               "\"mode=kv\" without \"tokenizer\": only "
                               "prompts sent as token ids can match events");
        }
    }

    if (!chunk_set) {
        /* about 4 bytes of text per token: a chunk stands for a block */
        kcf->chunk_bytes = 4 * block_size;
    }

    if (zone_name.len == 0) {
        zone_name.len = sizeof("kvroute_") - 1 + uscf->host.len;
        zone_name.data = ngx_pnalloc(cf->pool, zone_name.len);
        if (zone_name.data == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_sprintf(zone_name.data, "kvroute_%V", &uscf->host);
    }

    kcf->zone = ngx_http_kvroute_add_zone(cf, &zone_name, zone_size);
    if (kcf->zone == NULL) {
        return NGX_CONF_ERROR;
    }

    kcf->upstream = uscf;
    kcf->file_name = cf->conf_file->file.name.data;
    kcf->line = cf->conf_file->line;

    uscf->peer.init_upstream = ngx_http_kvroute_init_upstream;

    uscf->flags = NGX_HTTP_UPSTREAM_CREATE
                  |NGX_HTTP_UPSTREAM_WEIGHT
                  |NGX_HTTP_UPSTREAM_MAX_CONNS
                  |NGX_HTTP_UPSTREAM_MAX_FAILS
                  |NGX_HTTP_UPSTREAM_FAIL_TIMEOUT
                  |NGX_HTTP_UPSTREAM_DOWN
                  |NGX_HTTP_UPSTREAM_BACKUP;

    kmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_kvroute_module);

    up = ngx_array_push(&kmcf->upstreams);
    if (up == NULL) {
        return NGX_CONF_ERROR;
    }

    *up = uscf;

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV && kmcf->kv++ == 0
        && ngx_http_kvroute_events_add_helper(cf, kmcf) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * kvroute_capacity 10.0.0.5:8000 292;
 * a server whose KV cache differs from capacity= (a smaller GPU)
 */

static char *
ngx_http_kvroute_capacity(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_kvroute_srv_conf_t *kcf = conf;

    ngx_int_t                     blocks;
    ngx_str_t                    *value;
    ngx_uint_t                    i;
    ngx_http_kvroute_capacity_t  *c;

    if (kcf->upstream == NULL) {
        return "needs \"kvroute ...\" before it";
    }

    value = cf->args->elts;

    blocks = ngx_atoi(value[2].data, value[2].len);

    if (blocks <= 0 || blocks > 1000000000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid capacity \"%V\" for \"%V\": expected "
                           "blocks from 1 to 1000000000", &value[2],
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    if (kcf->capacity_overrides == NULL) {
        kcf->capacity_overrides = ngx_array_create(cf->pool, 4,
                                      sizeof(ngx_http_kvroute_capacity_t));
        if (kcf->capacity_overrides == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    c = kcf->capacity_overrides->elts;

    for (i = 0; i < kcf->capacity_overrides->nelts; i++) {
        if (c[i].server.len == value[1].len
            && ngx_strncmp(c[i].server.data, value[1].data, value[1].len)
               == 0)
        {
            return "names a server twice";
        }
    }

    c = ngx_array_push(kcf->capacity_overrides);
    if (c == NULL) {
        return NGX_CONF_ERROR;
    }

    c->server = value[1];
    c->blocks = blocks;
    c->file_name = cf->conf_file->file.name.data;
    c->line = cf->conf_file->line;

    return NGX_CONF_OK;
}


/*
 * kvroute_events 10.0.0.1:8000 tcp://10.0.0.1:5557 [replay=tcp://...];
 * a server whose events are not where the port convention says
 */

static char *
ngx_http_kvroute_events(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_kvroute_srv_conf_t *kcf = conf;

    ngx_str_t                    *value;
    ngx_http_kvroute_override_t  *o;

    if (kcf->upstream == NULL || kcf->mode != NGX_HTTP_KVROUTE_MODE_KV) {
        return "needs \"kvroute mode=kv ...\" before it";
    }

    value = cf->args->elts;

    if (ngx_strncmp(value[2].data, "tcp://", 6) != 0
        && ngx_strncmp(value[2].data, "ipc://", 6) != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid endpoint \"%V\": expected tcp://... or "
                           "ipc://...", &value[2]);
        return NGX_CONF_ERROR;
    }

    if (kcf->events_overrides == NULL) {
        kcf->events_overrides = ngx_array_create(cf->pool, 4,
                                    sizeof(ngx_http_kvroute_override_t));
        if (kcf->events_overrides == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    o = ngx_array_push(kcf->events_overrides);
    if (o == NULL) {
        return NGX_CONF_ERROR;
    }

    /* configuration tokens are NUL-terminated, as libzmq wants them */

    o->server = value[1];
    o->endpoint = value[2];
    ngx_str_null(&o->replay);
    o->file_name = cf->conf_file->file.name.data;
    o->line = cf->conf_file->line;

    if (cf->args->nelts == 4) {
        if (ngx_strncmp(value[3].data, "replay=", 7) != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[3]);
            return NGX_CONF_ERROR;
        }

        o->replay.data = value[3].data + 7;
        o->replay.len = value[3].len - 7;
    }

    return NGX_CONF_OK;
}


/*
 * Called from init_upstream, once the upstream's servers are known:
 * mode=kv needs to know where events come from, and kvroute_capacity and
 * kvroute_events lines must name servers of the upstream (a misspelt one
 * would otherwise never apply).
 */

ngx_int_t
ngx_http_kvroute_check_servers(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_uint_t                    i;
    ngx_http_kvroute_capacity_t  *c;
    ngx_http_kvroute_override_t  *o;
    ngx_http_kvroute_srv_conf_t  *kcf;

    kcf = ngx_http_conf_upstream_srv_conf(us, ngx_http_kvroute_module);

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV && kcf->events_port == 0
        && kcf->events_overrides == NULL)
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"mode=kv\" needs \"events_port\" (the port of each "
                      "server's KV event publisher) or \"kvroute_events\" "
                      "lines in upstream \"%V\" in %s:%ui",
                      &us->host, kcf->file_name, kcf->line);
        return NGX_ERROR;
    }

    if (kcf->capacity_overrides) {
        c = kcf->capacity_overrides->elts;

        for (i = 0; i < kcf->capacity_overrides->nelts; i++) {
            if (ngx_http_kvroute_check_server(cf, us, "kvroute_capacity",
                                              &c[i].server, c[i].file_name,
                                              c[i].line)
                != NGX_OK)
            {
                return NGX_ERROR;
            }
        }
    }

    if (kcf->events_overrides) {
        o = kcf->events_overrides->elts;

        for (i = 0; i < kcf->events_overrides->nelts; i++) {
            if (ngx_http_kvroute_check_server(cf, us, "kvroute_events",
                                              &o[i].server, o[i].file_name,
                                              o[i].line)
                != NGX_OK)
            {
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;
}


/* a server is named as its peers are: address:port, as resolved */

static ngx_int_t
ngx_http_kvroute_check_server(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, char *directive, ngx_str_t *server,
    u_char *file_name, ngx_uint_t line)
{
    ngx_http_upstream_rr_peer_t   *peer;
    ngx_http_upstream_rr_peers_t  *peers, *list;

    peers = us->peer.data;

    for (list = peers; list; list = list->next) {
        for (peer = list->peer; peer; peer = peer->next) {
            if (peer->name.len == server->len
                && ngx_strncmp(peer->name.data, server->data, server->len)
                   == 0)
            {
                return NGX_OK;
            }
        }
    }

    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "\"%s\" names \"%V\", which is not a server of upstream "
                  "\"%V\" (servers are named by address:port, as "
                  "\"%V\") in %s:%ui", directive, server, &us->host,
                  &peers->peer->name, file_name, line);

    return NGX_ERROR;
}


/*
 * The tokenizer is loaded once, here in the master; workers share it
 * copy-on-write, and upstreams naming the same files share it too.  One
 * that kvroute cannot reproduce exactly is refused.
 */

static char *
ngx_http_kvroute_load_tokenizer(ngx_conf_t *cf,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_str_t *json, ngx_str_t *config)
{
    char                           err[256];
    size_t                         max_input;
    ngx_uint_t                     i;
    ngx_pool_cleanup_t            *cln;
    ngx_http_kvroute_main_conf_t  *kmcf;
    ngx_http_kvroute_tokenizer_t  *t;

    if (json->len == 0 || ngx_conf_full_name(cf->cycle, json, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (config->len && ngx_conf_full_name(cf->cycle, config, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    max_input = kcf->max_body + NGX_HTTP_KVROUTE_RENDER_EXTRA;

    kmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_kvroute_module);

    t = kmcf->tokenizers.elts;

    for (i = 0; i < kmcf->tokenizers.nelts; i++) {
        if (t[i].json.len != json->len
            || ngx_strncmp(t[i].json.data, json->data, json->len) != 0
            || t[i].config.len != config->len
            || ngx_strncmp(t[i].config.data, config->data, config->len) != 0)
        {
            continue;
        }

        /* each upstream refuses bodies beyond its own max_body first */

        if (max_input > t[i].max_input) {
            t[i].max_input = max_input;
            kvr_tokenizer_set_max_input(t[i].tokenizer, max_input);
        }

        kcf->tokenizer = t[i].tokenizer;
        kcf->chat = t[i].chat;

        return NGX_CONF_OK;
    }

    t = ngx_array_push(&kmcf->tokenizers);
    if (t == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(t, sizeof(ngx_http_kvroute_tokenizer_t));

    t->json = *json;
    t->config = *config;
    t->max_input = max_input;

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    err[0] = '\0';

    /* ngx_conf_full_name() leaves the names NUL-terminated */
    kcf->tokenizer = kvr_tokenizer_load((char *) json->data,
                                        config->len ? (char *) config->data
                                                    : NULL,
                                        err, sizeof(err));

    if (kcf->tokenizer == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"tokenizer\" \"%V\": %s", json, err);
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_http_kvroute_free_tokenizer;
    cln->data = kcf->tokenizer;

    t->tokenizer = kcf->tokenizer;

    kvr_tokenizer_set_max_input(kcf->tokenizer, max_input);

    if (config->len == 0) {
        return NGX_CONF_OK;
    }

    /*
     * the chat template: a template kvroute cannot render exactly leaves
     * chat requests on text keys, which still route; say so loudly
     */

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    err[0] = '\0';

    kcf->chat = kvr_chat_config_load((char *) config->data, NULL, err,
                                     sizeof(err));

    if (kcf->chat == NULL) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "kvroute: chat requests keep text keys, the chat "
                           "template of \"%V\" is not usable: %s",
                           config, err);
        return NGX_CONF_OK;
    }

    cln->handler = ngx_http_kvroute_free_chat;
    cln->data = kcf->chat;

    t->chat = kcf->chat;

    return NGX_CONF_OK;
}


static void
ngx_http_kvroute_free_chat(void *data)
{
    kvr_chat_config_free(data);
}


static void
ngx_http_kvroute_free_tokenizer(void *data)
{
    kvr_tokenizer_free(data);
}


static char *
ngx_http_kvroute_param_uint(ngx_conf_t *cf, ngx_str_t *value, size_t skip,
    ngx_uint_t min, ngx_uint_t max, ngx_uint_t *out)
{
    ngx_int_t  n;

    n = ngx_atoi(value->data + skip, value->len - skip);

    if (n == NGX_ERROR || (ngx_uint_t) n < min || (ngx_uint_t) n > max) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%*s\" value \"%*s\": expected an "
                           "integer from %ui to %ui",
                           skip - 1, value->data,
                           value->len - skip, value->data + skip, min, max);
        return NGX_CONF_ERROR;
    }

    *out = n;

    return NGX_CONF_OK;
}


/* policy=ttft's weights, all in prompt tokens but evict (in prompts) */

static char *
ngx_http_kvroute_param_ttft(ngx_conf_t *cf, ngx_http_kvroute_srv_conf_t *kcf,
    ngx_str_t *value)
{
    if (ngx_strncmp(value->data, "ttft_decode=", 12) == 0) {
        return ngx_http_kvroute_param_double(cf, value, 12, 0, 1e9,
                                             &kcf->policy.ttft_decode);
    }

    if (ngx_strncmp(value->data, "ttft_evict=", 11) == 0) {
        return ngx_http_kvroute_param_double(cf, value, 11, 0, 1000,
                                             &kcf->policy.ttft_evict);
    }

    if (ngx_strncmp(value->data, "ttft_wait=", 10) == 0) {
        return ngx_http_kvroute_param_double(cf, value, 10, 0, 1e9,
                                             &kcf->policy.ttft_wait);
    }

    if (ngx_strncmp(value->data, "ttft_output=", 12) == 0) {
        return ngx_http_kvroute_param_uint(cf, value, 12, 0, 1000000,
                                           &kcf->output);
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"",
                       value);

    return NGX_CONF_ERROR;
}


static char *
ngx_http_kvroute_param_double(ngx_conf_t *cf, ngx_str_t *value, size_t skip,
    double min, double max, double *out)
{
    u_char  *p, *last;
    double   n, scale;
    int      digits;

    /* a plain decimal: digits, optionally a point and more digits */

    p = value->data + skip;
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

    if (digits == 0 || n < min || n > max) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%*s\" value \"%*s\": expected a number "
                           "from %.1f to %.1f",
                           skip - 1, value->data,
                           value->len - skip, value->data + skip, min, max);
        return NGX_CONF_ERROR;
    }

    *out = n;

    return NGX_CONF_OK;
}


static void *
ngx_http_kvroute_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_kvroute_main_conf_t  *kmcf;

    kmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_kvroute_main_conf_t));
    if (kmcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&kmcf->upstreams, cf->pool, 4,
                       sizeof(ngx_http_upstream_srv_conf_t *))
        != NGX_OK)
    {
        return NULL;
    }

    if (ngx_array_init(&kmcf->tokenizers, cf->pool, 2,
                       sizeof(ngx_http_kvroute_tokenizer_t))
        != NGX_OK)
    {
        return NULL;
    }

    return kmcf;
}


static void *
ngx_http_kvroute_create_srv_conf(ngx_conf_t *cf)
{
    ngx_http_kvroute_srv_conf_t  *kcf;

    kcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_kvroute_srv_conf_t));
    if (kcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     kcf->mode = NGX_HTTP_KVROUTE_MODE_APPROX;
     *     kcf->zone = NULL;
     *     kcf->capacity = 0;
     *     kcf->upstream = NULL;
     *     kcf->slots = NULL;
     */

    kcf->block_size = 16;
    kcf->max_body = 1024 * 1024;
    kcf->chunk_bytes = 64;
    kcf->policy.policy = KVR_POLICY_TTFT;
    kcf->policy.ttft_decode = 1200;
    kcf->policy.ttft_evict = 2;
    kcf->policy.ttft_wait = 40000;
    kcf->output = 256;
    kcf->policy.block_size = 16;
    kcf->policy.overlap_weight = 1.0;
    kcf->policy.balance_abs = 4;
    kcf->policy.balance_rel = 1.5;
    kcf->policy.spread = 1;
    kcf->policy.corun = 4096;
    kcf->policy.evict = 4;
    kcf->events_ranks = 1;
    kcf->predict = 1024;

    return kcf;
}


static void *
ngx_http_kvroute_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_kvroute_loc_conf_t  *klcf;

    klcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_kvroute_loc_conf_t));
    if (klcf == NULL) {
        return NULL;
    }

    klcf->read_body = NGX_CONF_UNSET;

    return klcf;
}


static char *
ngx_http_kvroute_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_kvroute_loc_conf_t  *prev = parent;
    ngx_http_kvroute_loc_conf_t  *conf = child;

    ngx_conf_merge_value(conf->read_body, prev->read_body, 1);

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_kvroute_preconfiguration(ngx_conf_t *cf)
{
    return ngx_http_kvroute_add_variables(cf);
}


static ngx_int_t
ngx_http_kvroute_postconfiguration(ngx_conf_t *cf)
{
    ngx_http_handler_pt           *h;
    ngx_http_core_main_conf_t     *cmcf;
    ngx_http_kvroute_main_conf_t  *kmcf;

    kmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_kvroute_module);

    if (kmcf->upstreams.nelts == 0) {
        /* no kvroute upstream: stay out of every request */
        return NGX_OK;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PRECONTENT_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_kvroute_precontent_handler;

    return ngx_http_kvroute_filter_init(cf);
}


static ngx_int_t
ngx_http_kvroute_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                     i;
    ngx_http_kvroute_srv_conf_t   *kcf;
    ngx_http_kvroute_main_conf_t  *kmcf;
    ngx_http_upstream_srv_conf_t **up;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    kmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_kvroute_module);
    if (kmcf == NULL) {
        return NGX_OK;
    }

    up = kmcf->upstreams.elts;

    for (i = 0; i < kmcf->upstreams.nelts; i++) {
        kcf = ngx_http_conf_upstream_srv_conf(up[i], ngx_http_kvroute_module);

        if (kcf->zone->row == -1
            && ngx_http_kvroute_claim_row(kcf->zone, cycle->log) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    /* no helper process without a master: the events run here */

    if (ngx_process == NGX_PROCESS_SINGLE && kmcf->kv) {
        return ngx_http_kvroute_events_init_single(cycle, kmcf);
    }

    return NGX_OK;
}


static void
ngx_http_kvroute_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                     i;
    ngx_http_kvroute_srv_conf_t   *kcf;
    ngx_http_kvroute_main_conf_t  *kmcf;
    ngx_http_upstream_srv_conf_t **up;

    kmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_kvroute_module);
    if (kmcf == NULL) {
        return;
    }

    up = kmcf->upstreams.elts;

    for (i = 0; i < kmcf->upstreams.nelts; i++) {
        kcf = ngx_http_conf_upstream_srv_conf(up[i], ngx_http_kvroute_module);
        ngx_http_kvroute_release_row(kcf->zone);
    }
}
