# Prefix routing across several worker processes sharing one index.

use lib 't/lib';
use Test::Nginx::Socket 'no_plan';
use Kvroute::Bodies;

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_B1} = $port + 1;
$ENV{TEST_NGINX_B2} = $port + 2;
$ENV{TEST_NGINX_B3} = $port + 3;

our $HttpConfig = <<'_EOC_';
upstream llm {
    kvroute;
    server 127.0.0.1:$TEST_NGINX_B1;
    server 127.0.0.1:$TEST_NGINX_B2;
    server 127.0.0.1:$TEST_NGINX_B3;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "b1\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B2; location / { return 200 "b2\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B3; location / { return 200 "b3\n"; } }
_EOC_

master_on();
workers(2);
repeat_each(1);
no_shuffle();
run_tests();

__DATA__

=== TEST 1: one prefix, many connections, two workers: one home, then overlap
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm {
    kvroute mode=approx;
    server 127.0.0.1:$TEST_NGINX_B1;
    server 127.0.0.1:$TEST_NGINX_B2;
    server 127.0.0.1:$TEST_NGINX_B3;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "b1\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B2; location / { return 200 "b2\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B3; location / { return 200 "b3\n"; } }
--- config
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap/$kvroute_blocks";
}
location = /kvroute_status { kvroute_status; }
--- more_headers
Content-Type: application/json
--- request eval
[ (map { ::chat_request(1, "question $_") } 1 .. 20), ::status_request() ]
--- response_body_like eval
[ (map { qr/^b[123]\n$/ } 1 .. 20),
  qr/reason="overlap"\} 19\n.*reason="home"\} 1\n/s ]
--- no_error_log
[error]
[alert]



=== TEST 2: every request of a prefix reaches the same server
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config
location /v1/ { proxy_pass http://llm; }
location = /kvroute_status { kvroute_status; }
--- more_headers
Content-Type: application/json
--- request eval
[ (map { ::chat_request(2, "q$_") } 1 .. 10), ::status_request() ]
--- response_body_like eval
[ (map { qr/^b[123]\n$/ } 1 .. 10),
  qr/^(?=(?:.*kvroute_indexed_blocks\{[^}]*\} 0\n){2})(?!(?:.*kvroute_indexed_blocks\{[^}]*\} 0\n){3})/s ]
--- no_error_log
[error]



=== TEST 3: different prefixes partition across the servers
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config
location /v1/ { proxy_pass http://llm; }
location = /kvroute_status { kvroute_status; }
--- more_headers
Content-Type: application/json
--- request eval
[ (map { ::chat_request($_, "q") } 1 .. 12),
  (map { ::chat_request($_, "again") } 1 .. 12),
  ::status_request() ]
--- response_body_like eval
[ (map { qr/^b[123]\n$/ } 1 .. 24),
  qr/reason="overlap"\} 12\n.*reason="home"\} 12\n(?!.*kvroute_indexed_blocks\{[^}]*\} 0\n)/s ]
--- no_error_log
[error]



=== TEST 4: completions prompts route by prefix too; salt separates
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm {
    kvroute;
    server 127.0.0.1:$TEST_NGINX_B1;
    server 127.0.0.1:$TEST_NGINX_B2;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "b1\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B2; location / { return 200 "b2\n"; } }
--- config
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap";
}
--- more_headers
Content-Type: application/json
--- request eval
[ ::completions_request(4, "first"),
  ::completions_request(4, "second"),
  "POST /v1/chat/completions\n" . ::chat_body(4, "x", salt => "tenant-a"),
  "POST /v1/chat/completions\n" . ::chat_body(4, "y", salt => "tenant-b"),
  "POST /v1/chat/completions\n" . ::chat_body(4, "z", salt => "tenant-a") ]
--- response_headers_like eval
[ "X-Kvroute: home 0",
  "X-Kvroute: overlap [1-9][0-9]*",
  "X-Kvroute: home 0",
  "X-Kvroute: home 0",
  "X-Kvroute: overlap [1-9][0-9]*" ]
--- no_error_log
[error]



=== TEST 5: kvroute_capacity gives one server its own cache size (status and
the approximate model: 2 blocks there keep only a prompt's first 2)
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm {
    kvroute mode=approx capacity=1000 zone=kv_caps:1m;
    kvroute_capacity 127.0.0.1:$TEST_NGINX_B2 2;
    server 127.0.0.1:$TEST_NGINX_B2;
}
server { listen 127.0.0.1:$TEST_NGINX_B2; location / { return 200 "b2\n"; } }
--- config
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap/$kvroute_blocks";
}
location = /kvroute_status { kvroute_status; }
--- more_headers
Content-Type: application/json
--- request eval
[ "POST /v1/completions\n" . '{"model":"m","prompt":[' . CORE::join(',', 1 .. 80) . ']}',
  "POST /v1/completions\n" . '{"model":"m","prompt":[' . CORE::join(',', 1 .. 80) . ']}',
  ::status_request() ]
--- response_headers_like eval
[ "X-Kvroute: home 0/5", "X-Kvroute: overlap 2/5", "" ]
--- response_body_like eval
[ qr/^b2\n$/, qr/^b2\n$/,
  qr/kvroute_capacity_blocks\{upstream="llm",server="127.0.0.1:\d+"\} 2\n/ ]
--- no_error_log
[error]



=== TEST 6: policy=cost keeps each prefix where it is cached while loads
are even, and says why
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm {
    kvroute mode=approx policy=cost corun=4096 evict=4 capacity=4000
            zone=kv_cost:1m;
    server 127.0.0.1:$TEST_NGINX_B1;
    server 127.0.0.1:$TEST_NGINX_B2;
    server 127.0.0.1:$TEST_NGINX_B3;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "b1\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B2; location / { return 200 "b2\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B3; location / { return 200 "b3\n"; } }
--- config
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap";
}
location = /kvroute_status { kvroute_status; }
--- more_headers
Content-Type: application/json
--- request eval
[ (map { ::chat_request($_, "q") } 1 .. 6),
  (map { ::chat_request($_, "again") } 1 .. 6),
  ::status_request() ]
--- response_headers_like eval
[ ("X-Kvroute: home 0") x 6,
  ("X-Kvroute: overlap [1-9][0-9]*") x 6,
  "" ]
--- response_body_like eval
[ (map { qr/^b[123]\n$/ } 1 .. 12),
  qr/reason="overlap"\} 6\n.*reason="home"\} 6\n/s ]
--- no_error_log
[error]
