# Self-test of the runner in master mode with HUP reloads between blocks
# (TEST_NGINX_USE_HUP): the blocks share one master process and its
# shared memory, as kvroute's reload tests need.  Stock nginx only.

BEGIN {
    # set before loading the runner, as real Test::Nginx reads it then
    $ENV{TEST_NGINX_USE_HUP} = 1;
}

use Test::Nginx::Socket 'no_plan';

workers(2);
master_on();
repeat_each(1);

our ($FirstMaster, @FirstWorkers);

sub read_master_pid {
    open my $in, '<', $Test::Nginx::Util::PidFile or return undef;
    my $pid = <$in>;
    close $in;
    chomp $pid if defined $pid;
    return $pid;
}

# from /proc, not ps: a minimal Debian image (the Dockerfile's) has no procps
sub worker_pids {
    my $master = shift;
    my @pids;
    for my $stat (glob '/proc/[0-9]*/stat') {
        open my $in, '<', $stat or next;
        my $line = <$in>;
        close $in;
        # "pid (comm) state ppid ..."; comm may hold spaces and parentheses
        push @pids, $1
            if defined $line && $line =~ /^(\d+) \(.*\) \S+ (\d+) /
               && $2 == $master;
    }
    return sort { $a <=> $b } @pids;
}

# The worker set once it has settled: a slow start (the sanitizer build
# takes a second or more) or old workers still closing after a reload
# would otherwise be counted.  Polls for up to 10 s, then gives what it saw.
sub settled_workers {
    my ($master, @old) = @_;
    my %old = map { $_ => 1 } @old;
    my @pids;
    for (1 .. 100) {
        @pids = worker_pids($master);
        last if @pids == 2 && !grep { $old{$_} } @pids;
        select undef, undef, undef, 0.1;
    }
    return @pids;
}

no_shuffle();
run_tests();

__DATA__

=== TEST 1: first block starts a master with two workers
--- http_config
    limit_req_zone $server_name zone=one:1m rate=1r/m;
--- config
    location = /t {
        limit_req zone=one nodelay;
        limit_req_status 429;
        # a content handler: "return" would act before limit_req
        root html;
        try_files /index.html =404;
        add_header X-Block first;
    }
--- init
$main::FirstMaster = main::read_master_pid();
@main::FirstWorkers = main::settled_workers($main::FirstMaster);
Test::More::is(scalar @main::FirstWorkers, 2, 'two worker processes');
--- request
GET /t
--- response_headers
X-Block: first
--- no_error_log
[error]



=== TEST 2: reloaded, not restarted: same master, new workers, zone kept
--- http_config
    limit_req_zone $server_name zone=one:1m rate=1r/m;
--- config
    location = /t {
        limit_req zone=one nodelay;
        limit_req_status 429;
        # a content handler: "return" would act before limit_req
        root html;
        try_files /index.html =404;
        add_header X-Block second;
    }
--- init
my $master = main::read_master_pid();
Test::More::is($master, $main::FirstMaster, 'same master pid after the reload');
my @workers = main::settled_workers($master, @main::FirstWorkers);
Test::More::is(scalar @workers, 2, 'two worker processes after the reload');
Test::More::is(scalar(grep { my $w = $_; grep { $_ == $w } @main::FirstWorkers }
                @workers),
   0, 'the old workers are gone');
--- request
GET /t
--- error_code: 429
--- error_log
reconfiguring
limiting requests



=== TEST 3: a zone of another size is a new, empty zone
--- http_config
    limit_req_zone $server_name zone=one:2m rate=1r/m;
--- config
    location = /t {
        limit_req zone=one nodelay;
        limit_req_status 429;
        # a content handler: "return" would act before limit_req
        root html;
        try_files /index.html =404;
        add_header X-Block third;
    }
--- request
GET /t
--- response_headers
X-Block: third
--- error_log
reconfiguring
--- no_error_log
limiting requests
