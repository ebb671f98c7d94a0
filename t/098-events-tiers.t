# mode=kv with offload tiers (README "KV events", docs/engine-events.md
# "Tiers"): each server's host (CPU) and disk tiers are tracked from its
# events in slots of their own; the policy credits a tier's blocks after
# the GPU overlap as NVIDIA Dynamo does (host_weight 0.75, disk_weight
# 0.25 of a GPU block); a tier's removals never touch the GPU's entries.
# Scripted publishers send vLLM's forms: the GPU's BlockStored with token
# ids, the offloading connector's BlockStored with block hashes alone
# (token_ids [], no parent) and medium "CPU".

use lib 't/lib';
use Test::Nginx::Socket;
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';
use JSON::PP ();
use POSIX ();

# block k: servers A and B at port + 800 + 10k and + 10k + 5; each
# publishes 100 above it (events_port=+100)
our $Port = $ENV{TEST_NGINX_PORT} || 1984;

if (! -d 'bench/node_modules/zeromq') {
    plan skip_all => 'bench/node_modules missing (make bench-deps)';
}

our @Publishers;
END {
    kill 'TERM', @Publishers if @Publishers;
    unlink glob "t/publisher-tiers-$$-*";
}

sub tier_port {
    my ($block, $server) = @_;
    return $Port + 800 + 10 * $block + ($server eq 'B' ? 5 : 0);
}

sub batch {
    my ($seq, @events) = @_;
    return { frames => [ { text => '' }, { seq => $seq },
                         { msgpack => [ 1.5, [ @events ], 0 ] } ] };
}

# the GPU's BlockStored (array era: tag, hashes, parent, token_ids,
# block_size, lora_id, medium, lora_name), block_size 16
sub gpu_stored {
    my (%o) = @_;
    my $n = @{ $o{hashes} };
    return [ 'BlockStored', [ map { { u64 => $_ } } @{ $o{hashes} } ],
             defined $o{parent} ? { u64 => $o{parent} } : undef,
             [ $o{first} .. $o{first} + 16 * $n - 1 ], 16, undef, 'GPU',
             undef ];
}

# vLLM's offloading connector: hashes alone
sub tier_stored {
    my ($medium, @hashes) = @_;
    return tier_stored_size($medium, 16, @hashes);
}

# the same with the connector's own block_size (a multiple of the GPU's:
# each hash is the last GPU block's of its group)
sub tier_stored_size {
    my ($medium, $size, @hashes) = @_;
    return [ 'BlockStored', [ map { { u64 => $_ } } @hashes ], undef, [],
             $size, undef, $medium, undef ];
}

sub removed {
    my ($medium, @hashes) = @_;
    return [ 'BlockRemoved', [ map { { u64 => $_ } } @hashes ], $medium ];
}

# server's publisher for block: sends once subscribed
sub publish {
    my ($block, $server, @messages) = @_;
    my $events = "tcp://127.0.0.1:" . (tier_port($block, $server) + 100);
    my $file = "t/publisher-tiers-$$-$server.json";
    my $out = "t/publisher-tiers-$$-$server.out";

    open my $fh, '>', $file or die;
    print $fh JSON::PP->new->encode(\@messages);
    close $fh;
    unlink $out;

    my $pid = fork();
    if ($pid == 0) {
        open STDOUT, '>', $out;
        exec('node', 't/lib/kv_publisher.js', $events, $file, 8000)
            or POSIX::_exit(127);
    }
    push @Publishers, $pid;
}

sub wait_publishers {
    for my $server ('A', 'B') {
        for (1 .. 100) {
            last if -s "t/publisher-tiers-$$-$server.out";
            select(undef, undef, undef, 0.1);
        }
    }
}

sub stop_publishers {
    kill 'TERM', @Publishers;
    waitpid($_, 0) for @Publishers;
    @Publishers = ();
}

sub http_config {
    my ($block, $more) = @_;
    my $a = tier_port($block, 'A');
    my $b = tier_port($block, 'B');
    $more = defined $more ? " $more" : '';
    return "upstream llm {\n"
           . "    kvroute mode=kv events_port=+100 predict=0 capacity=1000"
           . "$more zone=kv_tiers:4m;\n"
           . "    server 127.0.0.1:$a;\n"
           . "    server 127.0.0.1:$b;\n}\n"
           . "server { listen 127.0.0.1:$a; location / { return 200 \"A\\n\"; } }\n"
           . "server { listen 127.0.0.1:$b; location / { return 200 \"B\\n\"; } }\n";
}

# A's GPU computed the 5-block prompt's first 4 blocks, its connector
# offloaded them to the CPU tier, then the GPU evicted them; B's GPU holds
# the prompt's first block
sub offloaded_on_a {
    my ($block) = @_;
    stop_publishers();
    publish($block, 'A',
        batch(0, gpu_stored(hashes => [ 11, 12, 13, 14 ], first => 3000)),
        batch(1, tier_stored('CPU', 11, 12, 13, 14)),
        batch(2, removed('GPU', 11, 12, 13, 14)));
    publish($block, 'B',
        batch(0, gpu_stored(hashes => [ 31 ], first => 3000)));
    wait_publishers();
}

sub prompt {
    my ($first, $n) = @_;
    return "POST /v1/completions\n" . JSON::PP->new->canonical->encode(
        { model => 'm', prompt => [ $first .. $first + $n - 1 ] });
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

=== TEST 1: a prefix only in A's CPU tier goes to A (4 host blocks x 0.75
beat B's 1 GPU block), though B holds more of it on its GPU
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(1)
--- config eval: $::Config
--- init
main::offloaded_on_a(1);
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 80), "GET /kvroute_status" ]
--- response_body_like eval
[ qr/ok/, qr/^A$/,
  qr/kvroute_indexed_blocks\{[^}]*server="127\.0\.0\.1:\d+"\} 0\n(?:.*\n)*kvroute_host_tier_blocks\{[^}]*\} 4\n/ ]
--- response_headers_like eval
[ "", "X-Kvroute: load 0/5", "" ]
--- no_error_log
[error]
[alert]



=== TEST 2: the same with the tiers weighed 0 (host_weight=0
disk_weight=0): B's GPU block wins
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(2, 'host_weight=0 disk_weight=0')
--- config eval: $::Config
--- init
main::offloaded_on_a(2);
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 80) ]
--- response_body_like eval
[ qr/ok/, qr/^B$/ ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 1/5" ]
--- no_error_log
[error]
[alert]



=== TEST 3: policy=cost weighs the CPU tier alike
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(3, 'policy=cost')
--- config eval: $::Config
--- init
main::offloaded_on_a(3);
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 80) ]
--- response_body_like eval
[ qr/ok/, qr/^A$/ ]
--- no_error_log
[error]
[alert]



=== TEST 4: a CPU removal never removes GPU entries: A keeps its 2 GPU
blocks after the CPU tier drops them, B holds 1
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(4)
--- config eval: $::Config
--- init
main::stop_publishers();
main::publish(4, 'A',
    main::batch(0, main::gpu_stored(hashes => [ 11, 12 ], first => 3000)),
    main::batch(1, main::tier_stored('CPU', 11, 12)),
    main::batch(2, main::removed('CPU', 11, 12)));
main::publish(4, 'B',
    main::batch(0, main::gpu_stored(hashes => [ 31 ], first => 3000)));
main::wait_publishers();
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 80), "GET /kvroute_status" ]
--- response_body_like eval
[ qr/ok/, qr/^A$/,
  qr/kvroute_indexed_blocks\{[^}]*\} 2\n(?:.*\n)*kvroute_host_tier_blocks\{[^}]*\} 0\n/ ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 2/5", "" ]
--- no_error_log
[error]
[alert]



=== TEST 5: the connector's blocks of 4 GPU blocks (block_size 64): A's
GPU computed 8 blocks and offloaded them as 2 (hashes of blocks 3 and 7),
then evicted them; B's GPU holds 1: the prefix goes to A, whose host tier
holds 8 GPU blocks
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(5)
--- config eval: $::Config
--- init
main::stop_publishers();
main::publish(5, 'A',
    main::batch(0, main::gpu_stored(hashes => [ 11 .. 18 ], first => 3000)),
    main::batch(1, main::tier_stored_size('CPU', 64, 14, 18)),
    main::batch(2, main::removed('GPU', 11 .. 18)));
main::publish(5, 'B',
    main::batch(0, main::gpu_stored(hashes => [ 31 ], first => 3000)));
main::wait_publishers();
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 144), "GET /kvroute_status" ]
--- response_body_like eval
[ qr/ok/, qr/^A$/,
  qr/kvroute_indexed_blocks\{[^}]*\} 0\n(?:.*\n)*kvroute_host_tier_blocks\{[^}]*\} 8\n/ ]
--- response_headers_like eval
[ "", "X-Kvroute: load 0/9", "" ]
--- no_error_log
[error]
[alert]



=== TEST 6: as vLLM's connector loads: A's GPU holds 5 blocks and its
host tier groups 0 and 1 (blocks 0-7); the 3 blocks from 5 to the end of
group 1 are less than one offloaded block, so A offers 5, and B's 6 GPU
blocks win
--- main_config eval: $::MainConfig
--- http_config eval: main::http_config(6)
--- config eval: $::Config
--- init
main::stop_publishers();
main::publish(6, 'A',
    main::batch(0, main::gpu_stored(hashes => [ 11 .. 18 ], first => 3000)),
    main::batch(1, main::tier_stored_size('CPU', 64, 14, 18)),
    main::batch(2, main::removed('GPU', 16 .. 18)));
main::publish(6, 'B',
    main::batch(0, main::gpu_stored(hashes => [ 31 .. 36 ], first => 3000)));
main::wait_publishers();
--- timeout: 8
--- request eval
[ "GET /wait", main::prompt(3000, 144) ]
--- response_body_like eval
[ qr/ok/, qr/^B$/ ]
--- response_headers_like eval
[ "", "X-Kvroute: overlap 6/9" ]
--- no_error_log
[error]
[alert]
