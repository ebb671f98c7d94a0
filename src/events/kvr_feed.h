/*
 * Copyright (C) kvroute developers
 *
 * One server's event feed, as the events helper follows it: when its
 * index is complete or stale, and what to do with each live message,
 * each reply of a replay and a replay that does not end.  Plain C, no
 * nginx or ZeroMQ types: the caller holds the sockets, the index and its
 * lock, and does what these functions return.
 *
 * A server's index is complete only when it was built from an unbroken
 * run of batches that starts at the publisher's sequence 0 or at an
 * AllBlocksCleared; otherwise (a reset, a gap or a restart seen late, a
 * replay that no longer reaches back to 0) it is stale.  With a replay
 * socket, a sequence gap keeps the index and asks for the batches after
 * the last one applied, in as many rounds (pages) as the engine's ROUTER
 * high-water mark needs; a gap no replay can fill is accepted and not
 * asked again for KVR_FEED_REPLAY_PAUSE.  When a replay ends, the live
 * messages it already held are skipped.
 */

#ifndef _KVR_FEED_H_INCLUDED_
#define _KVR_FEED_H_INCLUDED_


#include <stdint.h>

#include "kvr_kvstate.h"


#define KVR_FEED_REPLAY_WAIT    3000     /* ms for a replay to end */
#define KVR_FEED_REPLAY_PAUSE   10000    /* ms without gap replays */


typedef enum {
    KVR_FEED_APPLY = 0,      /* apply the batch */
    KVR_FEED_SKIP,           /* drop it: applied already */
    KVR_FEED_ASK_GAP,        /* ask a replay from the last applied + 1,
                                keeping the index (this batch comes too) */
    KVR_FEED_ASK_ALL,        /* ask a replay from 0: the index afresh */
    KVR_FEED_LOST,           /* apply it; the batches before it are lost */
    KVR_FEED_DONE,           /* the replay ended */
    KVR_FEED_WAIT,           /* the replay goes on */
    KVR_FEED_GIVE_UP         /* the replay did not end: follow the live
                                stream, the missed batches lost */
} kvr_feed_do_e;


/* what kvr_feed_reset() and kvr_feed_applied() changed, as bits */
#define KVR_FEED_BECAME_STALE     1
#define KVR_FEED_BECAME_COMPLETE  2


typedef struct {
    uint64_t        replay_until;     /* ms: the replay asked ends by */
    uint64_t        replay_pause;     /* ms: no gap replay before */
    uint64_t        replay_progress;  /* batches the replay applied */
    uint64_t        skip_until;       /* live sequences the replay had */
    unsigned        can_replay:1;     /* the server has a replay socket */
    unsigned        replaying:1;
    unsigned        skipping:1;
    unsigned        stale:1;          /* the index is incomplete */
    unsigned        fresh:1;          /* nothing applied since a reset */
} kvr_feed_t;


/* complete, with nothing applied yet: kvr_feed_reset() follows */
void kvr_feed_init(kvr_feed_t *f, int can_replay);

/*
 * The caller forgot what the index held from the stream (kvstate reset):
 * stale until the stream proves otherwise.  Returns the change.
 */
int kvr_feed_reset(kvr_feed_t *f);

/* a live batch of sequence seq, st the stream's state; now in ms */
kvr_feed_do_e kvr_feed_live(kvr_feed_t *f, const kvr_kvstate_t *st,
    uint64_t seq, uint64_t now);

/* a replay was asked (sent) at now */
void kvr_feed_asked(kvr_feed_t *f, uint64_t now);

/*
 * A reply of the replay: its end marker (end), or the batch of sequence
 * seq: APPLY, SKIP, LOST (apply it), or ASK_GAP for the next page.
 */
kvr_feed_do_e kvr_feed_reply(kvr_feed_t *f, const kvr_kvstate_t *st,
    int end, uint64_t seq);

/*
 * The replay's replies are read for now: WAIT until its time is out,
 * then ASK_GAP when it was making progress (its end marker was dropped
 * with the rest of a page), else GIVE_UP.
 */
kvr_feed_do_e kvr_feed_timeout(kvr_feed_t *f, const kvr_kvstate_t *st,
    uint64_t now);

/*
 * A batch of sequence seq was applied; restarted: kvstate reset the
 * stream for it (a gap or restart), cleared: it held an AllBlocksCleared.
 * After a reset the index is complete only if the stream starts at its
 * beginning; an AllBlocksCleared makes it complete at any point.  Returns
 * the changes.
 */
int kvr_feed_applied(kvr_feed_t *f, uint64_t seq, int restarted,
    int cleared);


#endif /* _KVR_FEED_H_INCLUDED_ */
