/*
 * Copyright (C) kvroute developers
 */


#include <string.h>

#include "kvr_feed.h"


static int kvr_feed_stale(kvr_feed_t *f, unsigned stale);


/* clocks wrap: a is after b */
#define kvr_feed_after(a, b)  ((int64_t) ((a) - (b)) > 0)


void
kvr_feed_init(kvr_feed_t *f, int can_replay)
{
    memset(f, 0, sizeof(kvr_feed_t));

    f->can_replay = can_replay ? 1 : 0;
}


int
kvr_feed_reset(kvr_feed_t *f)
{
    f->fresh = 1;

    return kvr_feed_stale(f, 1);
}


kvr_feed_do_e
kvr_feed_live(kvr_feed_t *f, const kvr_kvstate_t *st, uint64_t seq,
    uint64_t now)
{
    if (f->skipping) {
        if (seq <= f->skip_until) {
            return KVR_FEED_SKIP;
        }

        f->skipping = 0;
    }

    if (!f->can_replay) {
        /* kvstate takes a gap or a restart as a reset */
        return KVR_FEED_APPLY;
    }

    switch (kvr_kvstate_seq(st, seq)) {

    case KVR_SEQ_GAP:
        /* a gap no replay could fill was just accepted: no loop */
        return kvr_feed_after(f->replay_pause, now) ? KVR_FEED_APPLY
                                                    : KVR_FEED_ASK_GAP;

    case KVR_SEQ_OLD:
        /* the engine restarted: all of it again, unless from its start */
        return (seq == 0) ? KVR_FEED_APPLY : KVR_FEED_ASK_ALL;

    default:
        return KVR_FEED_APPLY;
    }
}


void
kvr_feed_asked(kvr_feed_t *f, uint64_t now)
{
    f->replaying = 1;
    f->replay_progress = 0;
    f->replay_until = now + KVR_FEED_REPLAY_WAIT;
}


kvr_feed_do_e
kvr_feed_reply(kvr_feed_t *f, const kvr_kvstate_t *st, int end,
    uint64_t seq)
{
    if (end) {
        f->replaying = 0;

        /* live messages the replay already had are skipped */
        f->skipping = st->have_seq;
        f->skip_until = st->last_seq;

        return KVR_FEED_DONE;
    }

    switch (kvr_kvstate_replayed(st, seq, f->replay_progress)) {

    case KVR_REPLAY_SKIP:
        return KVR_FEED_SKIP;

    case KVR_REPLAY_AGAIN:
        /* the engine's ROUTER dropped replies: the next page */
        return KVR_FEED_ASK_GAP;

    case KVR_REPLAY_LOST:
        return KVR_FEED_LOST;

    default:
        return KVR_FEED_APPLY;
    }
}


kvr_feed_do_e
kvr_feed_timeout(kvr_feed_t *f, const kvr_kvstate_t *st, uint64_t now)
{
    if (!f->replaying || !kvr_feed_after(now, f->replay_until)) {
        return KVR_FEED_WAIT;
    }

    if (f->replay_progress && st->have_seq) {
        /* the end marker was dropped with the rest: ask on */
        return KVR_FEED_ASK_GAP;
    }

    f->replaying = 0;
    f->skipping = 0;
    f->replay_pause = now + KVR_FEED_REPLAY_PAUSE;

    return KVR_FEED_GIVE_UP;
}


int
kvr_feed_applied(kvr_feed_t *f, uint64_t seq, int restarted, int cleared)
{
    int  changes;

    changes = 0;

    if (f->replaying) {
        f->replay_progress++;
    }

    if (restarted || f->fresh) {
        f->fresh = 0;
        changes |= kvr_feed_stale(f, seq != 0);
    }

    if (cleared) {
        changes |= kvr_feed_stale(f, 0);
    }

    return changes;
}


static int
kvr_feed_stale(kvr_feed_t *f, unsigned stale)
{
    if (f->stale == stale) {
        return 0;
    }

    f->stale = stale;

    return stale ? KVR_FEED_BECAME_STALE : KVR_FEED_BECAME_COMPLETE;
}
