# mode=kv in front of the bench emulator's data-parallel engines
# (--dp-ranks 2: one HTTP server fronting 2 ranks, each with its own KV
# cache and event stream, as vLLM's API server fronts its engine cores;
# README "Data-parallel ranks").  t/097 holds the index's rules against
# scripted publishers; here the events are the emulator's, made by real
# scheduling and LRU eviction, and the engine says which rank served a
# request (engine_id engine-I-dpR) and what it had cached.
#  - the hit goes to the server and the rank holding the prefix, and
#    X-data-parallel-rank tells the engine which;
#  - a rank's evictions never remove another rank's blocks of the same
#    prefix (a slot each): after rank 0 evicted it, rank 1 still draws it.

use lib 't/lib';
use Test::Nginx::Socket;
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';
use JSON::PP ();
use Kvroute::Emulator;

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_E1} = $port + 71;
$ENV{TEST_NGINX_E2} = $port + 72;
# rank r of engine i publishes on +371 + 2i + r, replays on +471 + 2i + r
$ENV{TEST_NGINX_EV1} = $port + 371;
$ENV{TEST_NGINX_EV2} = $port + 373;
$ENV{TEST_NGINX_RP1} = $port + 471;
$ENV{TEST_NGINX_RP2} = $port + 473;

if (! -d 'bench/node_modules/zeromq') {
    plan skip_all => 'bench/node_modules missing (make bench-deps)';
}

use_hup();

# 2 engines of 2 ranks, each rank 24 blocks of 16 tokens
start_emulator(base_port => $ENV{TEST_NGINX_E1},
               log => 't/emulator-dp.log',
               args => [ '--kv-events', 'zmq', '--events-format', 'map',
                         '--dp-ranks', 2, '--capacity-blocks', 24,
                         '--events-base-port', $ENV{TEST_NGINX_EV1},
                         '--replay-base-port', $ENV{TEST_NGINX_RP1} ]);

# a completions request of n token ids from `first`
sub prompt {
    my ($path, $first, $n) = @_;
    return "POST $path\n" . JSON::PP->new->encode(
        { model => 'm', max_tokens => 2,
          prompt => [ map { 1000 + ($_ * 7919) % 60000 } $first .. $first + $n - 1 ] });
}

our $HttpConfig = <<'_EOC_';
upstream llm {
    kvroute mode=kv events_ranks=2 predict=0 zone=kv_dp_emu:4m;
    kvroute_events 127.0.0.1:$TEST_NGINX_E1 tcp://127.0.0.1:$TEST_NGINX_EV1
                   replay=tcp://127.0.0.1:$TEST_NGINX_RP1;
    kvroute_events 127.0.0.1:$TEST_NGINX_E2 tcp://127.0.0.1:$TEST_NGINX_EV2
                   replay=tcp://127.0.0.1:$TEST_NGINX_RP2;
    server 127.0.0.1:$TEST_NGINX_E1;
    server 127.0.0.1:$TEST_NGINX_E2;
}
_EOC_

our $Config = <<'_EOC_';
location /v1/ {
    proxy_pass http://llm;
    proxy_set_header X-data-parallel-rank $kvroute_dp_rank;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap/$kvroute_blocks rank=$kvroute_dp_rank";
}
location /e2r0/ {
    proxy_pass http://127.0.0.1:$TEST_NGINX_E2/;
    proxy_set_header X-data-parallel-rank 0;
}
location /e2r1/ {
    proxy_pass http://127.0.0.1:$TEST_NGINX_E2/;
    proxy_set_header X-data-parallel-rank 1;
}
location = /kvroute_status { kvroute_status; }
location = /wait { echo_sleep 1; echo ok; }
_EOC_

our $MainConfig = <<'_EOC_';
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
_EOC_

master_on();
workers(2);
check_accum_error_log();
repeat_each(1);
plan 'no_plan';
no_shuffle();
run_tests();

__DATA__

=== TEST 1: a prefix computed on engine 2's rank 1: the next request with
it goes to engine 2, rank 1 (the header sent), and the engine reports the
prefix cached there
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- timeout: 10
--- request eval
[ "GET /wait",
  main::prompt("/e2r1/v1/completions", 0, 160),
  "GET /wait",
  main::prompt("/v1/completions", 0, 176) ]
--- response_headers_like eval
[ "", "", "", "X-Kvroute: overlap 10/11 rank=1" ]
--- response_body_like eval
[ qr/ok/, qr/"engine_id":"engine-1-dp1"/, qr/ok/,
  qr/"cached_tokens":160\b.*"engine_id":"engine-1-dp1"|"engine_id":"engine-1-dp1".*"cached_tokens":160\b/s ]
--- no_error_log
[error]



=== TEST 2: the same prefix on both of engine 2's ranks; rank 0 then
evicts it (other prompts fill its 24 blocks) and publishes the removals:
rank 0 no longer has it (a 3-block probe hits nothing there), rank 1's
copy stays in the index, and the prefix goes there, hitting
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- timeout: 15
--- request eval
[ "GET /wait",
  main::prompt("/e2r0/v1/completions", 1000, 160),
  main::prompt("/e2r1/v1/completions", 1000, 160),
  main::prompt("/e2r0/v1/completions", 2000, 192),
  main::prompt("/e2r0/v1/completions", 3000, 192),
  main::prompt("/e2r0/v1/completions", 4000, 192),
  main::prompt("/e2r0/v1/completions", 1000, 48),
  "GET /wait",
  main::prompt("/v1/completions", 1000, 176) ]
--- response_headers_like eval
[ "", "", "", "", "", "", "", "", "X-Kvroute: overlap 10/11 rank=1" ]
--- response_body_like eval
[ qr/ok/, qr/"engine_id":"engine-1-dp0"/, qr/"engine_id":"engine-1-dp1"/,
  qr/engine-1-dp0/, qr/engine-1-dp0/, qr/engine-1-dp0/,
  qr/"cached_tokens":0\b/, qr/ok/,
  qr/"cached_tokens":160\b.*"engine_id":"engine-1-dp1"|"engine_id":"engine-1-dp1".*"cached_tokens":160\b/s ]
--- no_error_log
[error]



=== TEST 3: the status page: engine 2's rank 0 removed blocks, its rank 1
none (each rank's own counters), and no rank is stale
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- request eval
[ "GET /wait", "GET /kvroute_status" ]
--- response_body_like eval
my $s = qq{upstream="llm",server="127.0.0.1:$ENV{TEST_NGINX_E2}"};
[ qr/ok/,
  qr/^kvroute_events_removed_blocks_total\{\Q$s\E,rank="0"\} [1-9]\d*\n(?s:.*)^kvroute_events_removed_blocks_total\{\Q$s\E,rank="1"\} 0\n/m ]
--- response_body_unlike eval
[ qr/^$/, qr/kvroute_events_stale\{[^}]*\} 1\n/ ]
--- no_error_log
[error]
