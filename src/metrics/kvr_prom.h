/*
 * Copyright (C) kvroute developers
 *
 * A bounded reader of Prometheus' text exposition format that takes from
 * an engine's /metrics the few values of its load: requests running and
 * waiting, KV cache usage, and its inter-token latency's sum and count
 * (how fast its steps are).  Plain C, no allocation; it never reads
 * past the length it is given.  docs/engine-metrics.md lists the names.
 */

#ifndef _KVR_PROM_H_INCLUDED_
#define _KVR_PROM_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* what was found: bits of kvr_prom_load_t.found */
#define KVR_PROM_RUNNING   0x01
#define KVR_PROM_WAITING   0x02
#define KVR_PROM_USAGE     0x04
#define KVR_PROM_ITL       0x08     /* both the sum and the count */

/* each part apart while reading (not in found after kvr_prom_done()) */
#define KVR_PROM_ITL_SUM   0x10
#define KVR_PROM_ITL_COUNT 0x20
#define KVR_PROM_TPOT_SUM  0x40     /* vLLM's older name for the same */
#define KVR_PROM_TPOT_COUNT 0x80

/* a count beyond this is taken as this (no engine queues a million) */
#define KVR_PROM_MAX_COUNT 1000000


/* the engines whose names are known: an exposition holding both is read
   as vLLM's */
#define KVR_PROM_VLLM      0
#define KVR_PROM_SGLANG    1
#define KVR_PROM_FAMILIES  2


typedef struct {
    uint32_t   running;     /* summed over series (DP engines, ranks) */
    uint32_t   waiting;     /* likewise */
    uint32_t   usage;       /* KV cache usage, per mille, the largest */
    uint32_t   found;       /* KVR_PROM_* */
    double     itl_sum;     /* inter-token latency, seconds, summed over
                               series (cumulative, as the engine counts) */
    double     itl_count;   /* tokens those are over */
    uint32_t   samples;     /* sample lines read, of any name */
    uint32_t   bad;         /* lines that are not samples nor comments */

    /* each engine's names apart, until kvr_prom_done() picks one */
    uint32_t   family_running[KVR_PROM_FAMILIES];
    uint32_t   family_waiting[KVR_PROM_FAMILIES];
    uint32_t   family_usage[KVR_PROM_FAMILIES];
    uint32_t   family_found[KVR_PROM_FAMILIES];
    double     family_itl[KVR_PROM_FAMILIES][4];   /* ITL sum, count;
                                                      TPOT sum, count */
} kvr_prom_load_t;


/*
 * Reads buf[0..len).  Returns 0 when running or waiting was found, -1
 * otherwise (*out holds what was read either way).  A last line without
 * its newline is taken as cut short and ignored.
 */
int kvr_prom_parse(const char *buf, size_t len, kvr_prom_load_t *out);

/*
 * The same in pieces, as a reply arrives: init, then feed each piece;
 * feed reads the whole lines of buf[0..len) and returns their length (the
 * rest goes again at the front of the next piece); done sets running,
 * waiting, usage, itl_sum, itl_count and found, and returns as parse
 * does.
 */
void kvr_prom_init(kvr_prom_load_t *out);
size_t kvr_prom_feed(const char *buf, size_t len, kvr_prom_load_t *out);
int kvr_prom_done(kvr_prom_load_t *out);


#endif /* _KVR_PROM_H_INCLUDED_ */
