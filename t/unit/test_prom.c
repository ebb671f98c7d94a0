/*
 * kvr_prom: the load metrics of vLLM's and SGLang's /metrics, and
 * kvr_http_reply: the head of a scrape's reply.
 */

#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "kvr_prom.h"
#include "kvr_http_reply.h"


static int
parse(const char *s, kvr_prom_load_t *out)
{
    return kvr_prom_parse(s, strlen(s), out);
}


static void
test_vllm(void)
{
    kvr_prom_load_t  l;

    const char *text =
        "# HELP vllm:num_requests_running Number of requests in model "
        "execution batches.\n"
        "# TYPE vllm:num_requests_running gauge\n"
        "vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 3.0\n"
        "vllm:num_requests_running{model_name=\"m\",engine=\"1\"} 4.0\n"
        "vllm:num_requests_waiting{model_name=\"m\",engine=\"0\"} 2.0\n"
        "vllm:num_requests_waiting{model_name=\"m\",engine=\"1\"} 0.0\n"
        "vllm:gpu_cache_usage_perc{model_name=\"m\",engine=\"0\"} 0.25\n"
        "vllm:kv_cache_usage_perc{model_name=\"m\",engine=\"0\"} 0.25\n"
        "vllm:kv_cache_usage_perc{model_name=\"m\",engine=\"1\"} 0.5\n"
        "vllm:prompt_tokens_total{model_name=\"m\",engine=\"0\"} 1e6\n";

    tap_is(parse(text, &l), 0, "vllm: found");
    tap_is(l.running, 7, "vllm: running summed over DP engines");
    tap_is(l.waiting, 2, "vllm: waiting summed");
    tap_is(l.usage, 500, "vllm: usage is the largest, per mille");
    tap_is(l.found, KVR_PROM_RUNNING | KVR_PROM_WAITING | KVR_PROM_USAGE,
           "vllm: all three found");
    tap_is(l.samples, 8, "vllm: every sample line read");
    tap_is(l.bad, 0, "vllm: no bad line");
}


static void
test_sglang(void)
{
    kvr_prom_load_t  l;

    const char *text =
        "# HELP sglang:num_running_reqs The number of running requests.\n"
        "# TYPE sglang:num_running_reqs gauge\n"
        "sglang:num_running_reqs{engine_type=\"unified\",model_name=\"q\","
        "pp_rank=\"0\",tp_rank=\"0\"} 5.0\n"
        "sglang:num_running_reqs{engine_type=\"unified\",model_name=\"q\","
        "pp_rank=\"0\",tp_rank=\"1\"} 5.0\n"
        "sglang:num_queue_reqs{model_name=\"q\",tp_rank=\"0\","
        "dp_rank=\"0\"} 1.0\n"
        "sglang:num_queue_reqs{model_name=\"q\",tp_rank=\"0\","
        "dp_rank=\"1\"} 2.0\n"
        "sglang:num_queue_reqs{model_name=\"q\",tp_rank=\"0\","
        "pp_rank=\"1\"} 9.0\n"
        "sglang:token_usage{model_name=\"q\",tp_rank=\"0\"} 0.125\n"
        "sglang:token_usage{model_name=\"q\",tp_rank=\"1\"} 0.75\n";

    tap_is(parse(text, &l), 0, "sglang: found");
    tap_is(l.running, 5, "sglang: tp_rank 1 repeats rank 0: not summed");
    tap_is(l.waiting, 3, "sglang: dp ranks summed, pp_rank 1 not");
    tap_is(l.usage, 750, "sglang: usage is the largest of any rank");
}


/* an exposition with both engines' names (a proxy, the emulator) */

static void
test_both(void)
{
    kvr_prom_load_t  l;

    tap_is(parse("sglang:num_running_reqs 4\n"
                 "sglang:token_usage 0.9\n"
                 "vllm:num_requests_running 4\n"
                 "vllm:num_requests_waiting 1\n", &l), 0, "both: found");
    tap_is(l.running, 4, "both: not summed across engines' names");
    tap_is(l.waiting, 1, "both: vLLM's names are read");
    tap_is(l.found, KVR_PROM_RUNNING | KVR_PROM_WAITING,
           "both: usage of the other engine's names is not taken");

    tap_is(parse("vllm:kv_cache_usage_perc 0.5\n"
                 "sglang:num_queue_reqs 2\n", &l), 0,
           "vLLM's usage alone, SGLang's queue");
    tap_is(l.waiting, 2, "the names that give a count are read");
}


static void
test_robust(void)
{
    char             *big;
    size_t            i, n;
    kvr_prom_load_t   l;

    /* labels with escapes and braces inside values, CRLF, blanks */
    tap_is(parse("vllm:num_requests_running{model_name=\"a\\\"}b\\\\\","
                 "x=\"{}\"} 6\r\n"
                 "  vllm:num_requests_waiting\t 1 1700000000000\r\n", &l),
           0, "escaped quotes and braces in labels, CRLF, a timestamp");
    tap_is(l.running, 6, "the value after tricky labels");
    tap_is(l.waiting, 1, "blanks and a timestamp");

    /* NaN, infinities, negatives, garbage: ignored */
    tap_is(parse("vllm:num_requests_running NaN\n"
                 "vllm:num_requests_waiting +Inf\n"
                 "vllm:kv_cache_usage_perc -Inf\n", &l),
           -1, "NaN and infinities say nothing");
    tap_is(l.samples, 3, "but they are samples");

    tap_is(parse("vllm:num_requests_running -3\n"
                 "vllm:num_requests_waiting 0x10\n", &l),
           -1, "negative and hexadecimal values ignored");

    tap_is(parse("vllm:num_requests_running{model_name=\"a\" 3\n"
                 "vllm:num_requests_running{model_name=a} 3\n"
                 "vllm:num_requests_running{=\"a\"} 3\n"
                 "vllm:num_requests_running 3 4 5\n"
                 "vllm:num_requests_running3\n"
                 "{} 3\n"
                 "vllm:num_requests_running 12abc\n", &l),
           -1, "malformed lines give nothing");
    tap_is(l.bad, 7, "and are counted as bad");

    /* a name that only starts like one */
    tap_is(parse("vllm:num_requests_running_total 9\n"
                 "vllm:num_requests_runnin 9\n", &l),
           -1, "names must match whole");

    /* a cut last line is ignored: it may have lost digits */
    tap_is(parse("vllm:num_requests_waiting 1\n"
                 "vllm:num_requests_running 12", &l), 0,
           "a last line without its newline");
    tap_is(l.running, 0, "is not read");
    tap_is(l.waiting, 1, "the lines before it are");

    /* huge counts saturate */
    tap_is(parse("vllm:num_requests_running 1e300\n"
                 "vllm:num_requests_running{engine=\"1\"} 999999\n"
                 "vllm:kv_cache_usage_perc 7\n", &l), 0, "huge values");
    tap_is(l.running, KVR_PROM_MAX_COUNT, "counts saturate");
    tap_is(l.usage, 1000, "usage above 1 is 1000 per mille");

    /* rounding */
    tap_is(parse("vllm:num_requests_running 2.6\n"
                 "vllm:kv_cache_usage_perc 0.0004\n", &l), 0, "fractions");
    tap_is(l.running, 3, "counts round to nearest");
    tap_is(l.usage, 0, "usage rounds to per mille");

    /* empty, NULL, comments only, a NUL byte */
    tap_is(kvr_prom_parse(NULL, 10, &l), -1, "NULL input");
    tap_is(kvr_prom_parse("", 0, &l), -1, "empty input");
    tap_is(parse("# vllm:num_requests_running 3\n\n\n", &l), -1,
           "comments only");
    tap_is(kvr_prom_parse("vllm:num_requests_running 3\0\n", 29, &l), -1,
           "a NUL byte inside the value");

    /* a long line, and many lines: bounded and linear */
    n = 1 << 20;
    big = malloc(n);
    memset(big, 'a', n);
    memcpy(big, "vllm:num_requests_running{x=\"", 29);
    big[n - 1] = '\n';
    tap_is(kvr_prom_parse(big, n, &l), -1, "a 1 MiB unterminated label");

    for (i = 0; i + 28 <= n; i += 28) {
        memcpy(big + i, "vllm:num_requests_running 1\n", 28);
    }
    tap_is(kvr_prom_parse(big, i, &l), 0, "37449 samples");
    tap_is(l.running, i / 28, "all summed");
    free(big);
}


static void
test_feed(void)
{
    size_t            i, used, n;
    char              buf[256];
    kvr_prom_load_t   l, whole;

    const char *text =
        "# TYPE vllm:num_requests_running gauge\n"
        "vllm:num_requests_running{model_name=\"m\"} 11\n"
        "vllm:num_requests_waiting{model_name=\"m\"} 22\n"
        "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.333\n";

    (void) parse(text, &whole);

    /* in pieces of every size, as a scrape reads them */

    for (i = 1; i < 20; i++) {
        const char  *p = text, *end = text + strlen(text);

        kvr_prom_init(&l);
        used = 0;

        while (p < end) {
            n = (size_t) (end - p) < i ? (size_t) (end - p) : i;
            memcpy(buf + used, p, n);
            used += n;
            p += n;

            n = kvr_prom_feed(buf, used, &l);
            memmove(buf, buf + n, used - n);
            used -= n;
        }

        (void) kvr_prom_done(&l);

        if (l.running != whole.running || l.waiting != whole.waiting
            || l.usage != whole.usage || used != 0)
        {
            break;
        }
    }

    tap_is(i, 20, "fed in pieces of 1 to 19 bytes: as parsed whole");
    tap_is(kvr_prom_done(&l), 0, "done");
    tap_is(whole.usage, 333, "usage 0.333");
}


static void
test_http(void)
{
    kvr_http_reply_t  r;
    const char       *s;
    const char       *ok = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                           "\r\nvllm:num_requests_running 1\n";

    tap_is(kvr_http_reply_head(ok, strlen(ok), &r), KVR_HTTP_REPLY_OK,
           "http: a 200 reply");
    tap_is(r.status, 200, "http: its status");
    tap_is(r.body, strlen(ok) - strlen("vllm:num_requests_running 1\n"),
           "http: where its body starts");

    tap_is(kvr_http_reply_head("HTTP/1.0 404 Not Found\n\nno", 26, &r),
           KVR_HTTP_REPLY_OK, "http: bare LF lines");
    tap_is(r.status, 404, "http: status 404");
    tap_is(r.body, 24, "http: the body after LF LF");

    tap_is(kvr_http_reply_head(ok, 20, &r), KVR_HTTP_REPLY_AGAIN,
           "http: a head in pieces");
    tap_is(kvr_http_reply_head("HTTP/1", 6, &r), KVR_HTTP_REPLY_AGAIN,
           "http: a status line in pieces");
    tap_is(kvr_http_reply_head("", 0, &r), KVR_HTTP_REPLY_AGAIN,
           "http: nothing yet");
    tap_is(kvr_http_reply_head("SSH-2.0-OpenSSH\r\n", 17, &r),
           KVR_HTTP_REPLY_BAD, "http: not HTTP");
    tap_is(kvr_http_reply_head("HTTP/1.1 2x0 OK\r\n\r\n", 19, &r),
           KVR_HTTP_REPLY_BAD, "http: a bad status");
    tap_is(kvr_http_reply_head("HTTP/1.1 2000 OK\r\n\r\n", 20, &r),
           KVR_HTTP_REPLY_BAD, "http: a status of four digits");
    tap_is(kvr_http_reply_head("HTTP/1.1 200\r\n\r\nx", 17, &r),
           KVR_HTTP_REPLY_OK, "http: a status without its reason");
    tap_is(r.status, 200, "http: status 200 without a reason");
    s = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n";
    tap_is(kvr_http_reply_head(s, strlen(s), &r), KVR_HTTP_REPLY_CHUNKED,
           "http: chunked refused");
    s = "HTTP/1.1 200 OK\r\nX-Transfer-Encoding: chunked\r\n\r\n";
    tap_is(kvr_http_reply_head(s, strlen(s), &r), KVR_HTTP_REPLY_OK,
           "http: only that header counts");
}


/* the inter-token latency histogram: its _sum and _count, summed */

static void
test_itl(void)
{
    kvr_prom_load_t  l;

    const char *both =
        "vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 1\n"
        "vllm:time_per_output_token_seconds_sum{engine=\"0\"} 99.0\n"
        "vllm:time_per_output_token_seconds_count{engine=\"0\"} 99.0\n"
        "vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"0.01\"} 3\n"
        "vllm:inter_token_latency_seconds_sum{engine=\"0\"} 1.5\n"
        "vllm:inter_token_latency_seconds_count{engine=\"0\"} 100\n"
        "vllm:inter_token_latency_seconds_sum{engine=\"1\"} 0.5\n"
        "vllm:inter_token_latency_seconds_count{engine=\"1\"} 50\n";

    const char *old =
        "vllm:num_requests_running{model_name=\"m\"} 1\n"
        "vllm:time_per_output_token_seconds_sum{model_name=\"m\"} 2.5\n"
        "vllm:time_per_output_token_seconds_count{model_name=\"m\"} 125\n";

    const char *half =
        "vllm:num_requests_running{model_name=\"m\"} 1\n"
        "vllm:inter_token_latency_seconds_sum{model_name=\"m\"} 2.5\n";

    const char *sglang =
        "sglang:num_running_reqs{tp_rank=\"0\"} 2\n"
        "sglang:inter_token_latency_seconds_sum{tp_rank=\"0\"} 4.0\n"
        "sglang:inter_token_latency_seconds_count{tp_rank=\"0\"} 200\n"
        "sglang:inter_token_latency_seconds_sum{tp_rank=\"1\"} 4.0\n"
        "sglang:inter_token_latency_seconds_count{tp_rank=\"1\"} 200\n";

    tap_is(parse(both, &l), 0, "itl: found");
    tap_ok(l.found & KVR_PROM_ITL, "itl: found bit");
    tap_ok(l.itl_sum == 2.0 && l.itl_count == 150,
           "itl: DP engines summed; the new name over the old");
    tap_is(l.found & ~(KVR_PROM_RUNNING | KVR_PROM_ITL), 0,
           "itl: only the public bits in found");

    (void) parse(old, &l);
    tap_ok((l.found & KVR_PROM_ITL) && l.itl_sum == 2.5
           && l.itl_count == 125, "itl: vLLM's older name alone is taken");

    (void) parse(half, &l);
    tap_ok(!(l.found & KVR_PROM_ITL), "itl: a sum without its count is not");

    (void) parse(sglang, &l);
    tap_ok((l.found & KVR_PROM_ITL) && l.itl_sum == 4.0
           && l.itl_count == 200, "itl: sglang's, ranks > 0 mirror rank 0");
}


int
main(void)
{
    test_vllm();
    test_itl();
    test_sglang();
    test_both();
    test_robust();
    test_feed();
    test_http();

    return tap_done();
}
