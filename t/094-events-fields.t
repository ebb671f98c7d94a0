# mode=kv against a scripted publisher sending the fields real engines
# send (kv-events.md 2.3, README "KV events"): only the GPU tier's
# full-attention group is the routing index; re-announced blocks hold no
# extra reference; cache_salt, LoRA and multimodal extra keys never give
# false hits; SGLang's EAGLE bigram token ids; a rejected batch does not
# advance the sequence; a gap keeps the index and is replayed, in pages
# when the engine's ROUTER drops replies, never in a loop.

use lib 't/lib';
use Test::Nginx::Socket;
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';
use JSON::PP ();
use POSIX ();

# each block its own server port (publishers 100 and 200 above it), so
# that no block's helper hears the previous block's publisher
our $Port = $ENV{TEST_NGINX_PORT} || 1984;
our $Replays = "t/publisher-replays-$$.log";

if (! -d 'bench/node_modules/zeromq') {
    plan skip_all => 'bench/node_modules missing (make bench-deps)';
}

our @Publishers;
END {
    kill 'TERM', @Publishers if @Publishers;
    unlink "t/publisher-$$.json", "t/publisher-$$.out", $Replays;
}

# one batch of events: [ts, events, dp_rank]
sub batch {
    my ($seq, @events) = @_;
    return { frames => [ { text => '' }, { seq => $seq },
                         { msgpack => [ 1.5, [ @events ], 0 ] } ] };
}

# vLLM's BlockStored, map era, every field (block_size 16)
sub stored {
    my (%o) = @_;
    my $n = @{ $o{hashes} };
    my %ev = (
        type => 'BlockStored',
        block_hashes => [ map { { u64 => $_ } } @{ $o{hashes} } ],
        parent_block_hash => defined $o{parent} ? { u64 => $o{parent} }
                                                : undef,
        token_ids => [ $o{first} .. $o{first} + 16 * $n - 1 ],
        block_size => 16,
        lora_id => undef,
        medium => exists $o{medium} ? $o{medium} : 'GPU',
        lora_name => $o{lora},
        extra_keys => $o{extra} || [ map { undef } 1 .. $n ],
        group_idx => defined $o{group} ? $o{group} : 0,
        kv_cache_spec_kind => $o{kind} || 'full_attention',
    );
    return \%ev;
}

sub removed {
    my (%o) = @_;
    my %ev = (
        type => 'BlockRemoved',
        block_hashes => [ map { { u64 => $_ } } @{ $o{hashes} } ],
        medium => exists $o{medium} ? $o{medium} : 'GPU',
    );
    $ev{group_idx} = $o{group} if defined $o{group};
    return \%ev;
}

sub server_port {
    my ($block) = @_;
    return $Port + 60 + $block;
}

sub http_config {
    my ($block, $replay, $more) = @_;
    my $b = server_port($block);
    my $r = $replay ? ' replay_port=+200' : '';
    $r .= " $more" if defined $more;
    return "upstream llm {\n"
           . "    kvroute mode=kv events_port=+100$r predict=0"
           . " zone=kv_fields:4m;\n"
           . "    server 127.0.0.1:$b;\n}\n"
           . "server { listen 127.0.0.1:$b; location / { return 200 \"ok\\n\"; } }\n";
}

# block's publisher: sends the messages once kvroute's helper has
# subscribed; returns then
sub publish {
    my ($block, @messages) = @_;
    my $events = "tcp://127.0.0.1:" . (server_port($block) + 100);
    my $replay = "tcp://127.0.0.1:" . (server_port($block) + 200);

    kill 'TERM', @Publishers;
    waitpid($_, 0) for @Publishers;
    @Publishers = ();
    unlink $Replays;

    my $file = "t/publisher-$$.json";
    open my $fh, '>', $file or die;
    print $fh JSON::PP->new->encode(\@messages);
    close $fh;
    my $out = "t/publisher-$$.out";
    unlink $out;
    my $pid = fork();
    if ($pid == 0) {
        open STDOUT, '>', $out;
        $ENV{KV_PUBLISHER_REPLAYS} = $Replays;
        exec('node', 't/lib/kv_publisher.js', $events, $file, 8000, $replay)
            or POSIX::_exit(127);
    }
    push @Publishers, $pid;

    for (1 .. 100) {
        last if -s $out;
        select(undef, undef, undef, 0.1);
    }
}

# one more publisher, for data-parallel rank $rank (port + rank), no replay
sub publish_rank {
    my ($block, $rank, @messages) = @_;
    my $events = "tcp://127.0.0.1:" . (server_port($block) + 100 + $rank);

    my $file = "t/publisher-$$-$rank.json";
    open my $fh, '>', $file or die;
    print $fh JSON::PP->new->encode(\@messages);
    close $fh;
    my $out = "t/publisher-$$-$rank.out";
    unlink $out;
    my $pid = fork();
    if ($pid == 0) {
        open STDOUT, '>', $out;
        exec('node', 't/lib/kv_publisher.js', $events, $file, 8000)
            or POSIX::_exit(127);
    }
    push @Publishers, $pid;

    for (1 .. 100) {
        last if -s $out;
        select(undef, undef, undef, 0.1);
    }

    unlink $file, $out;
}

sub replays {
    open my $fh, '<', $Replays or return '';
    local $/;
    return <$fh>;
}

sub prompt {
    my ($first, $n, %extra) = @_;
    $extra{model} //= 'm';
    return "POST /v1/completions\n" . JSON::PP->new->canonical->encode(
        { prompt => [ $first .. $first + $n - 1 ], %extra });
}

our $Config = <<'_EOC_';
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap/$kvroute_blocks";
}
location = /kvroute_status { kvroute_status; }
location = /wait { echo_sleep 3.5; echo ok; }
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

=== TEST 1: offload tiers: CPU and DISK stores and removals never touch the
GPU index (a CPU removal of a block still on the GPU keeps it)
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(1, 0)
--- config eval: $::Config
--- init
main::publish(1,
    main::batch(0, main::stored(hashes => [ 11, 12 ], first => 3000)),
    main::batch(1, main::stored(hashes => [ 21 ], first => 4000,
                                medium => 'CPU')),
    main::batch(2, main::removed(hashes => [ 12 ], medium => 'CPU'),
                   main::removed(hashes => [ 11 ], medium => 'DISK')));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 32), main::prompt(4000, 16),
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 2/2", "X-Kvroute: home 0/1", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/, qr/ok/,
  qr/kvroute_events_stored_blocks_total\{[^}]*\} 2\n(?:.*\n)*kvroute_events_offloaded_blocks_total\{[^}]*\} 3\n/ ]
--- no_error_log
[error]
[alert]



=== TEST 2: kv_cache_report_mode="full": blocks re-announced from block 0
hold no extra reference; one removal takes the block out
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(2, 0)
--- config eval: $::Config
--- init
main::publish(2,
    main::batch(0, main::stored(hashes => [ 11, 12 ], first => 3000)),
    main::batch(1, main::stored(hashes => [ 11, 12 ], first => 3000)),
    main::batch(2, main::stored(hashes => [ 11, 12 ], first => 3000)),
    main::batch(3, main::removed(hashes => [ 12 ])));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 32), "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 1/2", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/,
  qr/kvroute_indexed_blocks\{[^}]*\} 1\n(?:.*\n)*kvroute_events_reannounced_blocks_total\{[^}]*\} 4\n/ ]
--- no_error_log
[error]
[alert]



=== TEST 3: hybrid model: the sliding-window group stores the same hashes
and removes one (naming group 1 only): the full-attention index follows its
own group (its removal of block 2 takes block 2 out)
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(3, 0)
--- config eval: $::Config
--- init
main::publish(3,
    main::batch(0, main::stored(hashes => [ 11, 12 ], first => 3000),
                   main::stored(hashes => [ 11, 12 ], first => 3000,
                                group => 1, kind => 'sliding_window')),
    main::batch(1, main::removed(hashes => [ 11 ], group => 1),
                   main::removed(hashes => [ 12 ], group => 0)));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 32), "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 1/2", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/,
  qr/kvroute_events_other_group_blocks_total\{[^}]*\} 3\n/ ]
--- no_error_log
[error]
[alert]



=== TEST 4: cache_salt in the first block's extra keys (vLLM): only the
same salt matches, the chain continued without it too; no false hit for
unsalted or other salts
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(4, 0)
--- config eval: $::Config
--- init
main::publish(4,
    main::batch(0, main::stored(hashes => [ 11, 12 ], first => 3000,
                                extra => [ [ 'tenant-a' ], undef ])),
    main::batch(1, main::stored(hashes => [ 13 ], parent => 12,
                                first => 3032)));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 48),
  main::prompt(3000, 48, cache_salt => 'tenant-a'),
  main::prompt(3000, 48, cache_salt => 'tenant-b') ]
--- response_headers_like eval
[ "", "X-Kvroute: home 0/3", "X-Kvroute: overlap 3/3", "X-Kvroute: home 0/3" ]
--- no_error_log
[error]
[alert]



=== TEST 5: no false hits on blocks with an image's extra keys or a LoRA
adapter's (the base model's request has the same tokens)
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(5, 0)
--- config eval: $::Config
--- init
main::publish(5,
    main::batch(0, main::stored(hashes => [ 11, 12 ], first => 3000,
                                extra => [ [ [ 'img-a', 0 ] ], undef ])),
    main::batch(1, main::stored(hashes => [ 21 ], first => 4000,
                                lora => 'adapter-a',
                                extra => [ [ 'adapter-a' ] ])),
    main::batch(2, main::stored(hashes => [ 31 ], first => 5000)));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 32), main::prompt(4000, 16),
  main::prompt(5000, 16), "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: home 0/2", "X-Kvroute: home 0/1", "X-Kvroute: overlap 1/1",
  "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/, qr/ok/, qr/ok/,
  qr/kvroute_events_stored_blocks_total\{[^}]*\} 4\n/ ]
--- no_error_log
[error]
[alert]



=== TEST 6: SGLang with EAGLE: bigram token ids [[a, b], ...] are keyed by
their first tokens
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(6, 0)
--- config eval: $::Config
--- init
main::publish(6,
    main::batch(0, { type => 'BlockStored',
                     block_hashes => [ { u64 => 11 } ],
                     parent_block_hash => undef,
                     token_ids => [ map { [ $_, $_ + 1 ] } 3000 .. 3015 ],
                     block_size => 16, lora_id => undef,
                     medium => 'GPU' }));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 16) ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 1/1" ]
--- no_error_log
[error]
[alert]



=== TEST 7: a rejected batch does not advance the sequence: the next one is
a gap (its removals may be lost), the index dropped and stale
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(7, 0)
--- config eval: $::Config
--- init
main::publish(7,
    main::batch(0, main::stored(hashes => [ 11, 12 ], first => 3000)),
    { frames => [ { text => '' }, { seq => 1 }, { hex => 'c1' } ] },
    main::batch(2, main::stored(hashes => [ 21 ], first => 4000)));
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
  qr/kvroute_events_dropped_total\{[^}]*\} 1\n(?:.*\n)*kvroute_events_gaps_total\{[^}]*\} 1\n(?:.*\n)*kvroute_events_stale\{[^}]*\} 1\n/ ]
--- no_error_log
[error]
[alert]



=== TEST 8: a gap keeps the index and asks the replay from the last applied
batch + 1 (batch 0 is no longer in the engine's buffer: a replay from 0
would lose it)
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(8, 1)
--- config eval: $::Config
--- init
main::publish(8,
    { start_delay => 500 },
    { %{ main::batch(0, main::stored(hashes => [ 11 ], first => 3000)) },
      live_only => JSON::PP::true },
    { %{ main::batch(1, main::stored(hashes => [ 12 ], parent => 11,
                                     first => 3016)) },
      replay_only => JSON::PP::true },
    main::batch(2, main::stored(hashes => [ 13 ], parent => 12,
                                first => 3032)));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 48), "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 3/3", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/,
  qr/kvroute_events_gaps_total\{[^}]*\} 1\n(?:.*\n)*kvroute_events_replayed_batches_total\{[^}]*\} [1-9]\d*\n(?:.*\n)*kvroute_events_stale\{[^}]*\} 0\n(?:.*\n)*kvroute_events_lost_total\{[^}]*\} 0\n/ ]
--- no_error_log
[error]
[alert]



=== TEST 9: replies the engine's ROUTER drops (past its high-water mark)
are asked again from the last applied batch: a replay in pages
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(9, 1)
--- config eval: $::Config
--- init
main::publish(9,
    { start_delay => 500 },
    { replay_drop => { after => 2, count => 2 } },
    { %{ main::batch(0, main::stored(hashes => [ 11 ], first => 3000)) },
      live_only => JSON::PP::true },
    (map { { %{ main::batch($_, main::stored(hashes => [ 11 + $_ ],
                                             parent => 10 + $_,
                                             first => 3000 + 16 * $_)) },
             replay_only => JSON::PP::true } } 1 .. 6),
    main::batch(7, main::stored(hashes => [ 18 ], parent => 17,
                                first => 3112)));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 128), "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 8/8", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/,
  qr/kvroute_events_replays_total\{[^}]*\} 3\n(?:.*\n)*kvroute_events_stale\{[^}]*\} 0\n(?:.*\n)*kvroute_events_lost_total\{[^}]*\} 0\n/ ]
--- no_error_log
[error]
[alert]



=== TEST 10: a gap whose batch is rejected every time: the replay cannot
fill it, the gap is accepted (index dropped, stale) and not asked again
(first: the replays TEST 9 asked, from the publisher's log: from 0 at the
connection, from 1 at the gap, from 3 after the dropped replies)
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(10, 1)
--- config eval: $::Config
--- init
Test::More::is(main::replays(), "replay from 0\nreplay from 1\nreplay from 3\n",
               'TEST 9 asked replays from 0 (connection), 1 (gap), 3 (page)');
main::publish(10,
    { start_delay => 500 },
    main::batch(0, main::stored(hashes => [ 11 ], first => 3000)),
    { frames => [ { text => '' }, { seq => 1 }, { hex => 'c1' } ] },
    main::batch(2, main::stored(hashes => [ 21 ], first => 4000)));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", "GET /wait", main::prompt(3000, 16), main::prompt(4000, 16),
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "", "X-Kvroute: home 0/1", "X-Kvroute: overlap 1/1", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/, qr/ok/, qr/ok/,
  qr/kvroute_events_replays_total\{[^}]*\} 2\n(?:.*\n)*kvroute_events_stale\{[^}]*\} 1\n(?:.*\n)*kvroute_events_lost_total\{[^}]*\} 1\n/ ]
--- no_error_log
[error]
[alert]



=== TEST 11: SGLang's tiers, array era (medium "CPU_PINNED", "DISK"); after
7 s, TEST 10 had asked no replay beyond the connection's and the gap's
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(11, 0)
--- config eval: $::Config
--- init
Test::More::is(main::replays(), "replay from 0\nreplay from 1\n",
               'TEST 10: no replay loop (from 0 at the connection, 1 at the gap)');
main::publish(11,
    main::batch(0, [ 'BlockStored', [ { u64 => -11 } ], undef,
                     [ 3000 .. 3015 ], 16, undef, 'GPU' ],
                   [ 'BlockStored', [ { u64 => -21 } ], undef,
                     [ 4000 .. 4015 ], 16, undef, 'CPU_PINNED' ]),
    main::batch(1, [ 'BlockRemoved', [ { u64 => -11 } ], 'DISK' ]));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 16), main::prompt(4000, 16) ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 1/1", "X-Kvroute: home 0/1" ]
--- no_error_log
[error]
[alert]



=== TEST 12: models= names the base model: a request for another model is
for that LoRA adapter, keyed with its name as the engine keys its blocks
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(12, 0, 'models=base,base-alias')
--- config eval: $::Config
--- init
main::publish(12,
    main::batch(0, main::stored(hashes => [ 21 ], first => 4000,
                                lora => 'adapter-a',
                                extra => [ [ 'adapter-a' ] ]),
                   main::stored(hashes => [ 31 ], first => 5000)));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait",
  main::prompt(4000, 16, model => 'adapter-a'),
  main::prompt(4000, 16, model => 'base'),
  main::prompt(5000, 16, model => 'adapter-a'),
  main::prompt(5000, 16, model => 'base-alias'),
  main::prompt(4000, 16, model => 'adapter-b') ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 1/1", "X-Kvroute: home 0/1", "X-Kvroute: home 0/1",
  "X-Kvroute: overlap 1/1", "X-Kvroute: home 0/1" ]
--- no_error_log
[error]
[alert]



=== TEST 13: kvroute_events given the engine's bind form (tcp://*:PORT, as
vLLM's default endpoint): kvroute connects to the server's own host
--- main_config eval: $::MainConfig
--- http_config eval
my $b = main::server_port(13);
my $e = $b + 100;
my $r = $b + 200;
"upstream llm {
    kvroute mode=kv predict=0 zone=kv_fields:4m;
    kvroute_events 127.0.0.1:$b tcp://*:$e replay=tcp://0.0.0.0:$r;
    server 127.0.0.1:$b;
}
server { listen 127.0.0.1:$b; location / { return 200 \"ok\\n\"; } }
"
--- config eval: $::Config
--- init
main::publish(13,
    main::batch(0, main::stored(hashes => [ 11 ], first => 3000)));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 16), "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 1/1", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/, qr/kvroute_events_replays_total\{[^}]*\} [1-9]\n/ ]
--- no_error_log
[error]
[alert]



=== TEST 14: data-parallel ranks, an index slot each: rank 1's removal and
AllBlocksCleared take only rank 1's blocks, rank 0's stay (the status page
sums the ranks')
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(14, 0, 'events_ranks=2')
--- config eval: $::Config
--- init
main::publish(14,
    main::batch(0, main::stored(hashes => [ 11, 12 ], first => 3000)));
main::publish_rank(14, 1,
    main::batch(0, main::stored(hashes => [ 21, 22 ], first => 3000),
                   main::stored(hashes => [ 31 ], first => 4000)),
    main::batch(1, main::removed(hashes => [ 22 ])),
    main::batch(2, [ 'AllBlocksCleared' ]));
--- more_headers
Content-Type: application/json
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 32), main::prompt(4000, 16),
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 2/2", "X-Kvroute: home 0/1", "" ]
--- response_body_like eval
[ qr/ok/, qr/ok/, qr/ok/,
  qr/kvroute_indexed_blocks\{[^}]*\} 2\n(?:.*\n)*kvroute_events_cleared_total\{[^}]*\} 1\n/ ]
--- no_error_log
[error]
[alert]
