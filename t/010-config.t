# Configuration: nginx -t rejects bad values naming the parameter and why;
# valid forms work with and without the upstream zone.

use lib 't/lib';
use Test::Nginx::Socket 'no_plan';
use Kvroute::Bodies;

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_B1} = $port + 1;
$ENV{TEST_NGINX_B2} = $port + 2;

repeat_each(1);
no_shuffle();
run_tests();

__DATA__

=== TEST 1: unknown mode
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute mode=bogus; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "mode" value "bogus": expected approx, kv, round_robin or random



=== TEST 2: block size out of range
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute block_size=0; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "block_size" value "0": expected an integer from 1 to 4096



=== TEST 3: zone too small
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute zone=kv:4k; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log eval
qr/invalid "zone" size "4k": expected at least \d+k/



=== TEST 4: unknown policy
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute policy=fastest; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "policy" value "fastest": expected ttft, cost, kvroute or dynamo



=== TEST 5: unknown parameter
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute blocksize=16; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid parameter "blocksize=16"



=== TEST 6: not a number
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute capacity=lots; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "capacity" value "lots"



=== TEST 7: kvroute outside upstream
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
kvroute;
--- config
--- must_die
--- error_log
"kvroute" directive is not allowed here



=== TEST 8: duplicate kvroute
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute; kvroute; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
"kvroute" directive is duplicate



=== TEST 9: weight for balance_rel below 1
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute balance_rel=0.5; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "balance_rel" value "0.5"



=== TEST 10: every parameter, with the upstream zone
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm {
    zone llm 64k;
    kvroute mode=approx zone=kv_llm:2m block_size=16 capacity=585
            policy=dynamo overlap_weight=1.0 balance_abs=2 balance_rel=1.25
            max_body=2m text_chunk=64;
    server 127.0.0.1:$TEST_NGINX_B1;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "b1\n"; } }
--- config
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute-Reason $kvroute_reason;
}
--- more_headers
Content-Type: application/json
--- request eval
[ ::chat_request(1, "a"), ::chat_request(1, "b") ]
--- response_body eval
[ "b1\n", "b1\n" ]
--- response_headers eval
[ "X-Kvroute-Reason: cost", "X-Kvroute-Reason: cost" ]
--- no_error_log
[error]
[warn]



=== TEST 11: baselines through the same module
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream rr { kvroute mode=round_robin; server 127.0.0.1:$TEST_NGINX_B1; }
upstream rnd { kvroute mode=random; server 127.0.0.1:$TEST_NGINX_B1; }
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "b1\n"; } }
--- config
location /rr/ {
    proxy_pass http://rr/;
    add_header X-Kvroute-Reason $kvroute_reason;
}
location /rnd/ {
    proxy_pass http://rnd/;
    add_header X-Kvroute-Reason $kvroute_reason;
}
--- more_headers
Content-Type: application/json
--- request eval
[ "POST /rr/v1/completions\n" . ::completions_body(1, "x"),
  "POST /rnd/v1/completions\n" . ::completions_body(1, "x") ]
--- response_headers eval
[ "X-Kvroute-Reason: round-robin", "X-Kvroute-Reason: random" ]
--- no_error_log
[error]



=== TEST 12: mode=kv needs the events port
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute mode=kv; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
"mode=kv" needs "events_port"



=== TEST 13: events ports beyond 65535
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute mode=kv events_port=65530 events_ranks=8; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "events_ranks": ports beyond 65535



=== TEST 14: kvroute_events needs kvroute mode=kv before it
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute_events 127.0.0.1:8000 tcp://127.0.0.1:5557; kvroute mode=kv; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
"kvroute_events" directive needs "kvroute mode=kv ..." before it



=== TEST 15: kvroute_events wants a ZeroMQ endpoint
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute mode=kv; kvroute_events 127.0.0.1:8000 http://x:5557; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid endpoint "http://x:5557": expected tcp://... or ipc://...



=== TEST 16: kvroute_capacity wants blocks
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute capacity=585; kvroute_capacity 127.0.0.1:8000 half; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid capacity "half" for "127.0.0.1:8000": expected blocks from 1 to 1000000000



=== TEST 17: kvroute_capacity names a server once
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute; kvroute_capacity 127.0.0.1:8000 100; kvroute_capacity 127.0.0.1:8000 200; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
"kvroute_capacity" directive names a server twice



=== TEST 18: kvroute_capacity needs kvroute before it
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute_capacity 127.0.0.1:8000 100; kvroute; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
"kvroute_capacity" directive needs "kvroute ..." before it



=== TEST 19: spread wants a count of requests
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute spread=some; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "spread" value "some": expected an integer from 0 to 1000000



=== TEST 20: evict wants a non-negative weight
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute policy=cost evict=-1; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "evict" value "-1"



=== TEST 21: corun wants a number of tokens
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute policy=cost corun=lots; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "corun" value "lots"



=== TEST 22: kvroute_capacity naming no server of the upstream, with file:line
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
include ../html/capacity.conf;
--- user_files
>>> capacity.conf
upstream llm {
    kvroute capacity=585;
    server 127.0.0.1:8000;
    kvroute_capacity 127.0.0.1:8001 100;
}
--- config
--- must_die
--- error_log eval
qr/\[emerg\] .*"kvroute_capacity" names "127\.0\.0\.1:8001", which is not a server of upstream "llm" \(servers are named by address:port, as "127\.0\.0\.1:8000"\) in \S*\/html\/capacity\.conf:4$/



=== TEST 23: kvroute_events naming no server of the upstream, with file:line
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
include ../html/events.conf;
--- user_files
>>> events.conf
upstream llm {
    kvroute mode=kv events_port=5557;
    kvroute_events 127.0.0.1:9000 tcp://127.0.0.1:5558;
    server 127.0.0.1:8000;
    server 127.0.0.1:8001 backup;
}
--- config
--- must_die
--- error_log eval
qr/\[emerg\] .*"kvroute_events" names "127\.0\.0\.1:9000", which is not a server of upstream "llm" \(servers are named by address:port, as "127\.0\.0\.1:8000"\) in \S*\/html\/events\.conf:3$/



=== TEST 24: mode=kv without events: the kvroute line's file:line
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
include ../html/kv.conf;
--- user_files
>>> kv.conf
upstream llm {
    zone llm 64k;

    kvroute mode=kv;
    server 127.0.0.1:8000;
}
--- config
--- must_die
--- error_log eval
qr/\[emerg\] .*"mode=kv" needs "events_port" .* in upstream "llm" in \S*\/html\/kv\.conf:4$/



=== TEST 25: kvroute_capacity and kvroute_events naming a primary and a backup
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm {
    kvroute mode=kv events_port=+100 capacity=100;
    kvroute_capacity 127.0.0.1:$TEST_NGINX_B1 50;
    kvroute_events 127.0.0.1:$TEST_NGINX_B2 tcp://127.0.0.1:5999;
    server 127.0.0.1:$TEST_NGINX_B1;
    server 127.0.0.1:$TEST_NGINX_B2 backup;
    kvroute_capacity 127.0.0.1:$TEST_NGINX_B2 70;
}
--- config
location = /kvroute_status { kvroute_status; }
--- request
GET /kvroute_status
--- response_body_like eval
qr/^kvroute_capacity_blocks\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_B1}"\} 50\n(?:.*\n)*kvroute_capacity_blocks\{upstream="llm",server="127\.0\.0\.1:$ENV{TEST_NGINX_B2}",backup="1"\} 70\n/m
--- no_error_log
[error]
[emerg]



=== TEST 26: kvroute_events naming a server twice, with file:line
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
include ../html/twice.conf;
--- user_files
>>> twice.conf
upstream llm {
    kvroute mode=kv;
    kvroute_events 127.0.0.1:8000 tcp://127.0.0.1:5557;
    kvroute_events 127.0.0.1:8000 tcp://127.0.0.1:5558;
    server 127.0.0.1:8000;
}
--- config
--- must_die
--- error_log eval
qr/\[emerg\] .*"kvroute_events" directive names a server twice in \S*\/html\/twice\.conf:4$/



=== TEST 27: every kvroute parameter's error names its file:line
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
include ../html/params.conf;
--- user_files
>>> params.conf
upstream llm {

    kvroute block_size=16
            predict=lots;
    server 127.0.0.1:8000;
}
--- config
--- must_die
--- error_log eval
qr/\[emerg\] .*invalid "predict" value "lots": expected an integer from 0 to 1000000 in \S*\/html\/params\.conf:4$/



=== TEST 28: max_body wants a size
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute max_body=32; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "max_body" value "32": expected a size from 64 to 1g



=== TEST 29: a relative events port wants a number after "+"
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute mode=kv events_port=+x; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "events_port" value "+x": expected a port from 1 to 65535, or +N above each server's port



=== TEST 30: replay_port beyond 65535
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute mode=kv events_port=5557 replay_port=70000; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "replay_port" value "70000": expected a port from 1 to 65535



=== TEST 31: models wants at least one name
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute mode=kv events_port=5557 models=; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "models" value "": expected model names



=== TEST 32: a parameter without a value
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute approx; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid parameter "approx"



=== TEST 33: text_chunk from 1 byte
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream a { kvroute text_chunk=0; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "text_chunk" value "0": expected an integer from 1 to 1048576



=== TEST 34: events_ranks: a count from 1 to 32
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream a { kvroute mode=kv events_port=5557 events_ranks=33; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log eval
qr/\[emerg\] .*invalid "events_ranks" value "33": expected a count from 1 to 32, or ranks FIRST-LAST \(at most 32 of them, up to 65535\) in \S+nginx\.conf:\d+$/



=== TEST 35: overlap_weight is a plain decimal
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream a { kvroute policy=dynamo overlap_weight=1e3; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "overlap_weight" value "1e3": expected a number from 0.0 to 1000.0



=== TEST 36: policy=ttft and its weights
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm {
    kvroute policy=ttft ttft_decode=800 ttft_evict=1.5 ttft_wait=30000
            ttft_output=64 ttft_own=50;
    server 127.0.0.1:8000;
}
--- config
location = /t { return 200 "ok\n"; }
--- request
GET /t
--- response_body
ok
--- no_error_log
[emerg]



=== TEST 37: an unknown ttft_ parameter
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute ttft_speed=1; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid parameter "ttft_speed=1"



=== TEST 38: a ttft weight out of range
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute ttft_evict=2000; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log eval
qr/invalid "ttft_evict" value "2000"/



=== TEST 39: events_ranks=FIRST-LAST: the last before the first
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream a { kvroute mode=kv events_port=5557 events_ranks=3-1; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log eval
qr/\[emerg\] .*invalid "events_ranks" value "3-1": expected a count from 1 to 32, or ranks FIRST-LAST .* in \S+nginx\.conf:\d+$/



=== TEST 40: events_ranks=a-b: not numbers
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream a { kvroute mode=kv events_port=5557 events_ranks=a-b; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log eval
qr/\[emerg\] .*invalid "events_ranks" value "a-b": expected a count/



=== TEST 41: events_ranks=2-: an empty end
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream a { kvroute mode=kv events_port=5557 events_ranks=2-; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log eval
qr/\[emerg\] .*invalid "events_ranks" value "2-": expected a count/



=== TEST 42: events_ranks=8-40: 33 ranks
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream a { kvroute mode=kv events_port=5557 events_ranks=8-40; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log eval
qr/\[emerg\] .*invalid "events_ranks" value "8-40": expected a count/



=== TEST 43: events_ranks=0: zero
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream a { kvroute mode=kv events_port=5557 events_ranks=0; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log eval
qr/\[emerg\] .*invalid "events_ranks" value "0": expected a count/



=== TEST 44: events_ranks=K-M from a first rank above 0, ports from K
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream a { kvroute mode=kv events_port=65530 events_ranks=4-5; server 127.0.0.1:8000; }
upstream b { kvroute mode=kv events_port=65530 events_ranks=5-6 zone=b; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "events_ranks": ports beyond 65535



=== TEST 45: servers times ranks beyond the index's slots
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm {
    kvroute mode=kv events_port=5557 events_ranks=2-9;
    server 127.0.0.1:8001; server 127.0.0.1:8002; server 127.0.0.1:8003;
    server 127.0.0.1:8004; server 127.0.0.1:8005; server 127.0.0.1:8006;
    server 127.0.0.1:8007;
}
--- config
--- must_die
--- error_log eval
qr/\[emerg\] .*upstream "llm" needs 70 index slots \(7 servers, 10 each with "events_ranks" and predictions\), more than the 64 there are, in \S+nginx\.conf:\d+/



=== TEST 46: valid rank forms load
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream a { kvroute mode=kv events_port=5557 events_ranks=4; server 127.0.0.1:8000; }
upstream b { kvroute mode=kv events_port=5557 events_ranks=2-5 zone=b; server 127.0.0.1:8000; }
upstream c { kvroute mode=approx events_ranks=7-7 zone=c; server 127.0.0.1:8000; }
--- config
location /t { return 200 "ok\n"; }
--- request
GET /t
--- response_body
ok
--- no_error_log
[emerg]



=== TEST 47: ttft_decode=auto: learned from the requests
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute metrics=on ttft_decode=auto; server 127.0.0.1:8000; }
--- config
location = /t { return 200 "ok\n"; }
--- request
GET /t
--- response_body
ok
--- no_error_log
[emerg]



=== TEST 48: ttft_decode takes a number or auto, no other word
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute ttft_decode=Auto; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "ttft_decode" value "Auto": expected a number of prompt tokens or "auto"



=== TEST 49: ttft_decode: a number beyond its bounds is told as one
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute ttft_decode=2000000000; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log
invalid "ttft_decode" value "2000000000": expected a number from 0.0 to 1000000000.0
