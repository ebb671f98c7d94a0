# mode=kv against the bench emulator emitting the forms real engines send
# beyond one GPU stream (bench/emulator/events.js EventShaper): a CPU tier
# written through (its own stores and removals of the same hashes), vLLM's
# kv_cache_report_mode="full" re-announcements, a sliding-window KV cache
# group.  Routing follows the GPU's full-attention blocks only: after the
# engine evicts a prefix from its GPU, no request is routed for it, though
# the CPU tier still holds it and it was re-announced.

use lib 't/lib';
use Test::Nginx::Socket;
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';
use JSON::PP ();
use Kvroute::Emulator;

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_E1} = $port + 81;
$ENV{TEST_NGINX_E2} = $port + 82;

use_hup();

if (! -d 'bench/node_modules/zeromq') {
    plan skip_all => 'bench/node_modules missing (make bench-deps)';
}

# two engines of 24 blocks, events 100 ports above their HTTP ports
start_emulator(base_port => $ENV{TEST_NGINX_E1},
               log => 't/emulator-forms.log',
               args => [ '--kv-events', 'zmq', '--events-format', 'map',
                         '--events-base-port', $port + 181,
                         '--replay-base-port', 0,
                         '--capacity-blocks', 24,
                         '--events-offload', 1000, '--events-report-full',
                         '--events-hybrid' ]);

# two more engines, vLLM's offloading connector with blocks of 4 GPU
# blocks (block_size 64): the CPU tier's events name each group by the
# hash of its last GPU block
$ENV{TEST_NGINX_E3} = $port + 83;
$ENV{TEST_NGINX_E4} = $port + 84;

start_emulator(base_port => $ENV{TEST_NGINX_E3},
               log => 't/emulator-forms-groups.log',
               args => [ '--kv-events', 'zmq', '--events-format', 'map',
                         '--events-base-port', $port + 183,
                         '--replay-base-port', 0,
                         '--capacity-blocks', 24,
                         '--events-offload', 1000,
                         '--offload-block-size', 64 ]);

sub prompt {
    my ($path, $first, $n) = @_;
    return "POST $path\n" . JSON::PP->new->encode(
        { model => 'm', max_tokens => 2,
          prompt => [ map { 1000 + ($_ * 7919) % 60000 } $first .. $first + $n - 1 ] });
}

our $HttpConfig = <<'_EOC_';
upstream llm {
    kvroute mode=kv events_port=+100 predict=0 zone=kv_forms:8m;
    server 127.0.0.1:$TEST_NGINX_E1;
    server 127.0.0.1:$TEST_NGINX_E2;
}
upstream llm_groups {
    kvroute mode=kv events_port=+100 predict=0 ttft_evict=0
            zone=kv_forms_groups:8m;
    server 127.0.0.1:$TEST_NGINX_E3;
    server 127.0.0.1:$TEST_NGINX_E4;
}
_EOC_

our $Config = <<'_EOC_';
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap/$kvroute_blocks";
}
location /groups/ {
    proxy_pass http://llm_groups/;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap/$kvroute_blocks";
}
location /direct2/ { proxy_pass http://127.0.0.1:$TEST_NGINX_E2/; }
location /direct3/ { proxy_pass http://127.0.0.1:$TEST_NGINX_E3/; }
location /direct4/ { proxy_pass http://127.0.0.1:$TEST_NGINX_E4/; }
location = /kvroute_status { kvroute_status; }
location = /wait { echo_sleep 1.5; echo ok; }
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

=== TEST 1: a prefix stored on engine 2 (also on its CPU tier, its
sliding-window group, re-announced when reused) attracts its requests;
once engine 2 evicts it from the GPU, none is routed for it
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- timeout: 10
--- request eval
[ "GET /wait",
  main::prompt("/direct2/v1/completions", 0, 200),
  main::prompt("/direct2/v1/completions", 0, 240),
  "GET /wait",
  main::prompt("/v1/completions", 0, 200),
  main::prompt("/direct2/v1/completions", 5000, 352),
  "GET /wait",
  main::prompt("/v1/completions", 0, 200),
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "", "", "", "X-Kvroute: overlap 12/12", "", "",
  "X-Kvroute: (?:home 0|overlap 1)/12", "" ]
--- response_body_like eval
[ qr/ok/, qr/engine-1/, qr/"cached_tokens":192/, qr/ok/, qr/engine-1/,
  qr/engine-1/, qr/ok/, qr/.*/,
  qr/kvroute_events_offloaded_blocks_total\{[^}]*\} [1-9]\d*\n(?:.*\n)*kvroute_events_other_group_blocks_total\{[^}]*\} [1-9]\d*\n(?:.*\n)*kvroute_events_reannounced_blocks_total\{[^}]*\} [1-9]\d*\n/ ]
--- no_error_log
[error]



=== TEST 2: offloaded blocks of 4 GPU blocks: a prefix the second
engine computed, offloaded in groups and then evicted from its GPU (all
but its first block) goes there, loaded back whole, though the first
engine's GPU holds 4 of its blocks (ttft_evict=0: the tiers' credit
decides, not the cache pressure both engines are under)
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- timeout: 10
--- request eval
[ "GET /wait",
  main::prompt("/direct4/v1/completions", 9000, 200),
  main::prompt("/direct4/v1/completions", 15000, 352),
  main::prompt("/direct3/v1/completions", 9000, 64),
  "GET /wait",
  main::prompt("/groups/v1/completions", 9000, 200),
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "", "", "", "", "X-Kvroute: \\w+ [01]/12", "" ]
--- response_body_like eval
[ qr/ok/, qr/engine-1/, qr/engine-1/, qr/engine-0/, qr/ok/,
  qr/"cached_tokens":192\b.*engine-1|engine-1.*"cached_tokens":192\b/s,
  qr/kvroute_host_tier_blocks\{[^}]*server="127\.0\.0\.1:$ENV{TEST_NGINX_E4}"\} (?:[2-9]\d|1[2-9])\n/ ]
--- no_error_log
[error]
