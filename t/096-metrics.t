# metrics=on: the events helper scrapes each engine's Prometheus /metrics
# and a server's load is what its engine says (running + waiting), plus
# this frontend's requests sent since.  The fake engines here are nginx
# servers of the same instance: each answers completions with its name and
# serves a /metrics of the test's choosing.

use lib 't/lib';
use Test::Nginx::Socket;
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';
use JSON::PP ();
use Kvroute::Emulator;

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_F1} = $port + 41;       # fake engine "busy"
$ENV{TEST_NGINX_F2} = $port + 42;       # fake engine "idle"
$ENV{TEST_NGINX_DEAD} = 43;             # +43: nothing listens there
$ENV{TEST_NGINX_F3} = $port + 44;       # fake engine that answers 503
$ENV{TEST_NGINX_E1} = $port + 51;       # emulated engines, SGLang's names
$ENV{TEST_NGINX_E2} = $port + 52;
$ENV{TEST_NGINX_S1} = $port + 53;       # emulated engines: a fast node
$ENV{TEST_NGINX_S2} = $port + 54;       # and one at a fifth of its speed

# distinct prompts: no server holds any of them, the load decides
our @Prompts = map {
    JSON::PP->new->encode({ model => 'm', max_tokens => 1,
                            prompt => "prompt $_ " . ("x" x 200) })
} 1 .. 6;

our $Fakes = <<'_EOC_';
server {
    listen 127.0.0.1:$TEST_NGINX_F1;
    location = /metrics {
        default_type text/plain;
        return 200 "# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\",engine=\"0\"} 50.0\nvllm:num_requests_waiting{model_name=\"m\",engine=\"0\"} 0.0\nvllm:kv_cache_usage_perc{model_name=\"m\",engine=\"0\"} 0.5\n";
    }
    location = /garbage {
        default_type text/plain;
        return 200 "vllm:num_requests_running{model_name=\"m\" 50\nvllm:num_requests_running NaN\n\x00\xff{}}}\nvllm:num_requests_running 5";
    }
    location /v1/ { return 200 "engine F1\n"; }
}
server {
    listen 127.0.0.1:$TEST_NGINX_F2;
    location = /metrics {
        default_type text/plain;
        return 200 "vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 0.0\r\nvllm:num_requests_waiting{model_name=\"m\",engine=\"0\"} 0.0\r\n";
    }
    location = /garbage {
        default_type text/plain;
        return 200 "not prometheus at all\n";
    }
    location /v1/ { return 200 "engine F2\n"; }
}
_EOC_

# two emulated SGLang engines; a client that bypasses nginx keeps the
# first one busy with 8 long requests (time scale 1: each lasts seconds),
# more than place_slack's window of requests in flight (1,200 prompt
# tokens; ttft_decode 300 a request with metrics=on)
our $Emulated = -d 'bench/node_modules';

if ($Emulated) {
    start_emulator(base_port => $ENV{TEST_NGINX_E1},
                   log => 't/emulator-metrics.log',
                   args => [ '--flavour', 'sglang', '--time-scale', 1 ]);

    start_node('t/direct-metrics.log', 'bench/loadgen/direct.js',
               '--port', $ENV{TEST_NGINX_E1}, '--concurrency', 8,
               '--prompt-tokens', 64, '--max-tokens', 2000,
               '--seconds', 300);

    # unequal nodes, each kept decoding one long request by a client that
    # bypasses nginx, so their inter-token latencies are there to read
    start_emulator(base_port => $ENV{TEST_NGINX_S1},
                   log => 't/emulator-speed.log',
                   args => [ '--time-scale', 1, '--gpus', '1,0.2' ]);

    for my $p ($ENV{TEST_NGINX_S1}, $ENV{TEST_NGINX_S2}) {
        start_node("t/direct-speed-$p.log", 'bench/loadgen/direct.js',
                   '--port', $p, '--concurrency', 1,
                   '--prompt-tokens', 64, '--max-tokens', 4000,
                   '--seconds', 300);
    }
}

sub speed_upstream {
    my ($params) = @_;
    return <<"_EOC_";
upstream llm {
    kvroute metrics=on metrics_interval=100ms $params;
    server 127.0.0.1:\$TEST_NGINX_S1;
    server 127.0.0.1:\$TEST_NGINX_S2;
}
_EOC_
}

our $EmulatedConfig = <<'_EOC_';
upstream llm {
    kvroute metrics=on metrics_interval=100ms;
    server 127.0.0.1:$TEST_NGINX_E1;
    server 127.0.0.1:$TEST_NGINX_E2;
}
_EOC_

our $Config = <<'_EOC_';
location /v1/ { proxy_pass http://llm; }
location = /kvroute_status { kvroute_status; }
location = /wait { echo_sleep 1; echo ok; }
_EOC_

our $MainConfig = <<'_EOC_';
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
_EOC_

sub upstream {
    my ($params) = @_;
    return <<"_EOC_" . $::Fakes;
upstream llm {
    kvroute $params;
    server 127.0.0.1:\$TEST_NGINX_F1;
    server 127.0.0.1:\$TEST_NGINX_F2;
}
_EOC_
}

our @Requests = ("GET /wait", map({ "POST /v1/completions\n$_" } @Prompts),
                 "GET /kvroute_status");

master_on();
workers(2);
repeat_each(1);
plan 'no_plan';
no_shuffle();
run_tests();

__DATA__

=== TEST 1: an engine whose /metrics says 50 running is avoided
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=100ms")
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Requests ]
--- response_body_like eval
[ qr/ok/, (qr/^engine F2$/) x 6,
  qr/kvroute_indexed_blocks\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_F1}"\} 0\n(?s:.*)kvroute_load_source\{upstream="llm",server="127\.0\.0\.1:\d+",source="metrics",reason="ok"\} 1\n(?s:.*)kvroute_engine_running_requests\{upstream="llm",server="127\.0\.0\.1:\d+"\} 0\n/ ]
--- no_error_log
[error]
[warn]



=== TEST 2: the status page shows what the busy engine said
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=100ms")
--- config eval: $::Config
--- request eval
[ "GET /wait", "GET /kvroute_status" ]
--- response_body_like eval
[ qr/ok/,
  qr/kvroute_engine_running_requests\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_F1}"\} 50\nkvroute_engine_waiting_requests\{[^}]*\} 0\nkvroute_engine_kv_usage_permille\{[^}]*\} 500\nkvroute_engine_scrapes_total\{[^}]*\} [1-9]\d*\nkvroute_engine_scrape_failures_total\{[^}]*\} 0\nkvroute_engine_scrape_age_milliseconds\{[^}]*\} \d+\nkvroute_engine_inter_token_latency_microseconds\{[^}]*\} 0\nkvroute_load_source\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_F1}",source="metrics",reason="ok"\} 1\n/ ]
--- no_error_log
[error]



=== TEST 3: without metrics=on the same requests spread (own counts only)
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=off")
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Requests ]
--- response_body_like eval
[ qr/ok/, (qr/^engine F[12]$/) x 6,
  qr/^(?!.*kvroute_load_source)(?=.*kvroute_indexed_blocks\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_F1}"\} [1-9])/s ]
--- no_error_log
[error]



=== TEST 4: a dead metrics endpoint: own counts, the status page says why
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=100ms metrics_port=+$ENV{TEST_NGINX_DEAD}")
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Requests ]
--- response_body_like eval
[ qr/ok/, (qr/^engine F[12]$/) x 6,
  qr/kvroute_engine_scrape_failures_total\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_F1}"\} [1-9]\d*\n(?s:.*)kvroute_load_source\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_F1}",source="own",reason="connect"\} 1\n/ ]
--- no_error_log
[error]



=== TEST 5: a dead metrics endpoint is logged once a server, not at each of its 10 scrapes a second
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=100ms metrics_port=+$ENV{TEST_NGINX_DEAD}")
--- config eval: $::Config
--- request
GET /wait
--- response_body
ok
--- grep_error_log eval: qr/cannot read the metrics of server 127\.0\.0\.1:\d+ at "\/metrics": connect/
--- grep_error_log_out eval
"cannot read the metrics of server 127.0.0.1:$ENV{TEST_NGINX_F1} at \"/metrics\": connect\n"
. "cannot read the metrics of server 127.0.0.1:$ENV{TEST_NGINX_F2} at \"/metrics\": connect\n"



=== TEST 6: garbage /metrics never breaks routing; the reason is on the page
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=100ms metrics_path=/garbage")
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Requests ]
--- response_body_like eval
[ qr/ok/, (qr/^engine F[12]$/) x 6,
  qr/source="own",reason="no_load_metrics"\} 1\n(?s:.*)source="own",reason="no_load_metrics"\} 1\n/ ]
--- no_error_log
[error]



=== TEST 7: a 404 at the metrics path: reason "status"
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=100ms metrics_path=/nothing/here")
--- config eval: $::Config
--- request eval
[ "GET /wait", "GET /kvroute_status" ]
--- response_body_like eval
[ qr/ok/, qr/source="own",reason="status"\} 1\n(?s:.*)source="own",reason="status"\} 1\n/ ]



=== TEST 8: a 404 at the metrics path is logged with the status
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=100ms metrics_path=/nothing/here")
--- config eval: $::Config
--- request
GET /wait
--- response_body
ok
--- error_log
at "/nothing/here": status 404, its load is this frontend's own requests



=== TEST 9: metrics_interval is bounded
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=10ms")
--- config eval: $::Config
--- must_die
--- error_log
invalid "metrics_interval" value "10ms": expected a time from 50ms to 60000ms



=== TEST 10: metrics_path must be a path
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_path=metrics")
--- config eval: $::Config
--- must_die
--- error_log
invalid "metrics_path" value "metrics": expected a path starting with "/"



=== TEST 11: SGLang's names: an engine busy with requests nginx never saw is avoided
--- skip_eval: 1: !$::Emulated
--- main_config eval: $::MainConfig
--- http_config eval: $::EmulatedConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Requests ]
--- response_body_like eval
[ qr/ok/, (qr/"engine_id":"engine-1"/) x 6,
  qr/kvroute_engine_running_requests\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_E1}"\} [1-9]\n(?s:.*)kvroute_load_source\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_E1}",source="metrics",reason="ok"\} 1\n/ ]
--- no_error_log
[error]
[warn]



=== TEST 12: metrics=on weighs the speeds by default: an engine on a node 5 times slower (its inter-token latency) is not given new prefixes
--- skip_eval: 1: !$::Emulated
--- main_config eval: $::MainConfig
--- http_config eval: ::speed_upstream("")
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ "GET /wait", @::Requests ]
--- response_body_like eval
[ qr/ok/, qr/ok/, (qr/"engine_id":"engine-0"/) x 6,
  qr/kvroute_indexed_blocks\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_S2}"\} 0\n(?s:.*)kvroute_engine_inter_token_latency_microseconds\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_S2}"\} [1-9]\d{4,}\n/ ]
--- no_error_log
[error]
[warn]



=== TEST 13: metrics_speed=off: the same prompts are spread over both
--- skip_eval: 1: !$::Emulated
--- main_config eval: $::MainConfig
--- http_config eval: ::speed_upstream("metrics_speed=off")
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ "GET /wait", @::Requests ]
--- response_body_like eval
[ qr/ok/, qr/ok/, qr/"engine_id":"engine-[01]"/, qr/"engine_id":"engine-[01]"/,
  qr/"engine_id":"engine-[01]"/, qr/"engine_id":"engine-[01]"/,
  qr/"engine_id":"engine-[01]"/, qr/"engine_id":"engine-[01]"/,
  qr/^(?=(?s:.*)kvroute_indexed_blocks\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_S2}"\} [1-9])/ ]
--- no_error_log
[error]
[warn]



=== TEST 14: metrics_load=off: the busy engine's own figures are not taken; own counts spread the requests
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=100ms metrics_load=off")
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Requests ]
--- response_body_like eval
[ qr/ok/, (qr/^engine F[12]$/) x 6,
  qr/kvroute_indexed_blocks\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_F1}"\} [1-9](?s:.*)kvroute_engine_running_requests\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_F1}"\} 50\n(?s:.*)kvroute_load_source\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_F1}",source="own",reason="metrics_load_off"\} 1\n/ ]
--- no_error_log
[error]



=== TEST 15: metrics=on learns ttft_decode by default: each ended request counted, 300 until a fit
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=100ms")
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Requests ]
--- response_body_like eval
[ qr/ok/, (qr/^engine F2$/) x 6,
  qr/kvroute_ttft_decode_tokens\{upstream="llm",source="configured"\} 300\nkvroute_ttft_decode_requests_total\{zone="kvroute_llm"\} 6\nkvroute_ttft_decode_fits_total\{zone="kvroute_llm"\} 0\nkvroute_ttft_decode_queued_total\{zone="kvroute_llm"\} 0\n/ ]
--- no_error_log
[error]



=== TEST 16: a ttft_decode set is kept: nothing learned
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=100ms ttft_decode=450")
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Requests ]
--- response_body_like eval
[ qr/ok/, (qr/^engine F2$/) x 6,
  qr/kvroute_ttft_decode_tokens\{upstream="llm",source="configured"\} 450\n(?!kvroute_ttft_decode_requests_total)/ ]
--- no_error_log
[error]



=== TEST 17: ttft_decode=auto learns nothing from an error status
--- main_config eval: $::MainConfig
--- http_config
upstream llm {
    kvroute ttft_decode=auto;
    server 127.0.0.1:$TEST_NGINX_F3;
}
server {
    listen 127.0.0.1:$TEST_NGINX_F3;
    location /v1/ { return 503 "busy\n"; }
}
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ map({ "POST /v1/completions\n$_" } @::Prompts[0 .. 2]), "GET /kvroute_status" ]
--- error_code eval
[ 503, 503, 503, 200 ]
--- response_body_like eval
[ (qr/^busy$/) x 3,
  qr/kvroute_ttft_decode_tokens\{upstream="llm",source="configured"\} 1200\nkvroute_ttft_decode_requests_total\{zone="kvroute_llm"\} 0\n/ ]
--- no_error_log
[error]



=== TEST 18: another policy with metrics=on: the status page has no ttft_decode lines
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=100ms policy=dynamo")
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Requests ]
--- response_body_like eval
[ qr/ok/, (qr/^engine F[12]$/) x 6, qr/^(?!(?s:.*)kvroute_ttft_decode_\w+\{)(?s:.*)kvroute_index_entries/ ]
--- no_error_log
[error]



=== TEST 19: a request sent where the engine had no KV room for it is counted, not learned from
--- main_config eval: $::MainConfig
--- http_config eval: ::upstream("metrics=on metrics_interval=100ms capacity=1")
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Requests ]
--- response_body_like eval
[ qr/ok/, (qr/^engine F[12]$/) x 6,
  qr/kvroute_ttft_decode_requests_total\{zone="kvroute_llm"\} 0\nkvroute_ttft_decode_fits_total\{zone="kvroute_llm"\} 0\nkvroute_ttft_decode_queued_total\{zone="kvroute_llm"\} 6\n/ ]
--- no_error_log
[error]
