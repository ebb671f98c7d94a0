# A worker killed while it holds the zone's lock, in the middle of an
# index change (gdb stops it inside kvr_index_record() and sends SIGKILL):
# the master forces the lock open, the next process to take it sees the
# dead holder's mark, starts the index afresh (an alert says so), and
# requests keep being served and routed.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX ();
use Test::More;

my $nginx = $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx';
my $so = $ENV{TEST_NGINX_KVROUTE_SO} || 'build/ngx_http_kvroute_module.so';
my $port = ($ENV{TEST_NGINX_PORT} || 1984) + 61;

plan skip_all => "no $so (make module)" unless -f $so;
plan skip_all => 'no gdb' if system('gdb --version > /dev/null 2>&1') != 0;
$so = abs_path($so);

my $dir = tempdir(CLEANUP => 1);
mkdir "$dir/logs";
open my $conf, '>', "$dir/nginx.conf" or die;
print $conf <<"CONF";
load_module $so;
worker_processes 1;
error_log $dir/logs/error.log notice;
pid $dir/logs/nginx.pid;
events { worker_connections 64; }
http {
    access_log off;
    upstream llm {
        kvroute zone=kv_killed:1m;
        server 127.0.0.1:@{[ $port + 1 ]};
        server 127.0.0.1:@{[ $port + 2 ]};
    }
    server {
        listen 127.0.0.1:$port;
        location /v1/ {
            proxy_pass http://llm;
            add_header X-Kvroute "\$kvroute_reason \$kvroute_overlap/\$kvroute_blocks";
        }
        location = /kvroute_status { kvroute_status; }
    }
    server { listen 127.0.0.1:@{[ $port + 1 ]}; location / { return 200 "a\\n"; } }
    server { listen 127.0.0.1:@{[ $port + 2 ]}; location / { return 200 "b\\n"; } }
}
CONF
close $conf;

system($nginx, '-p', $dir, '-c', "$dir/nginx.conf") == 0 or die "nginx did not start";
END { stop() }

sub stop {
    return unless $dir && -f "$dir/logs/nginx.pid";
    open my $fh, '<', "$dir/logs/nginx.pid" or return;
    chomp(my $master = <$fh>);
    kill 'QUIT', $master;
    for (1 .. 50) { last unless kill 0, $master; select(undef, undef, undef, 0.1); }
}

sub workers {
    open my $fh, '<', "$dir/logs/nginx.pid" or die;
    chomp(my $master = <$fh>);
    my @pids;
    for my $stat (glob '/proc/[0-9]*/stat') {
        open my $s, '<', $stat or next;
        my @f = split ' ', scalar <$s>;
        next unless $f[3] == $master;
        open my $c, '<', "/proc/$f[0]/cmdline" or next;
        push @pids, $f[0] if <$c> =~ /worker process/;
    }
    return @pids;
}

# POST /v1/completions with a prompt of token ids; returns (status, X-Kvroute)
sub post {
    my ($first, $n) = @_;
    my $body = '{"model":"m","prompt":[' . join(',', $first .. $first + $n - 1) . ']}';
    my $sock = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 5)
        or return (0, '');
    print $sock "POST /v1/completions HTTP/1.0\r\nHost: x\r\n"
        . "Content-Type: application/json\r\nContent-Length: " . length($body)
        . "\r\n\r\n$body";
    local $/;
    my $resp = <$sock> // '';
    my ($status) = $resp =~ m{^HTTP/1\.\d (\d+)};
    my ($kv) = $resp =~ m{^X-Kvroute: ([^\r\n]*)}m;
    return ($status // 0, $kv // '');
}

select(undef, undef, undef, 0.3);
my ($victim) = workers();
ok($victim, "a worker ($victim)");

# the prompt is learnt first: its second request overlaps
post(5000, 64);
my (undef, $kv) = post(5000, 64);
is($kv, 'overlap 4/4', 'the index works before');

# gdb stops the worker inside the index's change and kills it there
my $gdb = fork();
if ($gdb == 0) {
    open STDOUT, '>', "$dir/logs/gdb.log";
    open STDERR, '>&', \*STDOUT;
    exec('gdb', '-p', $victim, '-batch', '-ex', 'break kvr_index_record',
         '-ex', 'continue', '-ex', 'signal SIGKILL') or POSIX::_exit(127);
}

my $attached = 0;
for (1 .. 100) {
    select(undef, undef, undef, 0.1);
    open my $st, '<', "/proc/$victim/status" or last;
    if (join('', <$st>) =~ /^TracerPid:\s+(\d+)/m && $1 != 0) {
        $attached = 1;
        last;
    }
}

SKIP: {
    skip 'gdb cannot attach here (ptrace not permitted)', 6 unless $attached;
    select(undef, undef, undef, 0.5);    # the breakpoint is set

    my ($status) = post(6000, 64);    # stops in kvr_index_record, killed
    waitpid($gdb, 0);
    ok(!kill(0, $victim), 'the worker died inside the index change');

    my @new;
    for (1 .. 50) {
        @new = grep { $_ != $victim } workers();
        last if @new;
        select(undef, undef, undef, 0.1);
    }
    ok(@new, 'the master started another worker');

    open my $log, '<', "$dir/logs/error.log" or die;
    my $text = join '', <$log>;
    like($text, qr/shared memory zone "kv_killed" was locked by $victim/,
         'the master forced the lock open');

    my ($s1, $kv1) = post(7000, 64);
    my ($s2, $kv2) = post(7000, 64);
    is("$s1 $s2", '200 200', 'requests are served after');

    open $log, '<', "$dir/logs/error.log" or die;
    $text = join '', <$log>;
    like($text, qr/kvroute: process $victim died while it changed the index of zone "kv_killed": the index starts afresh/,
         'the next holder saw the dead holder and started the index afresh');
    is($kv2, 'overlap 4/4', 'and the fresh index routes by prefix again');
}

done_testing();
