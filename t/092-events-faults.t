# mode=kv against a scripted publisher: malformed messages are dropped and
# counted, valid ones around them still apply; a sequence gap drops what
# the index held for the server, which then rebuilds from new events.

use lib 't/lib';
use Test::Nginx::Socket;
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';
use JSON::PP ();
use POSIX ();

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_B1} = $port + 51;
my $events = "tcp://127.0.0.1:" . ($port + 151);
my $replay = "tcp://127.0.0.1:" . ($port + 251);

if (! -d 'bench/node_modules/zeromq') {
    plan skip_all => 'bench/node_modules missing (make bench-deps)';
}

our @Publishers;
END { kill 'TERM', @Publishers if @Publishers }

sub store {
    my ($seq, $hash, $parent, $first) = @_;
    return { frames => [ { text => '' }, { seq => $seq },
        { msgpack => [ 1.5, [ [ 'BlockStored', [ { u64 => $hash } ],
                                defined $parent ? { u64 => $parent } : undef,
                                [ $first .. $first + 15 ], 16, undef ] ] ] } ] };
}

# sends the messages once kvroute's helper has subscribed; returns then
sub publish {
    my @messages = @_;

    # one publisher at a time on the port
    kill 'TERM', @Publishers;
    waitpid($_, 0) for @Publishers;
    @Publishers = ();

    my $file = "t/publisher-$$.json";
    open my $fh, '>', $file or die;
    print $fh JSON::PP->new->encode(\@messages);
    close $fh;
    my $out = "t/publisher-$$.out";
    unlink $out;
    my $pid = fork();
    if ($pid == 0) {
        open STDOUT, '>', $out;
        exec('node', 't/lib/kv_publisher.js', $events, $file, 8000, $replay)
            or POSIX::_exit(127);
    }
    push @Publishers, $pid;

    # the publisher sends once kvroute's helper has subscribed (XPUB)
    for (1 .. 100) {
        last if -s $out;
        select(undef, undef, undef, 0.1);
    }
}

sub removed {
    my ($seq, @hashes) = @_;
    return { frames => [ { text => '' }, { seq => $seq },
        { msgpack => [ 1.5, [ [ 'BlockRemoved',
                                [ map { { u64 => $_ } } @hashes ] ] ] ] } ] };
}

sub cleared {
    my ($seq) = @_;
    return { frames => [ { text => '' }, { seq => $seq },
        { msgpack => [ 1.5, [ [ 'AllBlocksCleared' ] ] ] } ] };
}

sub prompt {
    my ($first, $n) = @_;
    return "POST /v1/completions\n" . JSON::PP->new->encode(
        { model => 'm', prompt => [ $first .. $first + $n - 1 ] });
}

our $HttpConfig = <<'_EOC_';
upstream llm {
    kvroute mode=kv events_port=+100 zone=kv_faults:4m;
    server 127.0.0.1:$TEST_NGINX_B1;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "ok\n"; } }
_EOC_

# predictions of 4 blocks, or the server's 1000 while its index is stale
our $StaleConfig = <<'_EOC_';
upstream llm {
    kvroute mode=kv events_port=+100 predict=4 capacity=1000
            zone=kv_faults:4m;
    server 127.0.0.1:$TEST_NGINX_B1;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "ok\n"; } }
_EOC_

our $Config = <<'_EOC_';
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap/$kvroute_blocks";
}
location = /kvroute_status { kvroute_status; }
location = /wait { echo_sleep 3.5; echo ok; }
_EOC_

master_on();
workers(2);
repeat_each(1);
plan 'no_plan';
no_shuffle();
run_tests();

__DATA__

=== TEST 1: malformed messages (2, 3 and 8 frames, bad sequence, bad msgpack,
wrong shape) are dropped and counted, the valid ones apply
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- init
main::publish(
    { frames => [ { text => '' }, { seq => 0 } ] },
    { frames => [ { text => '' }, { hex => '00000000000000' },
                  { msgpack => [ 1, [] ] } ] },
    { frames => [ { text => '' }, { seq => 0 }, { hex => 'c1c1c1' } ] },
    { frames => [ { text => '' }, { seq => 0 }, { msgpack => { x => 1 } } ] },
    { frames => [ { text => '' }, { seq => 0 }, map { { text => "f$_" } } 1 .. 6 ] },
    main::store(0, 11, undef, 3000),
    main::store(1, 12, 11, 3016));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 32), "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 2/2", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/,
  qr/kvroute_events_dropped_total\{[^}]*\} 5\n(?:.*\n)*kvroute_events_stored_blocks_total\{[^}]*\} 2\n(?:.*\n)*kvroute_events_stale\{[^}]*\} 0\n/ ]
--- no_error_log
[error]
[alert]



=== TEST 2: a gap drops what the index held; later events rebuild it; stale
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- init
main::publish(
    main::store(0, 11, undef, 3000),
    main::store(1, 12, 11, 3016),
    main::store(5, 21, undef, 4000));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 32), main::prompt(4000, 16),
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: home 0/2", "X-Kvroute: overlap 1/1", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/, qr/ok/,
  qr/kvroute_events_gaps_total\{[^}]*\} 1\n(?:.*\n)*kvroute_events_stale\{[^}]*\} 1\n/ ]
--- no_error_log
[error]
[alert]



=== TEST 3: before any event, a burst follows its first request (prediction)
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config
upstream llm {
    kvroute mode=kv events_port=+100 zone=kv_faults:4m;
    server 127.0.0.1:$TEST_NGINX_B1;
    server 127.0.0.2:$TEST_NGINX_B1;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "ok\n"; } }
server { listen 127.0.0.2:$TEST_NGINX_B1; location / { return 200 "ok\n"; } }
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ main::prompt(6000, 64), main::prompt(6000, 64), main::prompt(6000, 80) ]
--- response_headers_like eval
[ "X-Kvroute: home 0/4", "X-Kvroute: overlap 4/4", "X-Kvroute: overlap 4/5" ]
--- no_error_log
[error]



=== TEST 4: predict=0: no predictions, every request of the burst is new
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config
upstream llm {
    kvroute mode=kv events_port=+100 predict=0 zone=kv_faults:4m;
    server 127.0.0.1:$TEST_NGINX_B1;
    server 127.0.0.2:$TEST_NGINX_B1;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "ok\n"; } }
server { listen 127.0.0.2:$TEST_NGINX_B1; location / { return 200 "ok\n"; } }
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ main::prompt(6000, 64), main::prompt(6000, 64) ]
--- response_headers_like eval
[ "X-Kvroute: home 0/4", "X-Kvroute: home 0/4" ]
--- no_error_log
[error]



=== TEST 5: the publisher restarts (its sequence goes back to 0): a restart,
the index is complete again (not stale)
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- init
main::publish(
    main::store(0, 11, undef, 3000),
    main::store(1, 12, 11, 3016),
    main::store(0, 31, undef, 5000));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 32), main::prompt(5000, 16),
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: home 0/2", "X-Kvroute: overlap 1/1", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/, qr/ok/,
  qr/kvroute_events_gaps_total\{[^}]*\} 1\n(?:.*\n)*kvroute_events_stale\{[^}]*\} 0\n/ ]
--- no_error_log
[error]



=== TEST 6: BlockRemoved takes a block out (its chain's tail first, as vLLM evicts)
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- init
main::publish(
    main::store(0, 11, undef, 3000),
    main::store(1, 12, 11, 3016),
    main::store(2, 13, 12, 3032),
    main::removed(3, 13),
    main::removed(4, 12));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 48), "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 1/3", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/, qr/kvroute_events_removed_blocks_total\{[^}]*\} 2\n/ ]
--- no_error_log
[error]



=== TEST 7: a gap with a replay socket: what was missed is asked and applied,
and the index, rebuilt from sequence 0, is complete
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config
upstream llm {
    kvroute mode=kv events_port=+100 replay_port=+200 predict=0
            zone=kv_faults:4m;
    server 127.0.0.1:$TEST_NGINX_B1;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "ok\n"; } }
--- config eval: $::Config
--- init
main::publish(
    main::store(0, 11, undef, 3000),
    { %{ main::store(1, 12, 11, 3016) }, replay_only => JSON::PP::true },
    main::store(2, 13, 12, 3032));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 48), "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 3/3", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/,
  qr/kvroute_events_gaps_total\{[^}]*\} 1\n(?:.*\n)*kvroute_events_replays_total\{[^}]*\} [2-9]\n(?:.*\n)*kvroute_events_replayed_batches_total\{[^}]*\} [1-9]\d*\n(?:.*\n)*kvroute_events_stale\{[^}]*\} 0\n(?:.*\n)*kvroute_events_connects_total\{[^}]*\} [1-9]\n/ ]
--- no_error_log
[error]



=== TEST 8: joining a stream late (first sequence 7): the index is stale and
predictions stand in with the server's capacity (here 1000 blocks, not 4)
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config eval: $::StaleConfig
--- config eval: $::Config
--- init
main::publish(main::store(7, 11, undef, 3000));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(7000, 64), main::prompt(8000, 64),
  main::prompt(7000, 64), "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: home 0/4", "X-Kvroute: home 0/4", "X-Kvroute: overlap 4/4",
  "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/, qr/ok/, qr/ok/,
  qr/kvroute_events_stale\{[^}]*\} 1\n/ ]
--- no_error_log
[error]



=== TEST 9: the same from sequence 0: complete, predictions stay short (4
blocks: the second prompt's replace the first's)
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config eval: $::StaleConfig
--- config eval: $::Config
--- init
main::publish(main::store(0, 11, undef, 3000));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(7000, 64), main::prompt(8000, 64),
  main::prompt(7000, 64), "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: home 0/4", "X-Kvroute: home 0/4", "X-Kvroute: home 0/4",
  "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/, qr/ok/, qr/ok/,
  qr/kvroute_events_stale\{[^}]*\} 0\n/ ]
--- no_error_log
[error]



=== TEST 10: AllBlocksCleared makes a stale index complete again
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- init
main::publish(
    main::store(7, 11, undef, 3000),
    main::cleared(8),
    main::store(9, 21, undef, 4000));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(4000, 16), "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 1/1", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/,
  qr/kvroute_events_cleared_total\{[^}]*\} 1\n(?:.*\n)*kvroute_events_stale\{[^}]*\} 0\n(?:.*\n)*kvroute_events_stale_total\{[^}]*\} 1\n/ ]
--- no_error_log
[error]
