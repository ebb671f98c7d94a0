/*
 * Copyright (C) kvroute developers
 *
 * Micro-benchmark of the block index (src/route/kvr_index.c) in a 256 MB
 * shared mapping, 6 slots, 150-block sequences:
 *   (a) record() of 150-hash sequences per second,
 *   (b) match_slots() latency for 6 slots x 150 hashes, 1M entries,
 *   (c) add_ref() / remove_ref() blocks per second, one core,
 *   (d) bytes per entry,
 *   (e) clear_slot of a full slot.
 * Throughput figures are per cpu second of the benchmark thread.
 *
 * make build/micro/index_bench && build/micro/index_bench
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include "kvr_index.h"


#define REGION_SIZE    (256UL * 1024 * 1024)
#define NSLOTS         6
#define SEQ_LEN        150
#define FILL_ENTRIES   1000000
#define SHARED_SEQS    200
#define QUERIES        20000


static uint64_t  rng_state = 0x9e3779b97f4a7c15ULL;


static uint64_t
rng(void)
{
    uint64_t  z;

    /* splitmix64 */

    z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;

    return z ^ (z >> 31);
}


/*
 * throughput is timed in cpu time of this thread, so that other load on
 * the machine counts less; latency is wall time
 */

static double
cpu_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


static double
now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


static int
cmp_double(const void *a, const void *b)
{
    double  x, y;

    x = *(const double *) a;
    y = *(const double *) b;

    return (x > y) - (x < y);
}


static void
random_seq(uint64_t *seq, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        seq[i] = rng();
    }
}


static void
latency(const char *what, kvr_index_t *ix, int *slots, uint64_t *seqs,
    size_t nseqs, double *t)
{
    size_t    q, i, total;
    double    t0;
    uint64_t  *seq;
    uint32_t  overlap[NSLOTS];

    total = 0;

    for (q = 0; q < QUERIES; q++) {
        seq = &seqs[(rng() % nseqs) * SEQ_LEN];

        t0 = now();
        kvr_index_match_slots(ix, slots, NSLOTS, seq, SEQ_LEN, overlap);
        t[q] = now() - t0;

        for (i = 0; i < NSLOTS; i++) {
            total += overlap[i];
        }
    }

    qsort(t, QUERIES, sizeof(double), cmp_double);

    printf("(b) match_slots %-26s median %6.2f us  p99 %6.2f us  "
           "(mean overlap %.1f blocks/slot)\n", what,
           t[QUERIES / 2] * 1e6, t[QUERIES * 99 / 100] * 1e6,
           (double) total / QUERIES / NSLOTS);
}


int
main(void)
{
    int                     slots[NSLOTS], i;
    char                    name[16];
    void                   *region;
    size_t                  s, nseqs, n, evicted;
    double                  t0, dt, *t;
    uint64_t               *seqs, *fresh, seq[SEQ_LEN];
    kvr_index_t            *ix;
    kvr_index_stats_t       st;
    kvr_index_slot_info_t   info;

    /* like an nginx zone: shared, anonymous, mapped before fork */

    region = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (region == MAP_FAILED) {
        perror("mmap");
        return 1;
    }

    t0 = cpu_now();
    ix = kvr_index_init(region, REGION_SIZE);
    dt = cpu_now() - t0;

    if (ix == NULL) {
        fprintf(stderr, "init failed\n");
        return 1;
    }

    kvr_index_stats(ix, &st);
    printf("(d) region %lu bytes, %llu entries: %.1f bytes per entry; "
           "format %.1f ms\n", REGION_SIZE, (unsigned long long) st.capacity,
           (double) REGION_SIZE / st.capacity, dt * 1e3);

    for (i = 0; i < NSLOTS; i++) {
        snprintf(name, sizeof(name), "10.0.0.%d:8000", i + 1);
        slots[i] = kvr_index_slot(ix, name, strlen(name));
    }

    nseqs = FILL_ENTRIES / SEQ_LEN;
    seqs = malloc(nseqs * SEQ_LEN * sizeof(uint64_t));
    fresh = malloc(4000000 * sizeof(uint64_t));
    t = malloc(QUERIES * sizeof(double));

    if (seqs == NULL || fresh == NULL || t == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }

    random_seq(seqs, nseqs * SEQ_LEN);

    /* (a) record: every sequence new, round robin over the slots */

    t0 = cpu_now();

    for (s = 0; s < nseqs; s++) {
        kvr_index_record(ix, slots[s % NSLOTS], &seqs[s * SEQ_LEN], SEQ_LEN);
    }

    dt = cpu_now() - t0;
    kvr_index_stats(ix, &st);
    printf("(a) record, 150 new blocks:       %8.0f seq/s  %6.2f us/seq  "
           "(%llu entries now)\n", nseqs / dt, dt / nseqs * 1e6,
           (unsigned long long) st.entries);

    /* the first SHARED_SEQS sequences are in every slot */

    for (s = 0; s < SHARED_SEQS; s++) {
        for (i = 0; i < NSLOTS; i++) {
            kvr_index_record(ix, slots[i], &seqs[s * SEQ_LEN], SEQ_LEN);
        }
    }

    /* (a) record: a 100-block shared prefix present, 50 new blocks */

    n = 20000;
    t0 = cpu_now();

    for (s = 0; s < n; s++) {
        memcpy(seq, &seqs[(s % SHARED_SEQS) * SEQ_LEN],
               100 * sizeof(uint64_t));
        random_seq(&seq[100], SEQ_LEN - 100);
        kvr_index_record(ix, slots[s % NSLOTS], seq, SEQ_LEN);
    }

    dt = cpu_now() - t0;
    printf("(a) record, 100 present + 50 new: %8.0f seq/s  %6.2f us/seq\n",
           n / dt, dt / n * 1e6);

    /* (a) record: all present (refresh only) */

    t0 = cpu_now();

    for (s = 0; s < n; s++) {
        kvr_index_record(ix, slots[s % NSLOTS],
                         &seqs[(s % SHARED_SEQS) * SEQ_LEN], SEQ_LEN);
    }

    dt = cpu_now() - t0;
    printf("(a) record, 150 present:          %8.0f seq/s  %6.2f us/seq\n",
           n / dt, dt / n * 1e6);

    /* (a) record at capacity: each slot bounded, every record evicts */

    for (i = 0; i < NSLOTS; i++) {
        kvr_index_slot_set_capacity(ix, slots[i], 150000);
    }

    evicted = 0;
    t0 = cpu_now();

    for (s = 0; s < n; s++) {
        random_seq(seq, SEQ_LEN);
        evicted += kvr_index_record(ix, slots[s % NSLOTS], seq, SEQ_LEN);
    }

    dt = cpu_now() - t0;
    printf("(a) record, 150 new, evicting:    %8.0f seq/s  %6.2f us/seq  "
           "(%zu evicted)\n", n / dt, dt / n * 1e6, evicted);

    for (i = 0; i < NSLOTS; i++) {
        kvr_index_slot_set_capacity(ix, slots[i], 0);
    }

    /*
     * rebuild exactly, in a freshly formatted region (no garbage of
     * cleared slots in the chains): 1M entries, the shared sequences in
     * all slots
     */

    memset(region, 0, 64);
    ix = kvr_index_init(region, REGION_SIZE);

    for (i = 0; i < NSLOTS; i++) {
        snprintf(name, sizeof(name), "10.0.0.%d:8000", i + 1);
        slots[i] = kvr_index_slot(ix, name, strlen(name));
    }

    for (s = 0; s < nseqs; s++) {
        kvr_index_record(ix, slots[s % NSLOTS], &seqs[s * SEQ_LEN], SEQ_LEN);
    }

    for (s = 0; s < SHARED_SEQS; s++) {
        for (i = 0; i < NSLOTS; i++) {
            kvr_index_record(ix, slots[i], &seqs[s * SEQ_LEN], SEQ_LEN);
        }
    }

    kvr_index_stats(ix, &st);
    printf("    index for (b): %llu entries\n",
           (unsigned long long) st.entries);

    /* (b) match_slots latency */

    latency("all 6 hit 150 (worst):", ix, slots, seqs, SHARED_SEQS, t);
    latency("1 slot hits 150:", ix, slots, seqs + SHARED_SEQS * SEQ_LEN,
            nseqs - SHARED_SEQS, t);
    random_seq(fresh, 1000 * SEQ_LEN);
    latency("no slot hits:", ix, slots, fresh, 1000, t);

    /* (c) exact mode ingestion: add_ref then remove_ref of new blocks */

    n = 4000000;
    random_seq(fresh, n);

    t0 = cpu_now();

    for (s = 0; s < n; s++) {
        kvr_index_add_ref(ix, slots[s % NSLOTS], fresh[s]);
    }

    dt = cpu_now() - t0;
    kvr_index_stats(ix, &st);
    printf("(c) add_ref, new blocks:     %6.2f M blocks/s  "
           "(%llu entries now, %llu evicted full)\n", n / dt / 1e6,
           (unsigned long long) st.entries,
           (unsigned long long) st.evictions_full);

    t0 = cpu_now();

    for (s = 0; s < n; s++) {
        kvr_index_add_ref(ix, slots[s % NSLOTS], fresh[s]);
    }

    dt = cpu_now() - t0;
    printf("(c) add_ref, present blocks: %6.2f M blocks/s\n", n / dt / 1e6);

    t0 = cpu_now();

    for (s = 0; s < n; s++) {
        kvr_index_remove_ref(ix, slots[s % NSLOTS], fresh[s]);
        kvr_index_remove_ref(ix, slots[s % NSLOTS], fresh[s]);
    }

    dt = cpu_now() - t0;
    printf("(c) remove_ref:              %6.2f M blocks/s\n", 2 * n / dt / 1e6);

    /* (c) at a full region: every add_ref evicts */

    kvr_index_stats(ix, &st);

    for (s = 0; st.entries < st.capacity; s++) {
        kvr_index_add_ref(ix, slots[s % NSLOTS], rng());
        st.entries++;
    }

    random_seq(fresh, n);
    t0 = cpu_now();

    for (s = 0; s < n; s++) {
        kvr_index_add_ref(ix, slots[s % NSLOTS], fresh[s]);
    }

    dt = cpu_now() - t0;
    kvr_index_stats(ix, &st);
    printf("(c) add_ref, region full:    %6.2f M blocks/s  "
           "(%llu evicted full)\n", n / dt / 1e6,
           (unsigned long long) st.evictions_full);

    /* clearing a slot (AllBlocksCleared, a restarted server) */

    kvr_index_slot_info(ix, slots[0], &info);
    t0 = now();
    kvr_index_clear_slot(ix, slots[0]);
    dt = now() - t0;
    printf("(e) clear_slot of %llu blocks: %.2f us\n",
           (unsigned long long) info.blocks, dt * 1e6);

    free(t);
    free(fresh);
    free(seqs);
    munmap(region, REGION_SIZE);

    return 0;
}
