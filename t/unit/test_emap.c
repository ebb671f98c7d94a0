/*
 * Copyright (C) kvroute developers
 *
 * The engine-hash map against a naive model.
 */


#include <stdlib.h>

#include "tap.h"
#include "kvr_emap.h"


#define N  3000


int
main(void)
{
    int          found, ok;
    size_t       i, k, live;
    int64_t      left;
    uint64_t     key, engines[N], keys[N];
    uint32_t     refs[N];
    kvr_emap_t  *map;

    map = kvr_emap_create(100000);
    tap_ok(map != NULL, "created");

    tap_is(kvr_emap_add(map, 42, 7), 1, "first add: 1 ref");
    tap_is(kvr_emap_add(map, 42, 7), 2, "stored twice: 2 refs");
    tap_is(kvr_emap_remove(map, 42, &key), 1, "one remove leaves 1");
    tap_is(key, 7, "remove tells the key");
    tap_is(kvr_emap_get(map, 42, &found), 7, "still there");
    tap_is(kvr_emap_remove(map, 42, &key), 0, "second remove: gone");
    kvr_emap_get(map, 42, &found);
    tap_is(found, 0, "absent after the last remove");
    tap_is(kvr_emap_remove(map, 42, &key), -1, "unknown: -1");

    /* engine hash 0 is a valid handle */
    tap_is(kvr_emap_add(map, 0, 99), 1, "hash 0 stored");
    tap_is(kvr_emap_get(map, 0, &found), 99, "hash 0 found");
    kvr_emap_remove(map, 0, &key);

    /* random adds and removes against a model; clustered hashes too */
    for (i = 0; i < N; i++) {
        engines[i] = (i % 3 == 0) ? (uint64_t) i << 32 : (uint64_t) rand()
                     * 2654435761u + i;
        keys[i] = i * 7919 + 1;
        refs[i] = 0;
    }

    ok = 1;

    for (k = 0; k < 200000; k++) {
        i = (size_t) rand() % N;

        if (rand() % 3) {
            if (kvr_emap_add(map, engines[i], keys[i]) != refs[i] + 1) {
                ok = 0;
            }

            refs[i]++;

        } else {
            left = kvr_emap_remove(map, engines[i], &key);

            if (refs[i] == 0) {
                ok &= (left == -1);

            } else {
                refs[i]--;
                ok &= (left == refs[i] && key == keys[i]);
            }
        }
    }

    live = 0;

    for (i = 0; i < N; i++) {
        key = kvr_emap_get(map, engines[i], &found);
        ok &= (found == (refs[i] > 0)) && (!found || key == keys[i]);
        live += refs[i] > 0;
    }

    tap_ok(ok, "200000 random operations agree with the model");
    tap_is(kvr_emap_count(map), live, "count of live handles");

    kvr_emap_clear(map);
    tap_is(kvr_emap_count(map), 0, "cleared");
    kvr_emap_destroy(map);

    /* the bound */
    map = kvr_emap_create(10);
    for (i = 0; i < 10; i++) {
        kvr_emap_add(map, i + 1, i);
    }
    tap_is(kvr_emap_add(map, 100, 1), 0, "full: refused");
    tap_is(kvr_emap_add(map, 5, 4), 2, "full: an existing handle still counts");
    tap_is(kvr_emap_put(map, 100, 1), 0, "full: put refused");
    tap_is(kvr_emap_put(map, 6, 99), 2, "put of a held handle: held already");
    tap_ok(kvr_emap_get(map, 6, &found) == 5 && found,
           "put of a held handle keeps its key");
    tap_is(kvr_emap_remove(map, 6, &key), 0,
           "put of a held handle adds no reference");
    tap_is(kvr_emap_put(map, 6, 7), 1, "put of a new handle: added");
    tap_is(kvr_emap_put(map, 6, 7), 2, "put again: held already");
    tap_is(kvr_emap_remove(map, 6, &key), 0, "one removal: gone");
    tap_ok(kvr_emap_remove(map, 6, &key) < 0, "then unknown");
    kvr_emap_destroy(map);

    return tap_done();
}
