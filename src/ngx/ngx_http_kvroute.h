/*
 * Copyright (C) kvroute developers
 *
 * Types shared by the nginx side of kvroute: configuration, each
 * process's runtime state, the shared zone and the per-request context.
 */

#ifndef _NGX_HTTP_KVROUTE_H_INCLUDED_
#define _NGX_HTTP_KVROUTE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "kvr_index.h"
#include "kvr_policy.h"
#include "kvr_homes.h"
#include "kvr_pins.h"
#include "kvr_engine_load.h"
#include "kvr_inflight_cost.h"
#include "kvr_tokenizer.h"
#include "kvr_chat.h"
#include "kvr_keys.h"


#define NGX_HTTP_KVROUTE_MAX_ROWS     64
#define NGX_HTTP_KVROUTE_MAX_PEERS    KVR_INDEX_MAX_SLOTS
#define NGX_HTTP_KVROUTE_MAX_RANKS    32   /* data-parallel, per server */

/* ttft_decode=auto until check_params(): below any number it takes */
#define NGX_HTTP_KVROUTE_DECODE_AUTO  -2

/* a chat template adds markup: room beyond the body for its render */
#define NGX_HTTP_KVROUTE_RENDER_EXTRA KVR_KEYS_RENDER_EXTRA


typedef enum {
    NGX_HTTP_KVROUTE_MODE_APPROX = 0,
    NGX_HTTP_KVROUTE_MODE_ROUND_ROBIN,
    NGX_HTTP_KVROUTE_MODE_RANDOM,
    NGX_HTTP_KVROUTE_MODE_KV
} ngx_http_kvroute_mode_e;


/* why a server was chosen; names in ngx_http_kvroute_reason_names[] */
typedef enum {
    NGX_HTTP_KVROUTE_R_NONE = 0,
    NGX_HTTP_KVROUTE_R_NOT_INFERENCE,
    NGX_HTTP_KVROUTE_R_NO_BODY,
    NGX_HTTP_KVROUTE_R_CONTENT_TYPE,
    NGX_HTTP_KVROUTE_R_NOT_JSON,
    NGX_HTTP_KVROUTE_R_INVALID_UTF8,
    NGX_HTTP_KVROUTE_R_NOT_OBJECT,
    NGX_HTTP_KVROUTE_R_NO_PROMPT,
    NGX_HTTP_KVROUTE_R_EMPTY_PROMPT,
    NGX_HTTP_KVROUTE_R_TOO_LARGE,
    NGX_HTTP_KVROUTE_R_NO_MEMORY,
    NGX_HTTP_KVROUTE_R_SHORT,
    NGX_HTTP_KVROUTE_R_OVERLAP,
    NGX_HTTP_KVROUTE_R_HOME,
    NGX_HTTP_KVROUTE_R_LOAD,
    NGX_HTTP_KVROUTE_R_COST,
    NGX_HTTP_KVROUTE_R_FALLBACK,
    NGX_HTTP_KVROUTE_R_ROUND_ROBIN,
    NGX_HTTP_KVROUTE_R_RANDOM,
    NGX_HTTP_KVROUTE_R_LAST
} ngx_http_kvroute_reason_e;


/* in-flight load charged by one worker process; only it writes its row */
typedef struct {
    ngx_pid_t                        pid;
    ngx_atomic_t                     requests[NGX_HTTP_KVROUTE_MAX_PEERS];
    ngx_atomic_t                     tokens[NGX_HTTP_KVROUTE_MAX_PEERS];
    ngx_atomic_t                     prefill[NGX_HTTP_KVROUTE_MAX_PEERS];
} ngx_http_kvroute_row_t;


/* a server's KV event stream, as the events helper last saw it */
typedef struct {
    uint64_t                         messages;    /* received */
    uint64_t                         batches;     /* applied */
    uint64_t                         dropped;     /* not decodable */
    uint64_t                         stored;
    uint64_t                         removed;
    uint64_t                         cleared;
    uint64_t                         gaps;
    uint64_t                         gaps_seen;   /* kvstate's, copied */
    uint64_t                         orphans;
    uint64_t                         bad_block_size;
    uint64_t                         last_bad_block_size;
    uint64_t                         last_msec;   /* last message, ms */
    uint64_t                         replays;     /* asked for */
    uint64_t                         replayed;    /* batches replayed */
    uint64_t                         stale;       /* 1: index incomplete */
    uint64_t                         stale_total; /* times it became so */
    uint64_t                         connects;    /* (re)connections */
    uint64_t                         offloaded;   /* other tiers' blocks */
    uint64_t                         other_group; /* other groups' blocks */
    uint64_t                         reannounced; /* held hashes stored */
    uint64_t                         lost;        /* batches never had */
} ngx_http_kvroute_events_stats_t;


/* why a server's load is its own counts; names in ..._scrape_reasons[] */
typedef enum {
    NGX_HTTP_KVROUTE_SCRAPE_OK = 0,
    NGX_HTTP_KVROUTE_SCRAPE_NEVER,       /* no scrape has succeeded yet */
    NGX_HTTP_KVROUTE_SCRAPE_OLD,         /* the last success is too old */
    NGX_HTTP_KVROUTE_SCRAPE_CONNECT,
    NGX_HTTP_KVROUTE_SCRAPE_TIMEOUT,
    NGX_HTTP_KVROUTE_SCRAPE_IO,
    NGX_HTTP_KVROUTE_SCRAPE_CLOSED,      /* before the reply's head ended */
    NGX_HTTP_KVROUTE_SCRAPE_NOT_HTTP,
    NGX_HTTP_KVROUTE_SCRAPE_STATUS,      /* not 200 */
    NGX_HTTP_KVROUTE_SCRAPE_CHUNKED,
    NGX_HTTP_KVROUTE_SCRAPE_TOO_LARGE,
    NGX_HTTP_KVROUTE_SCRAPE_NO_METRICS,  /* no running nor waiting */
    NGX_HTTP_KVROUTE_SCRAPE_LAST
} ngx_http_kvroute_scrape_reason_e;


/* a server's engine as its last scrapes saw it; the helper writes, locked */
typedef struct {
    uint64_t                         ok_msec;     /* last success, sent at */
    uint64_t                         scrapes;
    uint64_t                         failures;
    ngx_uint_t                       failure;     /* of the last attempt */
    kvr_engine_load_t                load;        /* of the last success */
} ngx_http_kvroute_engine_stats_t;


/* the shared part of a zone */
typedef struct {
    ngx_atomic_t                     decisions[NGX_HTTP_KVROUTE_R_LAST];
    ngx_atomic_t                     decision_usec;
    ngx_atomic_t                     helper_starts;
    ngx_atomic_t                     nrows;       /* rows ever claimed */
    ngx_http_kvroute_events_stats_t  events[NGX_HTTP_KVROUTE_MAX_PEERS];
    ngx_http_kvroute_engine_stats_t  engines[NGX_HTTP_KVROUTE_MAX_PEERS];
    ngx_http_kvroute_row_t           rows[NGX_HTTP_KVROUTE_MAX_ROWS];
    kvr_homes_t                      homes[NGX_HTTP_KVROUTE_MAX_PEERS];
    kvr_homes_t                      roots[NGX_HTTP_KVROUTE_MAX_PEERS];
                                                  /* kv: prefixes stored */
    int                              tiers[NGX_HTTP_KVROUTE_MAX_PEERS][2];
                                                  /* kv: a GPU slot's
                                                     offload tiers' slots,
                                                     host and disk, + 1;
                                                     0: none */
    int                              tier_groups[NGX_HTTP_KVROUTE_MAX_PEERS][2];
                                                  /* kv: the GPU blocks a
                                                     tier's block spans
                                                     (0 or 1: one) */
    kvr_inflight_cost_t              inflight_cost; /* ttft_decode=auto */
    ngx_atomic_t                     holder;      /* pid inside the lock */
    ngx_atomic_t                     wipes;       /* index started afresh */
    kvr_index_t                     *index;
    kvr_pins_t                      *pins;        /* blocks in flight */
} ngx_http_kvroute_shctx_t;


/* process-local view of a zone (shm_zone->data) */
typedef struct {
    ngx_http_kvroute_shctx_t        *sh;
    ngx_slab_pool_t                 *shpool;
    ngx_shm_zone_t                  *shm_zone;
    ngx_int_t                        row;      /* this process's, or -1 */
} ngx_http_kvroute_zone_t;


/* events_port=[+]N, replay_port=[+]N */
typedef struct {
    ngx_uint_t                       number;     /* 0: none */
    ngx_uint_t                       relative;   /* +N: above the server's */
} ngx_http_kvroute_port_t;


/* events_ranks=N or K-M: a server's data-parallel ranks, first to last */
typedef struct {
    ngx_uint_t                       first;
    ngx_uint_t                       count;      /* 1: no ranks to choose */
} ngx_http_kvroute_ranks_t;


/* zone=name[:size] */
typedef struct {
    ngx_str_t                        name;       /* empty: kvroute_<upstream> */
    size_t                           size;
} ngx_http_kvroute_zone_conf_t;


/*
 * What one process resolves of an upstream, once, in init_process: the
 * index slot of each peer (primaries, then backups, as the peers are
 * listed), its slot of predictions, its data-parallel ranks' slots, its
 * cache size and its stable hash, and the keys' scratch.  The
 * configuration only points to it.
 */
typedef struct {
    ngx_uint_t                       nslots;
    ngx_int_t                       *slots;        /* -1: no slot */
    ngx_int_t                       *pred_slots;   /* -1: no predictions */
    ngx_uint_t                       nranks;       /* 0: no rank slots */
    int                             *rank_slots;   /* nranks a peer, -1:
                                                      none */
    uint64_t                        *capacities;   /* blocks */
    uint64_t                        *id_hashes;    /* of the peer's name */
    kvr_keys_scratch_t               keys_scratch; /* ids, rendering */
} ngx_http_kvroute_runtime_t;


typedef struct {
    ngx_uint_t                       mode;
    ngx_http_kvroute_zone_conf_t     zone_conf;
    ngx_http_kvroute_zone_t         *zone;
    ngx_uint_t                       block_size;
    ngx_uint_t                       capacity;      /* blocks per server */
    ngx_uint_t                       output;        /* policy=ttft: output
                                                       tokens of a request
                                                       without max_tokens */

    /* mode=kv: each server's events on its host at events_port + rank */
    ngx_http_kvroute_port_t          events_port;
    ngx_http_kvroute_port_t          replay_port;   /* 0: no replay */
    ngx_http_kvroute_ranks_t         events_ranks;
    ngx_str_t                        events_topic;
    ngx_str_t                        models;    /* base model names, "," */
    ngx_array_t                     *events_overrides;   /* _override_t */
    ngx_array_t                     *capacity_overrides; /* _capacity_t */
    size_t                           max_body;
    ngx_uint_t                       chunk_bytes;   /* text key chunk */
    kvr_policy_conf_t                policy;

    /* tokenizer=, tokenizer_config=: full names once loaded */
    ngx_str_t                        tokenizer_json;
    ngx_str_t                        tokenizer_config;

    /* loaded in the master at configuration time, shared by the workers */
    kvr_tokenizer_t                 *tokenizer;
    kvr_chat_config_t               *chat;       /* its chat template */

    ngx_http_upstream_srv_conf_t    *upstream;
    u_char                          *file_name;  /* of the kvroute line */
    ngx_uint_t                       line;

    /* kv mode: blocks of recent routes, predicted until events come */
    ngx_uint_t                       predict;

    /* metrics=on: the helper scrapes each server's engine */
    ngx_uint_t                       metrics;
    ngx_str_t                        metrics_path;
    ngx_msec_t                       metrics_interval;
    ngx_uint_t                       metrics_speed;  /* weigh by ITL */
    ngx_uint_t                       metrics_load;   /* engines' load on
                                                        top of own */
    ngx_http_kvroute_port_t          metrics_port;  /* 0: the server's */

    /* ttft_decode=auto: learned from the zone's ended requests */
    ngx_uint_t                       decode_auto;

    /* not configuration: this process's, set once in init_process */
    ngx_http_kvroute_runtime_t      *runtime;
} ngx_http_kvroute_srv_conf_t;


/* kvroute_events SERVER ENDPOINT [replay=ENDPOINT]; */
typedef struct {
    ngx_str_t                        server;     /* as the peer is named */
    ngx_str_t                        endpoint;   /* NUL-terminated */
    ngx_str_t                        replay;     /* NUL-terminated or empty */
    u_char                          *file_name;
    ngx_uint_t                       line;
} ngx_http_kvroute_override_t;


/* kvroute_capacity SERVER BLOCKS: a server's own cache size */
typedef struct {
    ngx_str_t                        server;
    ngx_uint_t                       blocks;
    u_char                          *file_name;
    ngx_uint_t                       line;
} ngx_http_kvroute_capacity_t;


typedef struct {
    ngx_flag_t                       read_body;
} ngx_http_kvroute_loc_conf_t;


/* a tokenizer and its chat template, loaded once for every upstream */
typedef struct {
    ngx_str_t                        json;       /* full names */
    ngx_str_t                        config;
    size_t                           max_input;  /* the largest asked */
    kvr_tokenizer_t                 *tokenizer;
    kvr_chat_config_t               *chat;
} ngx_http_kvroute_tokenizer_t;


typedef struct {
    ngx_array_t                      upstreams;  /* srv_conf_t * */
    ngx_array_t                      tokenizers; /* _tokenizer_t */
    ngx_uint_t                       kv;         /* upstreams in mode=kv */
    ngx_uint_t                       helped;     /* kv or metrics=on */
    void                            *events;     /* the helper's state */
    void                            *scrape;     /* its scrapes' */
} ngx_http_kvroute_main_conf_t;


/* per request, kept across retries */
typedef struct {
    ngx_uint_t                       reason;
    kvr_keys_kind_e                  keys;     /* what they were made of */
    uint64_t                        *hashes;
    ngx_uint_t                       nblocks;
    ngx_uint_t                       tokens;
    ngx_uint_t                       overlap;
    uint64_t                         first_block;
    ngx_str_t                        server;
    uint64_t                         start_usec;
    uint64_t                         decision_usec;
    ngx_uint_t                       max_tokens;  /* 0: not given */
    uint32_t                         inflight;    /* at the chosen server,
                                                     as the policy saw it */
    unsigned                         queued:1;    /* and it had no KV room
                                                     for this request */
    void                            *charge;      /* the balancer's peer
                                                     data, while charged */

    /*
     * data-parallel ranks: the rank chosen on the server (its index among
     * the server's ranks), and the choice made before the balancer runs
     * when $kvroute_dp_rank is asked for while the upstream request is
     * created (proxy_set_header), which the balancer then follows
     */
    ngx_uint_t                       dp_rank;
    void                            *pre_peer;    /* rr peer, or NULL */
    ngx_uint_t                       pre_reason;
    uint32_t                         pre_out_blocks;
    u_char                           dp_rank_text[NGX_INT_T_LEN];

    unsigned                         has_dp_rank:1;
    unsigned                         pre_done:1;
    unsigned                         analyzed:1;
    unsigned                         body_waiting:1;
    unsigned                         body_ready:1;
} ngx_http_kvroute_ctx_t;


extern ngx_module_t  ngx_http_kvroute_module;
extern ngx_str_t     ngx_http_kvroute_reason_names[];


/* balancer */
ngx_int_t ngx_http_kvroute_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);

/* the server and rank chosen before the balancer runs ($kvroute_dp_rank) */
void ngx_http_kvroute_predecide(ngx_http_request_t *r,
    ngx_http_kvroute_ctx_t *ctx);

/* the first response bytes: the request's prefill is done */
void ngx_http_kvroute_first_bytes(ngx_http_kvroute_ctx_t *ctx);

/* output filter: calls the above */
ngx_int_t ngx_http_kvroute_filter_init(ngx_conf_t *cf);

/* configuration: the kvroute line's parameters */
char *ngx_http_kvroute_set_params(ngx_conf_t *cf,
    ngx_http_kvroute_srv_conf_t *kcf);

/* configuration: what can be checked only once the servers are known */
ngx_int_t ngx_http_kvroute_check_servers(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);

/* body: precontent reader and request analysis */
ngx_int_t ngx_http_kvroute_precontent_handler(ngx_http_request_t *r);
ngx_http_kvroute_ctx_t *ngx_http_kvroute_get_ctx(ngx_http_request_t *r);
void ngx_http_kvroute_analyze(ngx_http_request_t *r,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_kvroute_ctx_t *ctx);

/* log: throttled info lines, the decision clock */
void ngx_http_kvroute_log_reason(ngx_http_request_t *r, ngx_uint_t reason,
    size_t body_len);
void ngx_http_kvroute_log_refused(ngx_http_request_t *r, const char *what,
    const char *why);
uint64_t ngx_http_kvroute_usec(void);

/* the shared zone and its lock */
ngx_http_kvroute_zone_t *ngx_http_kvroute_add_zone(ngx_conf_t *cf,
    ngx_str_t *name, size_t size);
void ngx_http_kvroute_lock(ngx_http_kvroute_zone_t *zone);
void ngx_http_kvroute_unlock(ngx_http_kvroute_zone_t *zone);

/* load rows */
void ngx_http_kvroute_claim_row(ngx_http_kvroute_zone_t *zone,
    ngx_log_t *log);
void ngx_http_kvroute_release_row(ngx_http_kvroute_zone_t *zone);
void ngx_http_kvroute_load(ngx_http_kvroute_zone_t *zone, ngx_int_t slot,
    uint64_t *requests, uint64_t *tokens, uint64_t *prefill);

/* each process's runtime state */
ngx_int_t ngx_http_kvroute_runtime_init(ngx_cycle_t *cycle);
void ngx_http_kvroute_runtime_exit(ngx_cycle_t *cycle);
uint64_t ngx_http_kvroute_pred_capacity(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_int_t slot);
uint64_t ngx_http_kvroute_id_hash(ngx_str_t *name);

/* KV events: the helper process */
ngx_int_t ngx_http_kvroute_events_add_helper(ngx_conf_t *cf,
    ngx_http_kvroute_main_conf_t *kmcf);
ngx_int_t ngx_http_kvroute_events_init_single(ngx_cycle_t *cycle,
    ngx_http_kvroute_main_conf_t *kmcf);

/* metrics=on: the helper's scrapes, and the load they give */
ngx_msec_t ngx_http_kvroute_scrape_tick(ngx_http_kvroute_main_conf_t *kmcf);
ngx_uint_t ngx_http_kvroute_engine_state(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_int_t slot);
void ngx_http_kvroute_engine_loads(ngx_http_kvroute_srv_conf_t *kcf,
    int *slots, ngx_uint_t n, kvr_candidate_t *cand, uint32_t tokens);
extern ngx_str_t  ngx_http_kvroute_scrape_reasons[];

/* status and variables */
char *ngx_http_kvroute_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_kvroute_add_variables(ngx_conf_t *cf);


#endif /* _NGX_HTTP_KVROUTE_H_INCLUDED_ */
