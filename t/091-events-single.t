# mode=kv with master_process off (Test::Nginx's default): no helper
# process exists, the events are applied on a timer of the one process.

use lib 't/lib';
use Test::Nginx::Socket;
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';
use JSON::PP ();
use Kvroute::Emulator;

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_E1} = $port + 41;
$ENV{TEST_NGINX_E2} = $port + 42;

if (! -d 'bench/node_modules/zeromq') {
    plan skip_all => 'bench/node_modules missing (make bench-deps)';
}

start_emulator(base_port => $ENV{TEST_NGINX_E1}, log => 't/emulator-single.log',
               args => [ '--kv-events', 'zmq',
                         '--events-base-port', $port + 141,
                         '--replay-base-port', 0 ]);

our $Prompt = JSON::PP->new->encode({ model => 'm', max_tokens => 2,
                                      prompt => [ 3000 .. 3099 ] });

master_off();
repeat_each(1);
plan 'no_plan';
no_shuffle();
run_tests();

__DATA__

=== TEST 1: one process: events still route the prefix to the engine that has it
(the first wait lets the subscription settle: a ZeroMQ subscriber misses
what is published before it has joined, and under ASan joining can take
a second or two)
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config
upstream llm {
    kvroute mode=kv events_port=+100;
    server 127.0.0.1:$TEST_NGINX_E1;
    server 127.0.0.1:$TEST_NGINX_E2;
}
--- config
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap/$kvroute_blocks";
}
location /direct2/ { proxy_pass http://127.0.0.1:$TEST_NGINX_E2/; }
location = /wait { echo_sleep 1.5; echo ok; }
--- more_headers
Content-Type: application/json
--- request eval
[ "GET /wait",
  "POST /direct2/v1/completions\n$::Prompt",
  "GET /wait",
  "POST /v1/completions\n$::Prompt" ]
--- response_headers_like eval
[ "", "", "", "X-Kvroute: overlap 6/6" ]
--- response_body_like eval
[ qr/ok/, qr/engine-1/, qr/ok/, qr/engine-1/ ]
--- no_error_log
[error]
