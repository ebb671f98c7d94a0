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
static char *ngx_http_kvroute_check_params(ngx_conf_t *cf,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_upstream_srv_conf_t *uscf);
static char *ngx_http_kvroute_add_upstream(ngx_conf_t *cf,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_upstream_srv_conf_t *uscf);
static void *ngx_http_kvroute_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_kvroute_create_srv_conf(ngx_conf_t *cf);
static void *ngx_http_kvroute_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_kvroute_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_kvroute_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_kvroute_postconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_kvroute_init_module(ngx_cycle_t *cycle);
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
    ngx_http_kvroute_init_module,          /* init module */
    ngx_http_kvroute_init_process,         /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_kvroute_exit_process,         /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/*
 * kvroute [mode=approx|kv|round_robin|random] [zone=name[:size]]
 *         [events_port=[+]N [replay_port=[+]N] [events_ranks=N|K-M]
 *          [events_topic=T] [predict=blocks] [models=name[,name...]]]
 *         [metrics=on|off [metrics_path=/metrics] [metrics_interval=500ms]
 *          [metrics_port=[+]N] [metrics_speed=on|off] [metrics_load=on|off]]
 *         [block_size=16] [capacity=blocks]
 *         [policy=ttft|cost|kvroute|dynamo]
 *         [overlap_weight=1.0] [balance_abs=N] [balance_rel=R] [spread=N]
 *         [corun=tokens] [evict=W]
 *         [ttft_decode=tokens|auto] [ttft_evict=W] [ttft_wait=tokens]
 *         [ttft_output=tokens] [ttft_own=tokens] [place_slack=tokens]
 *         [host_weight=0.75] [disk_weight=0.25]
 *         [max_body=size] [text_chunk=bytes]
 *         [tokenizer=tokenizer.json [tokenizer_config=tokenizer_config.json]];
 *
 * Each NAME=VALUE is set from a table (ngx_http_kvroute_params.c).
 */

static char *
ngx_http_kvroute(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_kvroute_srv_conf_t *kcf = conf;

    ngx_http_upstream_srv_conf_t  *uscf;

    if (kcf->upstream) {
        return "is duplicate";
    }

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "load balancing method redefined");
    }

    if (ngx_http_kvroute_set_params(cf, kcf) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_kvroute_check_params(cf, kcf, uscf) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    return ngx_http_kvroute_add_upstream(cf, kcf, uscf);
}


/* what one parameter cannot say alone, and the defaults others derive */

static char *
ngx_http_kvroute_check_params(ngx_conf_t *cf,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_upstream_srv_conf_t *uscf)
{
    ngx_str_t  *zone_name;

    if (kcf->tokenizer_config.len && kcf->tokenizer_json.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tokenizer_config\" needs \"tokenizer\"");
        return NGX_CONF_ERROR;
    }

    if (kcf->tokenizer_json.len
        && ngx_http_kvroute_load_tokenizer(cf, kcf, &kcf->tokenizer_json,
                                           &kcf->tokenizer_config)
           != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    kcf->policy.block_size = kcf->block_size;

    /*
     * the engines' speeds come with their metrics unless turned off: on
     * unequal GPUs they decide, on equal ones they cost nothing measured
     * (BENCHMARKS §2.28)
     */

    if (kcf->metrics_speed == NGX_CONF_UNSET_UINT) {
        kcf->metrics_speed = kcf->metrics;
    }

    /*
     * a request in flight, in prompt tokens of prefill: with the engines'
     * speeds, of the fastest engine's; without, of an engine of the
     * fleet's mean speed, which takes longer (BENCHMARKS §2.26); with
     * the speeds and the request's own output weighed, 300 rather than
     * 600 shortens the tail at the same throughput (§2.40).  With the
     * speeds it is learned unless set (auto, kvr_inflight_cost.c): 300
     * where a decode is nearly free, more where it slows every step, and
     * 300 until the first fit (§2.46)
     */

    if (kcf->policy.ttft_decode == NGX_HTTP_KVROUTE_DECODE_AUTO
        || (kcf->policy.ttft_decode < 0 && kcf->metrics && kcf->metrics_speed))
    {
        /* only policy=ttft weighs it: the others have nothing to learn */
        kcf->decode_auto = (kcf->policy.policy == KVR_POLICY_TTFT);
        kcf->policy.ttft_decode = -1;
    }

    if (kcf->policy.ttft_decode < 0) {
        kcf->policy.ttft_decode = (kcf->metrics && kcf->metrics_speed)
                                  ? 300 : 1200;
    }

    /*
     * this request's own output, a token in prompt tokens of the fastest
     * engine's prefill: only the speeds tell engines apart by it; a
     * closed-loop client waits for the output on a slow engine too
     * (BENCHMARKS §2.31)
     */

    if (kcf->policy.ttft_own < 0) {
        kcf->policy.ttft_own = (kcf->metrics && kcf->metrics_speed) ? 50 : 0;
    }

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) {
        if (kcf->events_port.number + kcf->events_ranks.first
            + kcf->events_ranks.count - 1 > 65535)
        {
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

    if (kcf->metrics_path.len == 0 || kcf->metrics_path.data[0] != '/'
        || ngx_strlchr(kcf->metrics_path.data,
                       kcf->metrics_path.data + kcf->metrics_path.len, ' ')
        || ngx_strlchr(kcf->metrics_path.data,
                       kcf->metrics_path.data + kcf->metrics_path.len, '\r')
        || ngx_strlchr(kcf->metrics_path.data,
                       kcf->metrics_path.data + kcf->metrics_path.len, '\n'))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"metrics_path\" value \"%V\": "
                           "expected a path starting with \"/\", without "
                           "spaces", &kcf->metrics_path);
        return NGX_CONF_ERROR;
    }

    if (kcf->chunk_bytes == NGX_CONF_UNSET_UINT) {
        /* about 4 bytes of text per token: a chunk stands for a block */
        kcf->chunk_bytes = 4 * kcf->block_size;
    }

    zone_name = &kcf->zone_conf.name;

    if (zone_name->len == 0) {
        zone_name->len = sizeof("kvroute_") - 1 + uscf->host.len;
        zone_name->data = ngx_pnalloc(cf->pool, zone_name->len);
        if (zone_name->data == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_sprintf(zone_name->data, "kvroute_%V", &uscf->host);
    }

    return NGX_CONF_OK;
}


/* the upstream balances with kvroute, in its zone */

static char *
ngx_http_kvroute_add_upstream(ngx_conf_t *cf,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_upstream_srv_conf_t *uscf)
{
    ngx_http_kvroute_main_conf_t  *kmcf;
    ngx_http_upstream_srv_conf_t  **up;

    kcf->zone = ngx_http_kvroute_add_zone(cf, &kcf->zone_conf.name,
                                          kcf->zone_conf.size);
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

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) {
        kmcf->kv++;
    }

    /* one helper for every upstream's events and scrapes */

    if ((kcf->mode == NGX_HTTP_KVROUTE_MODE_KV || kcf->metrics)
        && kmcf->helped++ == 0
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
    ngx_uint_t                    i;
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

    /* two endpoints for one server: only one would ever be used */

    o = kcf->events_overrides->elts;

    for (i = 0; i < kcf->events_overrides->nelts; i++) {
        if (o[i].server.len == value[1].len
            && ngx_strncmp(o[i].server.data, value[1].data, value[1].len)
               == 0)
        {
            return "names a server twice";
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
    ngx_uint_t                     i, n, per;
    ngx_http_kvroute_capacity_t   *c;
    ngx_http_kvroute_override_t   *o;
    ngx_http_kvroute_srv_conf_t   *kcf;
    ngx_http_upstream_rr_peers_t  *peers;

    kcf = ngx_http_conf_upstream_srv_conf(us, ngx_http_kvroute_module);

    /*
     * the index slots each server takes: its own (load, status), one per
     * data-parallel rank, one of predictions
     */

    peers = us->peer.data;
    n = peers->number + (peers->next ? peers->next->number : 0);
    per = 1 + (kcf->events_ranks.count > 1 ? kcf->events_ranks.count : 0)
          + (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV && kcf->predict);

    if (kcf->events_ranks.count > 1 && n * per > KVR_INDEX_MAX_SLOTS) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "upstream \"%V\" needs %ui index slots (%ui servers, "
                      "%ui each with \"events_ranks\" and predictions), "
                      "more than the %ui there are, in %s:%ui", &us->host,
                      n * per, n, per, (ngx_uint_t) KVR_INDEX_MAX_SLOTS,
                      kcf->file_name, kcf->line);
        return NGX_ERROR;
    }

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV
        && kcf->events_port.number == 0 && kcf->events_overrides == NULL)
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
     *     kcf->events_port = { 0, 0 };
     *     kcf->replay_port = { 0, 0 };
     *     kcf->runtime = NULL;
     */

    kcf->zone_conf.size = NGX_HTTP_KVROUTE_DEFAULT_ZONE_SIZE;
    kcf->block_size = 16;
    kcf->max_body = 1024 * 1024;
    kcf->chunk_bytes = NGX_CONF_UNSET_UINT;     /* 4 * block_size */
    kcf->policy.policy = KVR_POLICY_TTFT;
    kcf->policy.ttft_decode = -1;           /* unset: check_params */
    kcf->policy.ttft_own = -1;              /* unset: check_params */
    kcf->policy.ttft_evict = 2;
    kcf->policy.ttft_wait = 40000;
    kcf->policy.place_slack = KVR_POLICY_PLACE_SLACK;
    kcf->output = 256;
    kcf->policy.block_size = 16;
    kcf->policy.overlap_weight = 1.0;
    kcf->policy.balance_abs = 4;
    kcf->policy.balance_rel = 1.5;
    kcf->policy.spread = 1;
    kcf->policy.corun = 4096;
    kcf->policy.evict = 4;
    kcf->policy.host_weight = KVR_POLICY_HOST_WEIGHT;
    kcf->policy.disk_weight = KVR_POLICY_DISK_WEIGHT;
    kcf->events_ranks.count = 1;
    kcf->predict = 1024;
    ngx_str_set(&kcf->metrics_path, "/metrics");
    kcf->metrics_interval = 500;
    kcf->metrics_speed = NGX_CONF_UNSET_UINT;   /* as metrics= */
    kcf->metrics_load = 1;

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


/*
 * With master_process off, a reload makes a new cycle in the same process
 * and init_process is not called again: the new cycle's runtime state is
 * resolved here, once its zones exist.
 */

static ngx_int_t
ngx_http_kvroute_init_module(ngx_cycle_t *cycle)
{
    if (ngx_process != NGX_PROCESS_SINGLE || ngx_test_config
        || ngx_is_init_cycle(cycle->old_cycle))
    {
        return NGX_OK;
    }

    return ngx_http_kvroute_runtime_init(cycle);
}


static ngx_int_t
ngx_http_kvroute_init_process(ngx_cycle_t *cycle)
{
    ngx_http_kvroute_main_conf_t  *kmcf;

    if (ngx_http_kvroute_runtime_init(cycle) != NGX_OK) {
        return NGX_ERROR;
    }

    kmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_kvroute_module);

    /* no helper process without a master: the events run here */

    if (ngx_process == NGX_PROCESS_SINGLE && kmcf && kmcf->helped) {
        return ngx_http_kvroute_events_init_single(cycle, kmcf);
    }

    return NGX_OK;
}


static void
ngx_http_kvroute_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_kvroute_runtime_exit(cycle);
}
