# The index lives across `nginx -s reload` when the zone's name and size
# stay; in-flight counters return to zero after client aborts.

use lib 't/lib';
use Test::Nginx::Socket 'no_plan';
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';
use Kvroute::Bodies;

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_B1} = $port + 1;
$ENV{TEST_NGINX_B2} = $port + 2;
$ENV{TEST_NGINX_B3} = $port + 3;
use_hup();

our $Backends = <<'_EOC_';
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "b1\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B2; location / { return 200 "b2\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B3;
         location / { echo_sleep 1; echo b3; } }
_EOC_

our $MainConfig = <<'_EOC_';
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
_EOC_

our $Config = <<'_EOC_';
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute "$kvroute_reason $kvroute_server";
}
location = /kvroute_status { kvroute_status; }
_EOC_

master_on();
workers(2);
repeat_each(1);
no_shuffle();
run_tests();

__DATA__

=== TEST 1: only b1 is up: the prefix is recorded for b1
--- main_config eval: $::MainConfig
--- http_config eval
"upstream llm {
    kvroute zone=kv_reload:4m;
    server 127.0.0.1:\$TEST_NGINX_B1;
    server 127.0.0.1:\$TEST_NGINX_B2 down;
}
$::Backends"
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
[ ::chat_request(7, "a"), ::chat_request(7, "b") ]
--- response_body eval
[ "b1\n", "b1\n" ]
--- response_headers_like eval
[ "X-Kvroute: home 127.0.0.1:\\d+", "X-Kvroute: overlap 127.0.0.1:\\d+" ]
--- no_error_log
[error]



=== TEST 2: after a reload with both up (servers reordered), it still goes to b1
--- main_config eval: $::MainConfig
--- http_config eval
"upstream llm {
    kvroute zone=kv_reload:4m;
    server 127.0.0.1:\$TEST_NGINX_B2;
    server 127.0.0.1:\$TEST_NGINX_B1;
}
$::Backends"
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
[ ::chat_request(7, "c"), ::chat_request(7, "d"), ::chat_request(7, "e") ]
--- response_body eval
[ "b1\n", "b1\n", "b1\n" ]
--- response_headers_like eval
[ "X-Kvroute: overlap 127.0.0.1:\\d+", "X-Kvroute: overlap 127.0.0.1:\\d+",
  "X-Kvroute: overlap 127.0.0.1:\\d+" ]
--- no_error_log
[error]



=== TEST 3: a zone of another size starts empty
--- main_config eval: $::MainConfig
--- http_config eval
"upstream llm {
    kvroute zone=kv_reload:8m;
    server 127.0.0.1:\$TEST_NGINX_B2;
    server 127.0.0.1:\$TEST_NGINX_B1;
}
$::Backends"
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
::chat_request(7, "f")
--- response_headers_like
X-Kvroute: home 127.0.0.1:\d+
--- no_error_log
[error]



=== TEST 4: a client that gives up on a slow server: nginx closes the upstream
(its request was in flight there; TEST 5 finds the charge returned)
--- main_config eval: $::MainConfig
--- http_config eval
"upstream llm {
    kvroute zone=kv_reload:8m;
    server 127.0.0.1:\$TEST_NGINX_B3;
}
$::Backends"
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
::chat_request(8, "slow")
--- timeout: 0.3
--- abort
--- ignore_response
--- wait: 0.2
--- error_log eval
qr/client prematurely closed connection, so upstream connection is closed too.*request: "POST \/v1\/chat\/completions HTTP\/1\.1", upstream: "http:\/\/127\.0\.0\.1:$ENV{TEST_NGINX_B3}\/v1\/chat\/completions"/
--- no_error_log
[alert]



=== TEST 5: after the abort, nothing is in flight
--- main_config eval: $::MainConfig
--- http_config eval
"upstream llm {
    kvroute zone=kv_reload:8m;
    server 127.0.0.1:\$TEST_NGINX_B3;
}
$::Backends"
--- config eval: $::Config
--- request
GET /kvroute_status
--- response_body_like
kvroute_inflight_requests\{upstream="llm",server="127.0.0.1:\d+"\} 0\n(?:.*\n)*kvroute_decisions_total\{zone="kv_reload",reason="home"\} 2
--- no_error_log
[alert]
