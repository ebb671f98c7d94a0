# nginx's upstream semantics hold under kvroute: down, backup, max_fails,
# retries; and the in-flight counters return to zero whatever happens.

use lib 't/lib';
use Test::Nginx::Socket 'no_plan';
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';
use Kvroute::Bodies;

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_B1} = $port + 1;
$ENV{TEST_NGINX_B2} = $port + 2;
$ENV{TEST_NGINX_B3} = $port + 3;
$ENV{TEST_NGINX_DEAD} = $port + 9;

our $Backends = <<'_EOC_';
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "b1\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B2; location / { return 200 "b2\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B3; location / { return 200 "b3\n"; } }
_EOC_

our $Config = <<'_EOC_';
location /v1/ { proxy_pass http://llm; }
location = /kvroute_status { kvroute_status; }
_EOC_

our @Twelve = map { chat_request($_, "q") } 1 .. 12;

master_on();
workers(2);
check_accum_error_log();
repeat_each(1);
no_shuffle();
run_tests();

__DATA__

=== TEST 1: a down server gets nothing
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval
"upstream llm {
    kvroute;
    server 127.0.0.1:\$TEST_NGINX_B1 down;
    server 127.0.0.1:\$TEST_NGINX_B2;
    server 127.0.0.1:\$TEST_NGINX_B3;
}
$::Backends"
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Twelve ]
--- response_body_like eval
[ map { qr/^b[23]\n$/ } 1 .. 12 ]
--- no_error_log
[error]



=== TEST 2: backup serves only when every primary is down
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval
"upstream llm {
    kvroute;
    server 127.0.0.1:\$TEST_NGINX_B1 down;
    server 127.0.0.1:\$TEST_NGINX_B2 down;
    server 127.0.0.1:\$TEST_NGINX_B3 backup;
}
upstream llm2 {
    kvroute;
    server 127.0.0.1:\$TEST_NGINX_B1;
    server 127.0.0.1:\$TEST_NGINX_B3 backup;
}
$::Backends"
--- config
location /v1/ { proxy_pass http://llm; }
location /two/ { proxy_pass http://llm2/; }
--- more_headers
Content-Type: application/json
--- request eval
[ @::Twelve[0 .. 5],
  map { my $r = $_; $r =~ s{^POST /}{POST /two/}; $r } @::Twelve[0 .. 5] ]
--- response_body eval
[ (map { "b3\n" } 1 .. 6), (map { "b1\n" } 1 .. 6) ]
--- no_error_log
[error]



=== TEST 3: a refusing server is retried elsewhere and then avoided
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval
"upstream llm {
    zone llm 64k;
    kvroute;
    server 127.0.0.1:\$TEST_NGINX_DEAD max_fails=1 fail_timeout=30s;
    server 127.0.0.1:\$TEST_NGINX_B2;
    server 127.0.0.1:\$TEST_NGINX_B3;
}
$::Backends"
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Twelve, @::Twelve, "GET /kvroute_status" ]
--- response_body_like eval
[ (map { qr/^b[23]\n$/ } 1 .. 24),
  qr/kvroute_inflight_requests\{upstream="llm",server="127.0.0.1:\d+"\} 0\n.*kvroute_inflight_requests\{upstream="llm",server="127.0.0.1:\d+"\} 0\n.*kvroute_inflight_requests\{upstream="llm",server="127.0.0.1:\d+"\} 0\n/s ]
--- grep_error_log eval: qr/connect\(\) failed/
--- grep_error_log_out eval
[ (map { qr/\A(?:connect\(\) failed\n)?\z/ } 1 .. 24),
  "connect() failed\n" ]
--- no_error_log
[alert]
[emerg]



=== TEST 4: every server refusing: 502, counters back to zero
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval
"upstream llm {
    kvroute;
    server 127.0.0.1:\$TEST_NGINX_DEAD;
    server 127.0.0.2:\$TEST_NGINX_DEAD;
}
$::Backends"
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval: [ @::Twelve[0 .. 3], "GET /kvroute_status" ]
--- error_code eval: [ 502, 502, 502, 502, 200 ]
--- response_body_like eval
[ qr/./, qr/./, qr/./, qr/./,
  qr/\A(?!.*kvroute_inflight_\w+\{[^}]*\} [1-9]).*kvroute_decisions_total/s ]
--- no_error_log
[alert]



=== TEST 5: upstream timeouts and client aborts return the counters to zero
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config eval
"upstream llm {
    kvroute;
    server 127.0.0.1:\$TEST_NGINX_B1;
}
upstream slow {
    kvroute zone=kvroute_llm;
    server 127.0.0.1:\$TEST_NGINX_B2;
}
server {
    listen 127.0.0.1:\$TEST_NGINX_B1;
    location / { echo_sleep 1; echo late; }
}
server {
    listen 127.0.0.1:\$TEST_NGINX_B2;
    location / { echo_sleep 0.3; echo slow; }
}"
--- config
location /v1/ {
    proxy_pass http://llm;
    proxy_read_timeout 200ms;
}
location /slow/ { proxy_pass http://slow/; }
location = /kvroute_status { kvroute_status; }
--- more_headers
Content-Type: application/json
--- request eval
[ @::Twelve[0 .. 2],
  (map { my $r = $_; $r =~ s{^POST /}{POST /slow/}; $r } @::Twelve[0 .. 2]),
  "GET /kvroute_status" ]
--- error_code eval: [ 504, 504, 504, 200, 200, 200, 200 ]
--- response_body_like eval
[ qr/./, qr/./, qr/./, qr/slow/, qr/slow/, qr/slow/,
  qr/\A(?!.*kvroute_inflight_\w+\{[^}]*\} [1-9]).*kvroute_inflight_requests\{upstream="slow"[^}]*\} 0\n/s ]
--- error_log
upstream timed out
--- no_error_log
[alert]
