# mode=kv with data-parallel ranks (README "Data-parallel ranks"): an index
# slot per (server, rank); the balancer chooses the server and the rank
# holding the prompt, and $kvroute_dp_rank, sent with proxy_set_header
# X-data-parallel-rank, tells the engine which rank.  The upstreams echo the
# request headers they received.  A rank's AllBlocksCleared leaves the
# other ranks' blocks; ranks may start above 0; without ranks to choose
# from the header is omitted.  Each rank has its own kvroute_events_*
# counters on the status page (a rank="N" label): one rank's events move
# its own only.

use lib 't/lib';
use Test::Nginx::Socket;
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';
use JSON::PP ();
use POSIX ();

# block k: servers A and B at port + 500 + 10k and + 10k + 5 (clear of the
# low ports next to 1984: 2024 is a common development server's); rank r of
# a server publishes 100 + r above it (events_port=+100)
our $Port = $ENV{TEST_NGINX_PORT} || 1984;

if (! -d 'bench/node_modules/zeromq') {
    plan skip_all => 'bench/node_modules missing (make bench-deps)';
}

our @Publishers;
END {
    kill 'TERM', @Publishers if @Publishers;
    unlink glob "t/publisher-dp-$$-*";
}

sub server_port {
    my ($block, $server) = @_;
    return $Port + 500 + 10 * $block + ($server eq 'B' ? 5 : 0);
}

# one batch of events of a rank: [ts, events, dp_rank]
sub batch {
    my ($seq, $rank, @events) = @_;
    return { frames => [ { text => '' }, { seq => $seq },
                         { msgpack => [ 1.5, [ @events ], $rank ] } ] };
}

# vLLM's BlockStored of n blocks of tokens first, first + 1, ...
sub stored {
    my ($first, @hashes) = @_;
    my $n = @hashes;
    return {
        type => 'BlockStored',
        block_hashes => [ map { { u64 => $_ } } @hashes ],
        parent_block_hash => undef,
        token_ids => [ $first .. $first + 16 * $n - 1 ],
        block_size => 16,
        lora_id => undef,
        medium => 'GPU',
    };
}

# publishers: [ server, rank, messages... ] each; returns when all have
# sent theirs (kvroute's helper subscribed)
sub publish {
    my ($block, @streams) = @_;

    kill 'TERM', @Publishers;
    waitpid($_, 0) for @Publishers;
    @Publishers = ();

    my @outs;
    for my $s (@streams) {
        my ($server, $rank, @messages) = @$s;
        my $port = server_port($block, $server) + 100 + $rank;
        my $file = "t/publisher-dp-$$-$port.json";
        open my $fh, '>', $file or die;
        print $fh JSON::PP->new->encode(\@messages);
        close $fh;
        my $out = "t/publisher-dp-$$-$port.out";
        unlink $out;
        my $pid = fork();
        if ($pid == 0) {
            open STDOUT, '>', $out;
            exec('node', 't/lib/kv_publisher.js', "tcp://127.0.0.1:$port",
                 $file, 8000) or POSIX::_exit(127);
        }
        push @Publishers, $pid;
        push @outs, $out;
    }

    for (1 .. 100) {
        last unless grep { ! -s $_ } @outs;
        select(undef, undef, undef, 0.1);
    }
}

sub http_config {
    my ($block, $ranks, $servers) = @_;
    my $r = defined $ranks ? " events_ranks=$ranks" : '';
    my $c = "upstream llm {\n"
            . "    kvroute mode=kv events_port=+100$r predict=0"
            . " zone=kv_dp:4m;\n";
    for my $s (@$servers) {
        $c .= "    server 127.0.0.1:" . server_port($block, $s) . ";\n";
    }
    $c .= "}\n";
    for my $s (@$servers) {
        $c .= "server { listen 127.0.0.1:" . server_port($block, $s)
              . "; location / { echo $s; echo \$echo_client_request_headers; } }\n";
    }
    return $c;
}

sub removed {
    my (@hashes) = @_;
    return {
        type => 'BlockRemoved',
        block_hashes => [ map { { u64 => $_ } } @hashes ],
        medium => 'GPU',
    };
}

# the status page has each line given (exactly) and none of those unwanted
# (prefixes of lines)
sub status_like {
    my ($lines, $unwanted) = @_;
    my $re = join '', map { "(?=.*^\Q$_\E\n)" } @$lines;
    $re .= join '', map { "(?!.*^\Q$_\E)" } @{ $unwanted || [] };
    return qr/\A$re/ms;
}

# kvroute_events_* lines of server A of a block: { metric => value }
sub rank_lines {
    my ($block, $rank, %values) = @_;
    my $server = '127.0.0.1:' . server_port($block, 'A');
    return map {
        "kvroute_events_${_}{upstream=\"llm\",server=\"$server\","
        . "rank=\"$rank\"} $values{$_}"
    } sort keys %values;
}

sub prompt {
    my ($first, $n) = @_;
    return "POST /v1/completions\n" . JSON::PP->new->canonical->encode(
        { model => 'm', prompt => [ $first .. $first + $n - 1 ] });
}

# what the upstream received: its name and the rank header, or no header
sub sent {
    my ($server, $rank) = @_;
    return qr/^$server\n(?:(?!x-data-parallel-rank).)*$/si
        unless defined $rank;
    return qr/^$server\n.*\nX-data-parallel-rank: $rank\r\n/s;
}

our $Config = <<'_EOC_';
location /v1/ {
    proxy_pass http://llm;
    proxy_set_header X-data-parallel-rank $kvroute_dp_rank;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap/$kvroute_blocks rank=$kvroute_dp_rank";
}
location = /wait { echo_sleep 3.5; echo ok; }
location = /kvroute_status { kvroute_status; }
_EOC_

our $MainConfig = <<'_EOC_';
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
_EOC_

master_on();
workers(2);
repeat_each(1);
plan 'no_plan';
no_shuffle();
run_tests();

__DATA__

=== TEST 1: a server with 2 ranks: the hit goes to the rank holding the
prompt, and the upstream receives its rank; not an inference request: no
header
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(1, 2, [ 'A' ])
--- config eval: $::Config
--- init
main::publish(1,
    [ 'A', 0, main::batch(0, 0, main::stored(3000, 11, 12)) ],
    [ 'A', 1, main::batch(0, 1, main::stored(4000, 21, 22),
                                main::stored(5000, 31)) ]);
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(4000, 32), main::prompt(3000, 32),
  main::prompt(5000, 16), "GET /v1/models" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 2/2 rank=1", "X-Kvroute: overlap 2/2 rank=0",
  "X-Kvroute: overlap 1/1 rank=1", "X-Kvroute: not-inference 0/0 rank=" ]
--- response_body_like eval
[ qr/ok/, main::sent('A', 1), main::sent('A', 0), main::sent('A', 1),
  main::sent('A') ]
--- no_error_log
[error]
[alert]



=== TEST 2: rank 0's AllBlocksCleared leaves rank 1's blocks (a slot each);
what rank 0 stores after it is rank 0's
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(2, 2, [ 'A' ])
--- config eval: $::Config
--- init
main::publish(2,
    [ 'A', 0, main::batch(0, 0, main::stored(3000, 11, 12)),
              main::batch(1, 0, [ 'AllBlocksCleared' ]),
              main::batch(2, 0, main::stored(4000, 41)) ],
    [ 'A', 1, main::batch(0, 1, main::stored(3000, 21)) ]);
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 32), main::prompt(4000, 16) ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 1/2 rank=1", "X-Kvroute: overlap 1/1 rank=0" ]
--- response_body_like eval
[ qr/ok/, main::sent('A', 1), main::sent('A', 0) ]
--- no_error_log
[error]
[alert]



=== TEST 3: ranks from 2 (events_ranks=2-3): events on ports +102 and +103,
the header the rank's index among the server's (vLLM's API server with
--data-parallel-start-rank counts its engines from 0)
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(3, '2-3', [ 'A' ])
--- config eval: $::Config
--- init
main::publish(3,
    [ 'A', 2, main::batch(0, 2, main::stored(3000, 11)) ],
    [ 'A', 3, main::batch(0, 3, main::stored(4000, 21, 22)) ]);
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(4000, 32), main::prompt(3000, 16) ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 2/2 rank=1", "X-Kvroute: overlap 1/1 rank=0" ]
--- response_body_like eval
[ qr/ok/, main::sent('A', 1), main::sent('A', 0) ]
--- no_error_log
[error]
[alert]



=== TEST 4: two servers of 2 ranks: the server and the rank holding each
prompt
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(4, 2, [ 'A', 'B' ])
--- config eval: $::Config
--- init
main::publish(4,
    [ 'A', 0, main::batch(0, 0, main::stored(3000, 11, 12)) ],
    [ 'A', 1, main::batch(0, 1, main::stored(6000, 13)) ],
    [ 'B', 0, main::batch(0, 0, main::stored(5000, 14)) ],
    [ 'B', 1, main::batch(0, 1, main::stored(4000, 21, 22)) ]);
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(4000, 32), main::prompt(3000, 32),
  main::prompt(5000, 16), main::prompt(6000, 16) ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 2/2 rank=1", "X-Kvroute: overlap 2/2 rank=0",
  "X-Kvroute: overlap 1/1 rank=0", "X-Kvroute: overlap 1/1 rank=1" ]
--- response_body_like eval
[ qr/ok/, main::sent('B', 1), main::sent('A', 0), main::sent('B', 0),
  main::sent('A', 1) ]
--- no_error_log
[error]
[alert]



=== TEST 5: no ranks to choose from (events_ranks absent): the header is
omitted, $kvroute_dp_rank empty
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(5, undef, [ 'A' ])
--- config eval: $::Config
--- init
main::publish(5,
    [ 'A', 0, main::batch(0, 0, main::stored(3000, 11)) ]);
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 16) ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 1/1 rank=" ]
--- response_body_like eval
[ qr/ok/, main::sent('A') ]
--- no_error_log
[error]
[alert]



=== TEST 6: per-rank counters: rank 0 stores 2 blocks and removes 1, rank 1
publishes nothing; rank 0's kvroute_events_* move, rank 1's stay at 0 (and
it is stale: its stream never started), each line labelled with its rank;
no line of the server without a rank; its index lines sum the ranks
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(6, 2, [ 'A' ])
--- config eval: $::Config
--- init
main::publish(6,
    [ 'A', 0, main::batch(0, 0, main::stored(3000, 11, 12)),
              main::batch(1, 0, main::removed(12)) ]);
--- timeout: 8
--- request eval
[ "GET /wait", "GET /kvroute_status" ]
--- response_body_like eval
[ qr/ok/, main::status_like(
    [ main::rank_lines(6, 0, messages_total => 2, batches_total => 2,
                       stored_blocks_total => 2, removed_blocks_total => 1,
                       stale => 0, dropped_total => 0),
      main::rank_lines(6, 1, messages_total => 0, batches_total => 0,
                       stored_blocks_total => 0, removed_blocks_total => 0,
                       stale => 1, connects_total => 0),
      'kvroute_indexed_blocks{upstream="llm",server="127.0.0.1:'
      . main::server_port(6, 'A') . '"} 1' ],
    [ 'kvroute_events_messages_total{upstream="llm",server="127.0.0.1:'
      . main::server_port(6, 'A') . '"}' ]) ]
--- no_error_log
[error]
[alert]



=== TEST 7: ranks from 2 (events_ranks=2-3): the labels are the ranks as
the engine numbers them (events_port + rank); rank 3's events move its
counters only
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(7, '2-3', [ 'A' ])
--- config eval: $::Config
--- init
main::publish(7,
    [ 'A', 3, main::batch(0, 3, main::stored(4000, 21, 22, 23)) ]);
--- timeout: 8
--- request eval
[ "GET /wait", "GET /kvroute_status" ]
--- response_body_like eval
[ qr/ok/, main::status_like(
    [ main::rank_lines(7, 3, messages_total => 1, batches_total => 1,
                       stored_blocks_total => 3, stale => 0),
      main::rank_lines(7, 2, messages_total => 0, batches_total => 0,
                       stored_blocks_total => 0, stale => 1) ],
    [ 'kvroute_events_messages_total{upstream="llm",server="127.0.0.1:'
      . main::server_port(7, 'A') . '",rank="0"}' ]) ]
--- no_error_log
[error]
[alert]
