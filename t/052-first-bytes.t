# The prefill a request charges to its server is taken back when the
# upstream's first response bytes arrive (a stream's first token), not when
# the request ends.  The backend looks at the front's status page itself:
# before it writes anything, then after its first bytes while the request
# is still in flight; a last request reads it once the request has ended.
# Streaming needs proxy_buffering off (conf/vllm.conf): with it on, nginx
# passes a response on in whole buffers, so the release comes later.

use lib 't/lib';
use Test::Nginx::Socket 'no_plan';

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_B1} = $port + 1;
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';

# 400 bytes of text: 100 tokens at 16 a block and 64 bytes a chunk
our $Body = '{"model":"m","stream":true,"max_tokens":8,"prompt":"'
    . ('abcd' x 100) . '"}';

our $Server = 'upstream="llm",server="127.0.0.1:' . $ENV{TEST_NGINX_B1} . '"';

sub figures {
    my ($requests, $prompt, $prefill) = @_;
    return "kvroute_inflight_requests\\{\Q$Server\E\\} $requests\\n"
         . "kvroute_inflight_prompt_tokens\\{\Q$Server\E\\} $prompt\\n"
         . "kvroute_inflight_prefill_tokens\\{\Q$Server\E\\} $prefill\\n";
}

our $During = figures(1, 100, 100) . '.*data: first\n.*'
    . figures(1, 100, 0) . '.*data: \[DONE\]';

our $After = figures(0, 0, 0);

no_shuffle();
run_tests();

__DATA__

=== TEST 1: prefill counted until the first bytes, the request until its end
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config
upstream llm {
    kvroute mode=approx policy=ttft capacity=1000;
    server 127.0.0.1:$TEST_NGINX_B1;
}
server {
    listen 127.0.0.1:$TEST_NGINX_B1;
    location / {
        echo_location /peek;
        echo "data: first";
        echo_flush;
        echo_sleep 0.3;
        echo_location /peek;
        echo "data: [DONE]";
    }
    location = /peek {
        proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/kvroute_status;
    }
}
--- config
location /v1/ {
    proxy_pass http://llm;
    proxy_buffering off;
}
location = /kvroute_status { kvroute_status; }
--- more_headers
Content-Type: application/json
--- request eval
[ "POST /v1/completions\n$::Body", "GET /kvroute_status" ]
--- response_body_like eval
[ qr/$::During/s, qr/$::After/s ]
--- no_error_log
[error]
[alert]
