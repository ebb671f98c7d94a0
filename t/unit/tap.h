/*
 * Copyright (C) kvroute developers
 *
 * A minimal TAP producer for the C unit tests (run by prove).
 */

#ifndef _KVR_TAP_H_INCLUDED_
#define _KVR_TAP_H_INCLUDED_


#include <stdio.h>
#include <stdarg.h>


static int  tap_run;
static int  tap_failed;


static void
tap_ok(int cond, const char *fmt, ...)
{
    va_list  ap;

    tap_run++;

    if (!cond) {
        tap_failed++;
    }

    printf("%sok %d - ", cond ? "" : "not ", tap_run);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}


static int
tap_done(void)
{
    printf("1..%d\n", tap_run);
    return tap_failed ? 1 : 0;
}


#define tap_is(got, want, name)                                            \
    do {                                                                   \
        long long  g_ = (long long) (got), w_ = (long long) (want);        \
        tap_ok(g_ == w_, "%s", name);                                      \
        if (g_ != w_) {                                                    \
            printf("#   got %lld, want %lld\n", g_, w_);                   \
        }                                                                  \
    } while (0)


#endif /* _KVR_TAP_H_INCLUDED_ */
