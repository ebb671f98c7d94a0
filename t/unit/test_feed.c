/*
 * Copyright (C) kvroute developers
 *
 * kvr_feed: a server's event feed as the events helper follows it
 * (stale or complete; apply, skip, replay, give up).  The stream's
 * sequence is kvstate's, set here as applying batches would.
 */


#include <string.h>

#include "tap.h"
#include "kvr_feed.h"


static kvr_kvstate_t  st;


/* a batch of seq applied, as kvr_kvstate_batch() leaves the sequence */
static int
apply(kvr_feed_t *f, uint64_t seq, int cleared)
{
    int  restarted;

    restarted = (kvr_kvstate_seq(&st, seq) != KVR_SEQ_NEXT);

    st.last_seq = seq;
    st.have_seq = 1;

    return kvr_feed_applied(f, seq, restarted, cleared);
}


static void
forget(void)
{
    st.have_seq = 0;
    st.last_seq = 0;
}


int
main(void)
{
    kvr_feed_t  f;

    memset(&st, 0, sizeof(st));

    /* without a replay socket */

    kvr_feed_init(&f, 0);
    tap_is(f.stale, 0, "init: not stale yet");
    tap_is(kvr_feed_reset(&f), KVR_FEED_BECAME_STALE, "a reset: stale");
    tap_is(kvr_feed_reset(&f), 0, "a second reset changes nothing");

    tap_is(kvr_feed_live(&f, &st, 5, 0), KVR_FEED_APPLY,
           "no replay: a batch joined late applies");
    tap_is(apply(&f, 5, 0), 0, "joined at 5: still stale");
    tap_is(f.fresh, 0, "no longer fresh");

    tap_is(kvr_feed_live(&f, &st, 9, 0), KVR_FEED_APPLY,
           "no replay: a gap applies (kvstate resets)");
    tap_is(apply(&f, 9, 0), 0, "a gap: stale as it was");

    tap_is(apply(&f, 10, 1), KVR_FEED_BECAME_COMPLETE,
           "an AllBlocksCleared makes it complete");
    tap_is(apply(&f, 14, 0), KVR_FEED_BECAME_STALE,
           "a gap after it: stale again");
    tap_is(apply(&f, 0, 0), KVR_FEED_BECAME_COMPLETE,
           "a restart from 0: complete");
    tap_is(apply(&f, 1, 0), 0, "the next batch changes nothing");

    forget();
    tap_is(kvr_feed_reset(&f), KVR_FEED_BECAME_STALE, "reset again");
    tap_is(apply(&f, 0, 0), KVR_FEED_BECAME_COMPLETE,
           "after a reset, a stream from 0 is complete");

    tap_is(apply(&f, 5, 1), KVR_FEED_BECAME_STALE | KVR_FEED_BECAME_COMPLETE,
           "a gap with a clear in it: both changes");
    tap_is(f.stale, 0, "ending complete");

    /* with a replay socket: a gap asks for what was missed */

    forget();
    kvr_feed_init(&f, 1);
    kvr_feed_reset(&f);

    tap_is(kvr_feed_live(&f, &st, 7, 1000), KVR_FEED_APPLY,
           "the first batch applies, whatever its sequence");
    apply(&f, 7, 0);

    tap_is(kvr_feed_live(&f, &st, 8, 1000), KVR_FEED_APPLY, "the next one");
    apply(&f, 8, 0);

    tap_is(kvr_feed_live(&f, &st, 12, 1000), KVR_FEED_ASK_GAP,
           "a gap: ask from the last applied + 1");
    tap_is(kvr_feed_live(&f, &st, 3, 1000), KVR_FEED_ASK_ALL,
           "an older batch: the engine restarted, ask from 0");
    tap_is(kvr_feed_live(&f, &st, 0, 1000), KVR_FEED_APPLY,
           "a restart seen at 0 just applies");

    /* the replay asked from 9 */

    kvr_feed_asked(&f, 1000);
    tap_is(f.replaying, 1, "replaying");
    tap_is(kvr_feed_reply(&f, &st, 0, 8), KVR_FEED_SKIP,
           "a reply already applied: skip");
    tap_is(kvr_feed_reply(&f, &st, 0, 9), KVR_FEED_APPLY, "the next: apply");
    apply(&f, 9, 0);
    tap_is(f.replay_progress, 1, "progress counted");
    tap_is(kvr_feed_reply(&f, &st, 0, 11), KVR_FEED_ASK_GAP,
           "a hole after progress: the next page");

    kvr_feed_asked(&f, 1100);
    tap_is(f.replay_progress, 0, "a new page starts its own progress");
    tap_is(kvr_feed_reply(&f, &st, 0, 10), KVR_FEED_APPLY, "page 2");
    apply(&f, 10, 0);
    tap_is(kvr_feed_reply(&f, &st, 0, 11), KVR_FEED_APPLY, "page 2 on");
    apply(&f, 11, 0);
    tap_is(kvr_feed_reply(&f, &st, 1, 0), KVR_FEED_DONE, "the end marker");
    tap_is(f.replaying, 0, "no longer replaying");

    tap_is(kvr_feed_live(&f, &st, 10, 1200), KVR_FEED_SKIP,
           "live batches the replay had are skipped");
    tap_is(kvr_feed_live(&f, &st, 11, 1200), KVR_FEED_SKIP, "up to its last");
    tap_is(kvr_feed_live(&f, &st, 12, 1200), KVR_FEED_APPLY,
           "the first one after it applies");
    apply(&f, 12, 0);
    tap_is(f.skipping, 0, "skipping ends");

    /* a replay whose first reply is past a hole: what is between is lost */

    kvr_feed_asked(&f, 2000);
    tap_is(kvr_feed_reply(&f, &st, 0, 20), KVR_FEED_LOST,
           "no progress and a hole: lost, applied");

    /* a replay that does not end */

    kvr_feed_asked(&f, 3000);
    tap_is(kvr_feed_timeout(&f, &st, 3000 + KVR_FEED_REPLAY_WAIT),
           KVR_FEED_WAIT, "within its time: wait");
    tap_is(kvr_feed_timeout(&f, &st, 3001 + KVR_FEED_REPLAY_WAIT),
           KVR_FEED_GIVE_UP, "out of time without progress: give up");
    tap_is(f.replaying, 0, "the live stream is followed");

    tap_is(kvr_feed_live(&f, &st, 30, 3002 + KVR_FEED_REPLAY_WAIT),
           KVR_FEED_APPLY, "a gap just after giving up: no replay loop");
    apply(&f, 30, 0);
    tap_is(kvr_feed_live(&f, &st, 40, 3002 + KVR_FEED_REPLAY_WAIT
                                      + KVR_FEED_REPLAY_PAUSE),
           KVR_FEED_ASK_GAP, "after the pause, gaps are asked again");

    kvr_feed_asked(&f, 5000);
    tap_is(kvr_feed_reply(&f, &st, 0, 31), KVR_FEED_APPLY, "progress");
    apply(&f, 31, 0);
    tap_is(kvr_feed_timeout(&f, &st, 9000), KVR_FEED_ASK_GAP,
           "out of time with progress: ask on (the end was dropped)");

    tap_is(kvr_feed_timeout(&f, &st, 9000), KVR_FEED_ASK_GAP,
           "still replaying until asked again");

    kvr_feed_init(&f, 1);
    tap_is(kvr_feed_timeout(&f, &st, 100000), KVR_FEED_WAIT,
           "no replay asked: nothing times out");

    /* clocks that wrap */

    forget();
    kvr_feed_init(&f, 1);
    kvr_feed_asked(&f, UINT64_MAX - 10);
    tap_is(kvr_feed_timeout(&f, &st, UINT64_MAX), KVR_FEED_WAIT,
           "a clock about to wrap: wait");
    tap_is(kvr_feed_timeout(&f, &st, KVR_FEED_REPLAY_WAIT), KVR_FEED_GIVE_UP,
           "after it wrapped: out of time");

    return tap_done();
}
