# mode=kv: a helper process subscribes to the engines' ZeroMQ KV event
# streams (here the bench emulator's, vLLM's wire format) and routing
# follows what the engines report, not what kvroute predicted.

use lib 't/lib';
use Test::Nginx::Socket;
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';
use JSON::PP ();
use Kvroute::Emulator;

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_E1} = $port + 31;
$ENV{TEST_NGINX_E2} = $port + 32;
my $events_base = $port + 131;
$ENV{TEST_NGINX_E2_EVENTS} = "tcp://127.0.0.1:" . ($events_base + 1);
$ENV{TEST_NGINX_E2_REPLAY} = "tcp://127.0.0.1:" . ($port + 232);

use_hup();

if (! -d 'bench/node_modules/zeromq') {
    plan skip_all => 'bench/node_modules missing (make bench-deps)';
}

# two emulated engines publishing KV events 100 ports above their HTTP
# ports, replay sockets 200 above
start_emulator(base_port => $ENV{TEST_NGINX_E1}, log => 't/emulator-events.log',
               args => [ '--kv-events', 'zmq',
                         '--events-base-port', $events_base,
                         '--replay-base-port', $port + 231 ]);

# the events helper is nginx's cache manager process: a child of the master
sub kill_helper {
    my $root = $ENV{TEST_NGINX_SERVROOT} || 't/servroot';
    open my $fh, '<', "$root/logs/nginx.pid" or return;
    chomp(my $master = <$fh>);
    for my $stat (glob '/proc/[0-9]*/stat') {
        open my $s, '<', $stat or next;
        my @f = split ' ', scalar <$s>;
        next unless $f[3] == $master;
        open my $c, '<', "/proc/$f[0]/cmdline" or next;
        kill 'KILL', $f[0] if <$c> =~ /cache manager/;
    }
    select(undef, undef, undef, 0.5);
}

our $Prompt = JSON::PP->new->encode({ model => 'm', max_tokens => 2,
                                      prompt => [ 1000 .. 1099 ] });

our $HttpConfig = <<'_EOC_';
upstream llm {
    kvroute mode=kv events_port=+100 zone=kv_events:8m;
    server 127.0.0.1:$TEST_NGINX_E1;
    server 127.0.0.1:$TEST_NGINX_E2;
}
_EOC_

our $ReplayConfig = <<'_EOC_';
upstream llm {
    kvroute mode=kv events_port=+100 replay_port=+200 zone=kv_events:8m;
    server 127.0.0.1:$TEST_NGINX_E1;
    server 127.0.0.1:$TEST_NGINX_E2;
}
_EOC_

our $Config = <<'_EOC_';
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap/$kvroute_blocks";
}
location /direct2/ { proxy_pass http://127.0.0.1:$TEST_NGINX_E2/; }
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

=== TEST 1: blocks an engine stored, reported by its events, attract the prefix
(the helper subscribes first: a PUB socket drops what nobody hears)
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
[ "GET /wait",
  "POST /direct2/v1/completions\n$::Prompt",
  "GET /wait",
  "POST /v1/completions\n$::Prompt",
  "POST /v1/completions\n$::Prompt",
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "", "", "X-Kvroute: overlap 6/6", "X-Kvroute: overlap 6/6", "" ]
--- response_body_like eval
[ qr/ok/, qr/"engine_id":"engine-1"/, qr/ok/, qr/"engine_id":"engine-1"/,
  qr/"engine_id":"engine-1"/,
  qr/kvroute_events_stored_blocks_total\{upstream="llm",server="127.0.0.1:\d+"\} [1-9]/ ]
--- no_error_log
[error]



=== TEST 2: the engine's AllBlocksCleared empties what the index held for it
(the helper subscribes first, as in TEST 1: under load it may not have yet
when the engine publishes, and a PUB socket drops what nobody hears)
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
[ "GET /wait",
  "POST /direct2/reset_prefix_cache\n",
  "GET /wait",
  "GET /kvroute_status" ]
--- response_body_like eval
[ qr/ok/, qr/.*/, qr/ok/,
  qr/kvroute_indexed_blocks\{upstream="llm",server="127.0.0.1:\d+"\} 0\n(?:.*\n)*kvroute_indexed_blocks\{upstream="llm",server="127.0.0.1:\d+"\} 0\n(?:.*\n)*kvroute_events_cleared_total\{upstream="llm",server="127.0.0.1:\d+"\} 1\n/ ]
--- no_error_log
[error]



=== TEST 3: with predictions off, only events make a prefix known
--- main_config eval: $::MainConfig
--- http_config
upstream llm {
    kvroute mode=kv events_port=+100 predict=0 zone=kv_events:8m;
    server 127.0.0.1:$TEST_NGINX_E1;
    server 127.0.0.1:$TEST_NGINX_E2;
}
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
[ "POST /v1/completions\n" . JSON::PP->new->encode({ model => 'm', max_tokens => 2, prompt => [ 5000 .. 5099 ] }),
  "GET /wait",
  "POST /v1/completions\n" . JSON::PP->new->encode({ model => 'm', max_tokens => 2, prompt => [ 5000 .. 5099 ] }) ]
--- response_headers_like eval
[ "X-Kvroute: home 0/6", "", "X-Kvroute: overlap 6/6" ]
--- no_error_log
[error]



=== TEST 4: the helper killed with SIGKILL is respawned and follows events again
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- init
main::kill_helper();
--- more_headers
Content-Type: application/json
--- request eval
[ "POST /direct2/v1/completions\n" . JSON::PP->new->encode({ model => 'm', max_tokens => 2, prompt => [ 7000 .. 7099 ] }),
  "GET /wait",
  "POST /v1/completions\n" . JSON::PP->new->encode({ model => 'm', max_tokens => 2, prompt => [ 7000 .. 7099 ] }),
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "", "X-Kvroute: overlap 6/6", "" ]
--- response_body_like eval
[ qr/engine-1/, qr/ok/, qr/engine-1/,
  qr/kvroute_events_helper_starts_total\{zone="kv_events"\} [2-9]/ ]
--- error_log eval
[ qr/cache manager process \d+ exited on signal 9/,
  qr/cache manager process \d+ exited on signal 9/,
  qr/cache manager process \d+ exited on signal 9/,
  qr/cache manager process \d+ exited on signal 9/ ]
--- no_error_log
[error]



=== TEST 5: with a replay socket configured, store a prefix on engine 2
--- main_config eval: $::MainConfig
--- http_config eval: $::ReplayConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
[ "POST /direct2/v1/completions\n" . JSON::PP->new->encode({ model => 'm', max_tokens => 2, prompt => [ 9000 .. 9099 ] }),
  "GET /wait" ]
--- response_body_like eval
[ qr/engine-1/, qr/ok/ ]
--- no_error_log
[error]



=== TEST 6: a helper killed with SIGKILL rebuilds the index from the replay
--- main_config eval: $::MainConfig
--- http_config eval: $::ReplayConfig
--- config eval: $::Config
--- init
main::kill_helper();
--- more_headers
Content-Type: application/json
--- request eval
[ "GET /wait",
  "POST /v1/completions\n" . JSON::PP->new->encode({ model => 'm', max_tokens => 2, prompt => [ 9000 .. 9099 ] }),
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 6/6", "" ]
--- response_body_like eval
[ qr/ok/, qr/engine-1/,
  qr/kvroute_events_replays_total\{upstream="llm",server="127.0.0.1:\d+"\} [1-9]/ ]
--- error_log eval
[ qr/exited on signal 9/, qr/exited on signal 9/, qr/exited on signal 9/ ]
--- no_error_log
[error]



=== TEST 7: a reload that drops a server: the new helper follows the rest
--- main_config eval: $::MainConfig
--- http_config
upstream llm {
    kvroute mode=kv events_port=+100 replay_port=+200 zone=kv_events:8m;
    server 127.0.0.1:$TEST_NGINX_E2;
}
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
[ "GET /wait",
  "POST /v1/completions\n" . JSON::PP->new->encode({ model => 'm', max_tokens => 2, prompt => [ 9000 .. 9099 ] }),
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 6/6", "" ]
--- response_body_like eval
[ qr/ok/, qr/engine-1/,
  qr/\A(?!.*server="127\.0\.0\.1:$ENV{TEST_NGINX_E1}").*kvroute_events_replays_total/s ]
--- no_error_log
[error]



=== TEST 8: explicit endpoints: kvroute_events names where a server publishes
--- main_config eval: $::MainConfig
--- http_config
upstream llm {
    kvroute mode=kv zone=kv_events:8m;
    kvroute_events 127.0.0.1:$TEST_NGINX_E2 $TEST_NGINX_E2_EVENTS
                   replay=$TEST_NGINX_E2_REPLAY;
    server 127.0.0.1:$TEST_NGINX_E1;
    server 127.0.0.1:$TEST_NGINX_E2;
}
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
[ "GET /wait",
  "POST /v1/completions\n" . JSON::PP->new->encode({ model => 'm', max_tokens => 2, prompt => [ 9000 .. 9099 ] }) ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 6/6" ]
--- response_body_like eval
[ qr/ok/, qr/engine-1/ ]
--- error_log eval
[ qr/no KV events for server 127\.0\.0\.1:\d+: no "kvroute_events" line names it/,
  qr/no KV events for server/ ]
--- no_error_log
[error]
