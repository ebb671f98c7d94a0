# Bad or unexpected input never fails a request: it balances as nginx
# would, says why in $kvroute_reason, and logs without flooding.

use lib 't/lib';
use Test::Nginx::Socket 'no_plan';
use Kvroute::Bodies;

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_B1} = $port + 1;
$ENV{TEST_NGINX_B2} = $port + 2;

our $HttpConfig = <<'_EOC_';
upstream llm {
    kvroute max_body=64k;
    server 127.0.0.1:$TEST_NGINX_B1;
    server 127.0.0.1:$TEST_NGINX_B2;
}
server {
    listen 127.0.0.1:$TEST_NGINX_B1;
    location / { return 200 "ok\n"; }
}
server {
    listen 127.0.0.1:$TEST_NGINX_B2;
    location / { return 200 "ok\n"; }
}
_EOC_

our $Config = <<'_EOC_';
location / {
    proxy_pass http://llm;
    add_header X-Kvroute-Reason $kvroute_reason;
}
_EOC_

no_root_location();
check_accum_error_log();
repeat_each(1);
no_shuffle();
run_tests();

__DATA__

=== TEST 1: not JSON
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request
POST /v1/chat/completions
hello, this is not json
--- response_body
ok
--- response_headers
X-Kvroute-Reason: not-json
--- error_log
kvroute: balancing without prefix (not-json)
--- no_error_log
[error]



=== TEST 2: truncated JSON
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
"POST /v1/chat/completions\n" . substr(::chat_body(1, "q"), 0, 200)
--- response_body
ok
--- response_headers
X-Kvroute-Reason: not-json
--- no_error_log
[error]



=== TEST 3: invalid UTF-8 inside a string
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
"POST /v1/completions\n{\"model\":\"m\",\"prompt\":\"abc\xff\xfe def\"}"
--- response_body
ok
--- response_headers
X-Kvroute-Reason: invalid-utf8
--- no_error_log
[error]



=== TEST 4: wrong content type
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: text/plain
--- request eval
"POST /v1/chat/completions\n" . ::chat_body(1, "q")
--- response_body
ok
--- response_headers
X-Kvroute-Reason: content-type
--- no_error_log
[error]



=== TEST 5: empty prompt, missing prompt, top-level array, wrong prompt type
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
[ "POST /v1/completions\n{\"model\":\"m\",\"prompt\":\"\"}",
  "POST /v1/completions\n{\"model\":\"m\"}",
  "POST /v1/chat/completions\n[{\"role\":\"user\"}]",
  "POST /v1/completions\n{\"prompt\":{\"a\":1}}",
  "POST /v1/chat/completions\n{\"messages\":[]}" ]
--- response_body eval
[ "ok\n", "ok\n", "ok\n", "ok\n", "ok\n" ]
--- response_headers eval
[ "X-Kvroute-Reason: empty-prompt",
  "X-Kvroute-Reason: no-prompt",
  "X-Kvroute-Reason: not-object",
  "X-Kvroute-Reason: no-prompt",
  "X-Kvroute-Reason: empty-prompt" ]
--- no_error_log
[error]



=== TEST 6: deeply nested JSON
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
"POST /v1/completions\n{\"prompt\":" . ("[" x 20000) . ("]" x 20000) . "}"
--- response_body
ok
--- response_headers
X-Kvroute-Reason: not-json
--- no_error_log
[error]



=== TEST 7: body over the cap
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
"POST /v1/chat/completions\n" . ::chat_body(1, "q", words => 20000)
--- response_body
ok
--- response_headers
X-Kvroute-Reason: too-large
--- error_log
kvroute: balancing without prefix (too-large)
--- no_error_log
[error]



=== TEST 8: unknown fields are ignored, the prompt still routes
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
"POST /v1/completions\n{\"future_field\":{\"x\":[1,2,3]},\"prompt\":\""
    . ::prefix_text(3) . "\",\"n\":1,\"logit_bias\":null}"
--- response_body
ok
--- response_headers
X-Kvroute-Reason: home
--- no_error_log
[error]



=== TEST 9: GET and other paths pass untouched
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- request eval
[ "GET /v1/models", "POST /v1/embeddings\n{\"input\":\"x\"}",
  "GET /v1/chat/completions" ]
--- response_body eval
[ "ok\n", "ok\n", "ok\n" ]
--- response_headers eval
[ "X-Kvroute-Reason: not-inference",
  "X-Kvroute-Reason: not-inference",
  "X-Kvroute-Reason: not-inference" ]
--- no_error_log
[error]
kvroute: balancing



=== TEST 10: a flood of bad bodies logs at most one line a second
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
[ map { "POST /v1/completions\n{not json $_" } 1 .. 40 ]
--- response_body eval
[ map { "ok\n" } 1 .. 40 ]
--- grep_error_log eval: qr/balancing without prefix \(not-json\)/
--- grep_error_log_out eval
qr/\A(?:balancing without prefix \(not-json\)\n){1,10}\z/
--- no_error_log
[error]



=== TEST 11: a prompt shorter than one block
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request
POST /v1/completions
{"prompt":"hi"}
--- response_body
ok
--- response_headers
X-Kvroute-Reason: short
--- no_error_log
[error]
