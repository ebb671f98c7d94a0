# The status page is sized for what it writes: an upstream named with
# 2,000 characters, many servers and backups, in approx and kv mode,
# gives a complete page, every line in the Prometheus text format.

use lib 't/lib';
use Test::Nginx::Socket 'no_plan';

my $port = $ENV{TEST_NGINX_PORT} || 1984;

# nothing is proxied to these servers; in kv mode the events helper
# subscribes to port + 100 of each, where nobody publishes
my $first = $port + 600;

our $Long = join '', map { ('a' .. 'z')[$_ % 26] } 0 .. 1999;

our @PeerMetrics = qw(
    kvroute_inflight_requests kvroute_inflight_prompt_tokens
    kvroute_inflight_prefill_tokens kvroute_indexed_blocks
    kvroute_capacity_blocks kvroute_capacity_evictions_total
    kvroute_host_tier_blocks kvroute_disk_tier_blocks);

our @EventsMetrics = qw(
    kvroute_events_messages_total kvroute_events_batches_total
    kvroute_events_dropped_total kvroute_events_stored_blocks_total
    kvroute_events_removed_blocks_total kvroute_events_cleared_total
    kvroute_events_gaps_total kvroute_events_replays_total
    kvroute_events_replayed_batches_total kvroute_events_stale
    kvroute_events_stale_total kvroute_events_connects_total
    kvroute_events_orphans_total kvroute_events_offloaded_blocks_total
    kvroute_events_other_group_blocks_total
    kvroute_events_reannounced_blocks_total kvroute_events_lost_total
    kvroute_events_block_size_mismatch_total
    kvroute_events_last_age_seconds);

our $Types = join '', map { "# TYPE $_\n" } (
    'kvroute_inflight_requests gauge',
    'kvroute_inflight_prompt_tokens gauge',
    'kvroute_inflight_prefill_tokens gauge',
    'kvroute_indexed_blocks gauge',
    'kvroute_capacity_blocks gauge',
    'kvroute_capacity_evictions_total counter',
    'kvroute_host_tier_blocks gauge',
    'kvroute_disk_tier_blocks gauge',
    'kvroute_decisions_total counter',
    'kvroute_decision_microseconds_total counter',
    'kvroute_index_entries gauge',
    'kvroute_index_capacity gauge',
    'kvroute_index_full_evictions_total counter',
    'kvroute_ttft_decode_tokens gauge',
    'kvroute_ttft_decode_requests_total counter',
    'kvroute_ttft_decode_fits_total counter',
    'kvroute_ttft_decode_queued_total counter');

# upstream NAME PARAMETERS PRIMARIES BACKUPS: servers from $first on
sub upstream {
    my ($name, $params, $primaries, $backups) = @_;
    my $conf = "upstream $name {\n    kvroute $params;\n";
    my $p = $first;
    $conf .= "    server 127.0.0.1:" . $p++ . ";\n" for 1 .. $primaries;
    $conf .= "    server 127.0.0.1:" . $p++ . " backup;\n" for 1 .. $backups;
    return $conf . "}\n";
}

# the exact lines of one upstream: each server's, in order, then the
# zone's; $decode: policy=ttft's weight of a request in flight, configured
# (the default, 1200), "auto" (not learned yet: the default, and what the
# learner has seen) or "none" (another policy)
sub upstream_lines {
    my ($name, $primaries, $backups, $kv, $decode) = @_;
    $decode //= 'configured';
    my @metrics = (@PeerMetrics, $kv ? @EventsMetrics : ());
    my $zone = "kvroute_$name";
    my $re = '';
    my $p = $first;
    for my $i (1 .. $primaries + $backups) {
        my $backup = $i > $primaries ? ',backup="1"' : '';
        my $server = "127.0.0.1:" . $p++;
        $re .= join '', map {
            "\Q$_\{upstream=\"$name\",server=\"$server\"$backup} \E\\d+\\n"
        } @metrics;
    }
    $re .= "kvroute_events_helper_starts_total\\{zone=\"\Q$zone\E\"\\} \\d+\\n"
        if $kv;
    $re .= "(?:kvroute_decisions_total\\{zone=\"\Q$zone\E\","
         . "reason=\"[a-z0-9-]+\"\\} \\d+\\n){19}";
    $re .= "kvroute_$_\\{zone=\"\Q$zone\E\"\\} \\d+\\n"
        for qw(decision_microseconds_total index_entries index_capacity
               index_full_evictions_total);
    $re .= "kvroute_ttft_decode_tokens\\{upstream=\"\Q$name\E\","
         . "source=\"configured\"\\} 1200\\n" if $decode ne 'none';
    $re .= "kvroute_ttft_decode_$_\\{zone=\"\Q$zone\E\"\\} 0\\n"
        for $decode eq 'auto' ? qw(requests_total fits_total queued_total) : ();
    return $re;
}

sub page { my $re = join '', @_; return qr/\A\Q$::Types\E$re\z/ }

repeat_each(1);
master_on();
workers(2);
no_shuffle();
run_tests();

__DATA__

=== TEST 1: approx: a 2,000-character upstream, 40 servers and 8 backups
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval
::upstream($::Long, "", 40, 8)
--- config
location = /kvroute_status { kvroute_status; }
--- request
GET /kvroute_status
--- response_body_like eval
::page(::upstream_lines($::Long, 40, 8, 0))
--- no_error_log
[error]
[crit]
[alert]



=== TEST 2: kv: a 2,000-character upstream, 24 servers and 4 backups
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval
::upstream($::Long, "mode=kv events_port=+100",
           24, 4)
--- config
location = /kvroute_status { kvroute_status; }
--- request
GET /kvroute_status
--- response_body_like eval
::page(::upstream_lines($::Long, 24, 4, 1))
--- no_error_log
[error]
[crit]
[alert]



=== TEST 3: both modes in one page, the long name and a short one
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval
::upstream($::Long, "mode=kv events_port=+100",
           24, 4)
. ::upstream("short", "", 40, 8)
--- config
location = /kvroute_status { kvroute_status; }
--- request
GET /kvroute_status
--- response_body_like eval
::page(::upstream_lines($::Long, 24, 4, 1),
       ::upstream_lines("short", 40, 8, 0))
--- no_error_log
[error]
[crit]
[alert]



=== TEST 4: ttft_decode=auto before a request ended, and another policy
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval
::upstream($::Long, "ttft_decode=auto", 40, 8)
. ::upstream("short", "policy=dynamo", 4, 0)
--- config
location = /kvroute_status { kvroute_status; }
--- request
GET /kvroute_status
--- response_body_like eval
::page(::upstream_lines($::Long, 40, 8, 0, 'auto'),
       ::upstream_lines("short", 4, 0, 0, 'none'))
--- no_error_log
[error]
[crit]
[alert]
