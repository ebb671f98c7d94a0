/*
 * Copyright (C) kvroute developers
 *
 * The native twin of build/kvr_policy.wasm: one case a line on stdin, n
 * then the flat values (kvr_policy_flat.c), and "pick why" a line out.
 */


#include <stdio.h>
#include <stdlib.h>

#include "kvr_policy_flat.h"


int
main(void)
{
    int       r;
    double    n, in[KVR_FLAT_SIZE(KVR_FLAT_MAX)];
    uint32_t  i, len;

    while (scanf("%lf", &n) == 1) {
        if (n < 1 || n > KVR_FLAT_MAX) {
            return 1;
        }

        len = KVR_FLAT_SIZE((uint32_t) n);

        for (i = 0; i < len; i++) {
            if (scanf("%lf", &in[i]) != 1) {
                return 1;
            }
        }

        r = kvr_flat_pick(in, (uint32_t) n);
        printf("%d %d\n", r < 0 ? -1 : r / 8, r < 0 ? -1 : r % 8);
    }

    return 0;
}
