package Test::Nginx::Util;

# kvroute's own implementation of the server-management half of the
# Test::Nginx::Socket block format (openresty/test-nginx): it writes
# nginx.conf under the server root, starts, reloads (HUP) and stops
# nginx, and reads the logs.  The request/response half lives in
# Test::Nginx::Socket.  See t/README.md for the supported subset.

use strict;
use warnings;

use base 'Exporter';

use Config ();
use Cwd ();
use File::Path qw( make_path remove_tree );
use File::Spec ();
use IO::Select ();
use IO::Socket::INET ();
use List::Util qw( shuffle );
use POSIX qw( :sys_wait_h SIGQUIT SIGTERM SIGKILL SIGHUP );
use Time::HiRes qw( sleep time );
use Test::More ();

our $Verbose      = $ENV{TEST_NGINX_VERBOSE};
our $NginxBinary  = $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx';
our $Workers      = 1;
our $WorkerConnections = 64;
our $LogLevel     = $ENV{TEST_NGINX_LOG_LEVEL} || 'debug';
our $MasterProcessEnabled = $ENV{TEST_NGINX_MASTER_PROCESS} || 'off';
our $DaemonEnabled = 'on';
our $RepeatEach   = 1;
our $NoShuffle    = $ENV{TEST_NGINX_NO_SHUFFLE} || 0;
our $NoRootLocation = 0;
our $NoLongString = undef;
our $UseHup       = $ENV{TEST_NGINX_USE_HUP};
our $UseHttp2     = $ENV{TEST_NGINX_USE_HTTP2};
our $Timeout      = $ENV{TEST_NGINX_TIMEOUT} || 3;
our $TestNginxSleep = $ENV{TEST_NGINX_SLEEP} || 0.015;
our $CheckAccumErrLog = $ENV{TEST_NGINX_CHECK_ACCUM_ERR_LOG};
our $LoadModules  = $ENV{TEST_NGINX_LOAD_MODULES};
our $NoNginxManager = $ENV{TEST_NGINX_NO_NGINX_MANAGER} || 0;
our $ServerAddr   = '127.0.0.1';
our $ServerName   = 'localhost';
our $ConfigPreamble = '';
our @EnvToNginx;
our @BlockPreprocessors;
our @CleanupHandlers;

our $ServerPort = $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT}
                  || 1984;
our $ServerPortForClient = $ENV{TEST_NGINX_CLIENT_PORT}
                           || $ENV{TEST_NGINX_PORT} || $ServerPort;

our $ServRoot;

if ($ENV{TEST_NGINX_RANDOMIZE}) {
    $ServerPort = pick_free_port();
    $ServerPortForClient = $ServerPort;
    $ServRoot = File::Spec->rel2abs("t/servroot_$ServerPort");

} else {
    $ServRoot = $ENV{TEST_NGINX_SERVROOT}
                || File::Spec->rel2abs('t/servroot');
    $ServRoot = File::Spec->rel2abs($ServRoot);
}

our $LogDir     = File::Spec->catfile($ServRoot, 'logs');
our $ErrLogFile = File::Spec->catfile($LogDir, 'error.log');
our $AccLogFile = File::Spec->catfile($LogDir, 'access.log');
our $StderrFile = File::Spec->catfile($LogDir, 'nginx.stderr');
our $HtmlDir    = File::Spec->catfile($ServRoot, 'html');
our $ConfDir    = File::Spec->catfile($ServRoot, 'conf');
our $ConfFile   = File::Spec->catfile($ConfDir, 'nginx.conf');
our $PidFile    = File::Spec->catfile($LogDir, 'nginx.pid');

$ENV{TEST_NGINX_SERVER_ROOT} = $ServRoot;
$ENV{TEST_NGINX_HTML_DIR} = $HtmlDir;
if ($ENV{TEST_NGINX_RANDOMIZE}) {
    $ENV{TEST_NGINX_SERVER_PORT} = $ServerPort;
    $ENV{TEST_NGINX_PORT} = $ServerPort;
}

# become the reaper of the daemonized nginx (prctl PR_SET_CHILD_SUBREAPER
# on x86-64 Linux) so that it does not linger as a zombie once it exits
if ($^O eq 'linux' && $Config::Config{archname} =~ /^x86_64/) {
    eval { syscall(157, 36, 1, 0, 0, 0) };
}

# hooks filled in by Test::Nginx::Socket
our $RunTestHelper;
our $CheckErrorLog;

our $NginxVersion;
our $NginxRawVersion;
our $ConfigVersion = '';
our $ErrLogFilePos = 0;
our $ErrLogLines;
our $InMustDie;
our $PrevBlock;
our $FirstTime = 1;
our $InSubprocess;
our %WarnedExpansion;

our @EXPORT = qw(
    env_to_nginx is_str no_long_string $NoLongString
    $ServerAddr server_addr $ServerName server_name
    parse_time verbose sleep_time bail_out add_cleanup_handler
    access_log_data error_log_data setup_server_root write_config_file
    get_canon_version get_nginx_version trim show_all_chars
    parse_headers run_tests run_test get_pid_from_pidfile
    $ServerPortForClient $ServerPort $NginxVersion $PidFile $ServRoot
    $ConfFile $ErrLogFile $HtmlDir $RunTestHelper $CheckErrorLog
    $NoNginxManager $RepeatEach add_block_preprocessor timeout
    worker_connections workers master_on master_off config_preamble
    repeat_each master_process_enabled log_level no_shuffle
    no_root_location html_dir server_root server_port
    server_port_for_client no_nginx_manager use_hup use_http2
    check_accum_error_log expand_env_in_text master_pid
    nginx_is_running
);


# ---------------------------------------------------------------------------
# settings

sub no_long_string () { $NoLongString = 1 }
sub no_shuffle () { $NoShuffle = 1 }
sub no_root_location () { $NoRootLocation = 1 }
sub no_nginx_manager () { $NoNginxManager = 1 }
sub use_hup () { $UseHup = 1 }
sub check_accum_error_log () { $CheckAccumErrLog = 1 }
sub master_on () { $MasterProcessEnabled = 'on' }
sub master_off () { $MasterProcessEnabled = 'off' }
sub config_preamble ($) { $ConfigPreamble = shift }
sub html_dir () { $HtmlDir }
sub server_root () { $ServRoot }
sub verbose () { $Verbose }
sub sleep_time () { $TestNginxSleep }

sub add_block_preprocessor (&) { unshift @BlockPreprocessors, shift }
sub add_cleanup_handler ($) { unshift @CleanupHandlers, shift }

sub _getset {
    my ($ref, @args) = @_;
    if (@args) {
        $$ref = $args[0];
    }
    return $$ref;
}

sub workers (@) { _getset(\$Workers, @_) }
sub worker_connections (@) { _getset(\$WorkerConnections, @_) }
sub log_level (@) { _getset(\$LogLevel, @_) }
sub timeout (@) { _getset(\$Timeout, @_) }
sub server_addr (@) { _getset(\$ServerAddr, @_) }
sub server_name (@) { _getset(\$ServerName, @_) }
sub server_port_for_client (@) { _getset(\$ServerPortForClient, @_) }

sub server_port (@) {
    if (@_) {
        $ServerPort = shift;
        $ServerPortForClient = $ServerPort;
    }
    return $ServerPort;
}

sub repeat_each (@) {
    if (@_) {
        $RepeatEach = shift;
    }
    return $RepeatEach;
}

sub master_process_enabled (@) {
    if (@_) {
        $MasterProcessEnabled = shift() ? 'on' : 'off';
    }
    return $MasterProcessEnabled;
}

sub env_to_nginx (@) {
    die "env_to_nginx: no arguments specified\n" unless @_;
    for my $v (@_) {
        if ($v !~ /^[A-Za-z_]/ || $v =~ /\n/) {
            die "env_to_nginx: bad argument value: $v\n";
        }
        push @EnvToNginx, $v;
    }
}

sub is_str (@) {
    my ($got, $expected, $desc) = @_;

    local $Test::Builder::Level = $Test::Builder::Level + 1;

    if (ref $expected && ref $expected eq 'Regexp') {
        return Test::More::like($got, $expected, $desc);
    }

    if ($NoLongString) {
        return Test::More::is($got, $expected, $desc);
    }

    require Test::LongString;
    return Test::LongString::is_string($got, $expected, $desc);
}

sub parse_time ($) {
    my $tm = shift;

    return undef unless defined $tm;

    $tm =~ s/^\s+|\s+$//g;
    if ($tm =~ s/(\d)ms$/$1/) {
        return $tm / 1000;
    }
    $tm =~ s/(\d)s$/$1/;
    return $tm;
}

sub trim ($) {
    my $s = shift;
    return undef unless defined $s;
    $s =~ s/^\s+|\s+$//g;
    $s =~ s/\n/ /gs;
    $s =~ s/\s{2,}/ /gs;
    return $s;
}

sub show_all_chars ($) {
    my $s = shift;
    $s =~ s/\n/\\n/gs;
    $s =~ s/\r/\\r/gs;
    $s =~ s/\t/\\t/gs;
    return $s;
}

# "Name: value" per line; "!Name" means the header must be absent
sub parse_headers ($) {
    my $s = shift;
    my %headers;

    for my $line (split /\n/, $s) {
        $line =~ s/^\s+|\s+$//g;
        next if $line eq '';
        if ($line =~ s/^!\s*//) {
            $headers{$line} = undef;
            next;
        }
        my ($key, $val) = split /\s*:\s*/, $line, 2;
        $val = '' unless defined $val;
        $headers{$key} = $val;
    }

    return \%headers;
}

sub get_canon_version (@) {
    return sprintf "%d.%03d%03d", $_[0], $_[1], $_[2];
}

sub get_nginx_version () {
    my $out = `$NginxBinary -V 2>&1`;
    if (!defined $out || $? != 0) {
        bail_out("Failed to run \"$NginxBinary -V\": " . ($out // ''));
    }
    if ($out =~ m{nginx[^/]*/(\d+)\.(\d+)\.(\d+)}s) {
        $NginxRawVersion = "$1.$2.$3";
        return get_canon_version($1, $2, $3);
    }
    bail_out("Failed to parse the output of \"nginx -V\": $out");
}

sub pick_free_port {
    for (1 .. 1000) {
        my $port = 1985 + int rand 40000;
        my $sock = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
                                         LocalPort => $port,
                                         Proto => 'tcp', Listen => 1);
        if ($sock) {
            close $sock;
            return $port;
        }
    }
    die "cannot find a free port\n";
}


# ---------------------------------------------------------------------------
# environment expansion

# replaces $TEST_NGINX_FOO by $ENV{TEST_NGINX_FOO}; an undefined variable
# is an error, as in real Test::Nginx
sub expand_env_in_text ($$;$) {
    my ($text, $name, $section) = @_;

    return $text unless defined $text && !ref $text;

    my @missing;
    my $expanded = 0;

    $text =~ s{\$(TEST_NGINX_[_A-Z0-9]+)}{
        if (defined $ENV{$1}) {
            $expanded++;
            $ENV{$1};
        } else {
            push @missing, $1;
            "\$$1";
        }
    }ge;

    if (@missing) {
        bail_out("$name - No environment $missing[0] defined.");
    }

    # real Test::Nginx expands only the sections that build nginx.conf;
    # say so once per section when a test relies on the extension
    if ($expanded && defined $section
        && !$WarnedExpansion{$section}++)
    {
        Test::More::diag("NOTE: \$TEST_NGINX_* expanded in --- $section;"
                         . " real Test::Nginx does not do that");
    }

    return $text;
}


# ---------------------------------------------------------------------------
# processes

sub is_running ($) {
    my $pid = shift;

    return 0 unless defined $pid && $pid =~ /^\d+$/ && $pid > 1;
    waitpid $pid, WNOHANG;
    return 0 unless kill 0, $pid;

    # a daemonized nginx is reparented; an exited one may stay a zombie
    # until it is reaped, which must count as gone
    if (open my $in, '<', "/proc/$pid/stat") {
        my $stat = <$in>;
        close $in;
        if (defined $stat && $stat =~ /^\d+ \(.*\) (\S)/s) {
            return 0 if $1 eq 'Z' || $1 eq 'X';
        }
    }

    return 1;
}

sub proc_cmdline ($) {
    my $pid = shift;
    open my $in, '<', "/proc/$pid/cmdline" or return '';
    local $/;
    my $cmd = <$in> // '';
    close $in;
    $cmd =~ s/\0/ /g;
    return $cmd;
}

sub children_of ($) {
    my $ppid = shift;
    my @kids;

    opendir my $dh, '/proc' or return ();
    for my $pid (grep { /^\d+$/ } readdir $dh) {
        open my $in, '<', "/proc/$pid/stat" or next;
        my $stat = <$in>;
        close $in;
        next unless defined $stat;
        if ($stat =~ /^\d+ \(.*\) \S (\d+)/s && $1 == $ppid) {
            push @kids, $pid if is_running($pid);
        }
    }
    closedir $dh;

    return @kids;
}

sub read_pid_file () {
    open my $in, '<', $PidFile or return undef;
    my $pid = <$in>;
    close $in;
    return undef unless defined $pid;
    chomp $pid;
    return $pid =~ /^\d+$/ ? $pid : undef;
}

sub get_pid_from_pidfile ($) {
    my $name = shift;
    my $pid = read_pid_file();
    if (!defined $pid) {
        bail_out("$name - Failed to read the pid file $PidFile");
    }
    return $pid;
}

# the pid of the running nginx (the master when master_process is on),
# or undef
sub master_pid () {
    my $pid = read_pid_file();
    return undef unless defined $pid && is_running($pid);
    return $pid;
}

sub nginx_is_running () {
    return defined master_pid();
}

sub wait_gone ($$) {
    my ($pids, $limit) = @_;
    my $deadline = time + $limit;

    for (;;) {
        my @alive = grep { is_running($_) } @$pids;
        return 1 unless @alive;
        return 0 if time >= $deadline;
        sleep 0.02;
    }
}

# QUIT, then TERM, then KILL (the process and the children it had)
sub stop_process ($$) {
    my ($pid, $name) = @_;

    return unless is_running($pid);

    my @kids = children_of($pid);

    kill SIGQUIT, $pid;
    waitpid $pid, WNOHANG;
    return if wait_gone([$pid, @kids], $Timeout);

    warn "$name - nginx $pid did not quit in ${Timeout}s, "
         . "sending TERM\n";
    kill SIGTERM, $pid;
    return if wait_gone([$pid, @kids], 2);

    warn "$name - killing nginx $pid with force\n";
    kill SIGKILL, grep { is_running($_) } $pid, @kids;
    wait_gone([$pid, @kids], 2);
}

sub stop_nginx ($) {
    my $name = shift;

    my $pid = read_pid_file();
    if (defined $pid && is_running($pid)) {
        stop_process($pid, $name);
    }
    unlink $PidFile if -f $PidFile;
}

# leftovers of an earlier run of the same server root: the pid file may
# be gone, so look for nginx processes started with "-p $ServRoot/"
sub kill_leftovers ($) {
    my $name = shift;

    stop_nginx($name);

    opendir my $dh, '/proc' or return;
    my @pids = grep { /^\d+$/ && $_ != $$ } readdir $dh;
    closedir $dh;

    for my $pid (@pids) {
        my $cmd = proc_cmdline($pid);
        next unless $cmd =~ /nginx/ && index($cmd, "-p $ServRoot/ ") >= 0;
        warn "$name - stopping leftover nginx $pid ($cmd)\n" if $Verbose;
        stop_process($pid, $name);
    }
}

sub cleanup () {
    for my $hdl (@CleanupHandlers) {
        eval { $hdl->() };
    }
}

sub bail_out (@) {
    cleanup();
    stop_nginx('bail_out') unless $ENV{TEST_NGINX_NO_CLEAN};
    Test::More::BAIL_OUT(join '', @_);
}


# ---------------------------------------------------------------------------
# server root and nginx.conf

sub write_file ($$) {
    my ($path, $data) = @_;
    open my $out, '>', $path or bail_out("Can't open $path for writing: $!");
    binmode $out;
    print $out $data;
    close $out;
}

sub setup_server_root ($) {
    my $keep_logs = shift;

    if (-d $ServRoot && !$keep_logs) {
        # remove only what we create, in case TEST_NGINX_SERVROOT points
        # somewhere unexpected
        remove_tree($ConfDir, $HtmlDir, $LogDir,
                    glob("$ServRoot/*_temp"), glob("$ServRoot/*_cache"));
    }

    for my $dir ($ServRoot, $LogDir, $HtmlDir, $ConfDir) {
        next if -d $dir;
        make_path($dir) or bail_out("Failed to create $dir: $!");
    }

    write_file("$HtmlDir/index.html",
               '<html><head><title>It works!</title></head>'
               . '<body>It works!</body></html>');
}

sub write_user_files ($) {
    my $block = shift;
    my $name = $block->name;
    my $files = $block->user_files;

    return unless $files;

    if (!ref $files) {
        my @list;
        my ($fname, $body);
        for my $line (split /^/, $files) {
            if ($line =~ /^>>> (\S+)/) {
                push @list, [$fname, $body] if defined $fname;
                ($fname, $body) = ($1, '');
            } elsif (defined $fname) {
                $body .= $line;
            }
        }
        push @list, [$fname, $body] if defined $fname;
        $files = \@list;
    }

    for my $file (@$files) {
        my ($fname, $body) = @$file;
        my $path = $fname =~ m{^/} ? $fname : "$HtmlDir/$fname";
        if ($path =~ m{(.*)/}) {
            make_path($1) unless -d $1;
        }
        write_file($path, expand_env_in_text($body // '', $name));
    }
}

sub use_http2 ($) {
    my $block = shift;

    if (defined $block->http2) {
        if (defined $block->raw_request || defined $block->pipelined_requests)
        {
            bail_out($block->name
                     . " - cannot use --- http2 with --- raw_request or"
                     . " --- pipelined_requests");
        }
        return 1;
    }

    return 0 unless $UseHttp2;
    return 0 if defined $block->raw_request;
    return 0 if defined $block->pipelined_requests;
    return 0 unless defined $block->request;
    return 0 if !ref $block->request && $block->request =~ m{HTTP/1\.0};
    return 1;
}

sub write_config_file ($$$) {
    my ($block, $config, $use_hup) = @_;

    my $name = $block->name;

    my $main_config = $block->main_config // '';
    if ($LoadModules) {
        $main_config .= join '', map { "load_module $_;\n" }
                                 grep { length } split /\s+/, $LoadModules;
    }
    $main_config = expand_env_in_text($main_config, $name);
    my $http_config = expand_env_in_text($block->http_config // '', $name);
    my $post_main_config =
        expand_env_in_text($block->post_main_config // '', $name);

    my $log_level = $block->log_level // $LogLevel;
    $log_level =~ s/^\s+|\s+$//g;

    my $server_name = $block->server_name // $ServerName;
    $server_name =~ s/^\s+|\s+$//g;
    $server_name =~ s/\\/\\\\/g;
    $server_name =~ s/'/\\'/g;

    my $master = $use_hup ? 'on' : $MasterProcessEnabled;

    # http/2 without TLS: nginx before 1.25.1 only knows "listen ... http2"
    # (test-nginx >= 0.31 emits "http2 on;", which 1.22 rejects)
    my ($listen_opts, $http2_on) = ('', '');
    if (use_http2($block)) {
        if ($NginxVersion < get_canon_version(1, 25, 1)) {
            $listen_opts = ' http2';
        } else {
            $http2_on = "        http2 on;\n";
        }
    }
    if ($ENV{TEST_NGINX_REUSE_PORT}) {
        $listen_opts .= ' reuseport';
    }

    my $conf = <<_EOC_;
worker_processes  $Workers;
daemon $DaemonEnabled;
master_process $master;
error_log $ErrLogFile $log_level;
pid       $PidFile;
env LD_PRELOAD;
env LD_LIBRARY_PATH;
env ASAN_OPTIONS;
_EOC_

    for my $v (@EnvToNginx) {
        my $quoted = $v =~ /\s/ ? "'$v'" : $v;
        $conf .= "env $quoted;\n";
    }

    $conf .= <<_EOC_;

$main_config

http {
    access_log $AccLogFile;

    default_type text/plain;
    keepalive_timeout  68;

$http_config

    server {
        listen          $ServerPort$listen_opts;
        server_name     '$server_name';
$http2_on
        client_max_body_size 30M;

        # Begin preamble config...
$ConfigPreamble
        # End preamble config...

        # Begin test case config...
$config
        # End test case config.

_EOC_

    if (!$NoRootLocation) {
        $conf .= <<_EOC_;
        location / {
            root $HtmlDir;
            index index.html index.htm;
        }
_EOC_
    }

    $conf .= "    }\n";

    if ($use_hup) {
        # lets the runner see which configuration the workers serve
        $conf .= <<_EOC_;

    server {
        listen          $ServerPort$listen_opts;
        server_name     'Test-Nginx';
$http2_on
        location = /ver {
            return 200 '$ConfigVersion';
        }
    }
_EOC_
    }

    $conf .= <<_EOC_;
}

$post_main_config

events {
    accept_mutex off;
    worker_connections  $WorkerConnections;
}
_EOC_

    if ($> == 0 && $conf !~ /^\s*user\s/m) {
        $conf .= "user root;\n";
    }

    write_file($ConfFile, $conf);
}


# ---------------------------------------------------------------------------
# logs

sub read_lines ($;$) {
    my ($file, $pos) = @_;

    open my $in, '<', $file or return ([], $pos // 0);
    if ($pos) {
        my $size = -s $in;
        # the file was truncated since (HUP mode): start over
        $pos = 0 if $size < $pos;
        seek $in, $pos, 0;
    }
    my @lines = <$in>;
    my $end = tell $in;
    close $in;

    return (\@lines, $end);
}

sub error_log_data () {
    return $ErrLogLines if defined $ErrLogLines;

    # lines logged in the log phase come after the connection is closed
    sleep $TestNginxSleep * 3;

    my ($lines, $end) = read_lines($ErrLogFile,
                                   $CheckAccumErrLog ? 0 : $ErrLogFilePos);
    $ErrLogFilePos = $end unless $CheckAccumErrLog;

    return $lines;
}

sub access_log_data () {
    sleep $TestNginxSleep * 3;
    my ($lines) = read_lines($AccLogFile);
    return $lines;
}

# the last $n lines of a file, leaving out [debug] entries (and their
# continuation lines) unless there is nothing else
sub tail_file ($$) {
    my ($file, $n) = @_;
    my ($lines) = read_lines($file);
    my ($debug, @important) = (0);

    for my $line (@$lines) {
        if ($line =~ m{^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d \[(\w+)\]}) {
            $debug = $1 eq 'debug';
        }
        push @important, $line unless $debug;
    }

    my $pick = @important ? \@important : $lines;
    my $from = @$pick > $n ? @$pick - $n : 0;
    return join '', @{$pick}[$from .. $#$pick];
}

sub diag_logs ($) {
    my $name = shift;
    my $err = tail_file($ErrLogFile, 15);
    my $stderr = tail_file($StderrFile, 10);

    Test::More::diag("$name - nginx stderr:\n$stderr") if $stderr =~ /\S/;
    Test::More::diag("$name - tail of $ErrLogFile (without debug"
                     . " lines):\n$err") if $err =~ /\S/;
}


# ---------------------------------------------------------------------------
# starting and reloading

# runs nginx once; returns (exit status, stderr text)
sub run_nginx_cmd () {
    my @cmd = ($NginxBinary, '-p', "$ServRoot/", '-c', $ConfFile);

    my $pid = fork;
    if (!defined $pid) {
        bail_out("fork() failed: $!");
    }

    if ($pid == 0) {
        $InSubprocess = 1;
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', '/dev/null';
        open STDERR, '>', $StderrFile;
        exec { $cmd[0] } @cmd or POSIX::_exit(127);
    }

    waitpid $pid, 0;
    my $status = $?;

    open my $in, '<', $StderrFile;
    my $stderr = '';
    if ($in) {
        local $/;
        $stderr = <$in> // '';
        close $in;
    }

    return ($status, $stderr);
}

# true once process $pid holds a listening socket on $ServerPort; looked
# up in /proc rather than by connecting, so that the check neither logs
# anything nor mistakes another server on the same port for ours
sub listening_on_port ($$) {
    my ($pid, $limit) = @_;
    my $deadline = time + $limit;
    my $hex_port = sprintf '%04X', $ServerPort;

    for (;;) {
        my %inodes;
        for my $table ('/proc/net/tcp', '/proc/net/tcp6') {
            open my $in, '<', $table or next;
            while (my $line = <$in>) {
                my @f = split ' ', $line;
                next unless @f > 9 && $f[3] eq '0A';
                $inodes{$f[9]} = 1 if $f[1] =~ /:$hex_port$/;
            }
            close $in;
        }

        if (%inodes && opendir my $dh, "/proc/$pid/fd") {
            for my $fd (readdir $dh) {
                my $link = readlink("/proc/$pid/fd/$fd") // next;
                if ($link =~ /^socket:\[(\d+)\]$/ && $inodes{$1}) {
                    closedir $dh;
                    return 1;
                }
            }
            closedir $dh;
        }

        return 0 if time >= $deadline;
        sleep 0.02;
    }
}

# starts nginx from scratch; returns 1 on success
sub start_nginx ($) {
    my $name = shift;
    my $deadline = time + 1;

    for (;;) {
        my ($status, $stderr) = run_nginx_cmd();

        if ($status == 0) {
            # the daemon writes the pid file just after the parent exits
            my $until = time + $Timeout;
            while (!defined master_pid() && time < $until) {
                sleep 0.01;
            }
            if (!defined master_pid()) {
                Test::More::fail("$name - nginx started but is not"
                                 . " running (no live pid in $PidFile)");
                return 0;
            }
            if (!listening_on_port(master_pid(), $Timeout)) {
                Test::More::fail("$name - nginx does not accept"
                                 . " connections on port"
                                 . " $ServerPortForClient");
                return 0;
            }
            return 1;
        }

        # the previous instance may still hold the port for a moment
        if ($stderr =~ /Address already in use/ && time < $deadline) {
            sleep 0.5;
            next;
        }

        my $hint = '';
        if ($stderr =~ /Address already in use/) {
            $hint = "; port $ServerPort is busy: set TEST_NGINX_PORT and"
                    . " TEST_NGINX_SERVROOT, or TEST_NGINX_RANDOMIZE=1";
        }
        Test::More::fail("$name - cannot start nginx: "
                         . "$NginxBinary -p $ServRoot/ -c $ConfFile"
                         . " (status $status)$hint");
        return 0;
    }
}

sub gen_config_version () {
    my @chars = ('a' .. 'z', 'A' .. 'Z', '0' .. '9');
    return join '', map { $chars[int rand @chars] } 1 .. 12;
}

# asks the "Test-Nginx" server which configuration it serves
sub fetch_config_version ($) {
    my $block = shift;

    if (use_http2($block)) {
        my $out = `curl -sS --http2-prior-knowledge --max-time 2 -H 'Host: Test-Nginx' 'http://$ServerAddr:$ServerPortForClient/ver' 2>/dev/null`;
        return $out // '';
    }

    my $sock = IO::Socket::INET->new(PeerAddr => $ServerAddr,
                                     PeerPort => $ServerPortForClient,
                                     Proto => 'tcp', Timeout => 2)
        or return '';
    $sock->autoflush(1);
    print $sock "GET /ver HTTP/1.0\r\nHost: Test-Nginx\r\n\r\n";
    my $resp = '';
    my $deadline = time + 2;
    my $sel = IO::Select->new($sock);
    while (time < $deadline && $sel->can_read(0.5)) {
        my $n = sysread $sock, my $buf, 4096;
        last unless $n;
        $resp .= $buf;
    }
    close $sock;

    return $resp =~ /\r\n\r\n(.*)\z/s ? $1 : '';
}

# HUP reload of the running master; returns 1 when the new configuration
# is being served and the old workers are gone
sub reload_nginx ($$) {
    my ($block, $master) = @_;
    my $name = $block->name;

    my @old = children_of($master);

    if (!kill SIGHUP, $master) {
        Test::More::fail("$name - failed to send HUP to nginx $master");
        return 0;
    }

    if (defined $block->reload_fails) {
        sleep 0.3;
        return 1;
    }

    my $deadline = time + 10;
    my $ok = 0;
    while (time < $deadline) {
        if (fetch_config_version($block) eq $ConfigVersion) {
            last if ++$ok >= 5;
            next;
        }
        $ok = 0;

        # a rejected configuration: the master keeps the old one
        my ($lines) = read_lines($ErrLogFile);
        if (grep { /\[emerg\]/ } @$lines) {
            last;
        }

        sleep 0.02;
    }

    if ($ok < 5) {
        Test::More::fail("$name - nginx did not reload the configuration"
                         . " (HUP)");
        return 0;
    }

    # old workers finish their connections and exit; kvroute's reload
    # tests want only new workers around
    if (!wait_gone(\@old, 5)) {
        Test::More::diag("$name - WARNING: old nginx processes still"
                         . " alive after reload: @old");
    }

    return 1;
}


# ---------------------------------------------------------------------------
# the block loop

sub skip_count_for ($) {
    my $block = shift;
    my $name = $block->name;

    if (defined(my $spec = $block->skip_nginx)) {
        if ($spec =~ /^\s*(\d+)\s*:\s*([<>]=?)\s*(\d+)\.(\d+)\.(\d+)
                      (?:\s*:\s*(.*))?\s*$/x)
        {
            my ($n, $op, $ver) = ($1, $2, get_canon_version($3, $4, $5));
            my $reason = $6 || "nginx version $op $3.$4.$5";
            return ($n, $reason) if eval "$NginxVersion $op $ver";
            return;
        }
        bail_out("$name - Invalid --- skip_nginx spec: $spec");
    }

    if (defined(my $spec = $block->skip_eval)) {
        if ($spec =~ /^\s*(\d+)\s*:\s*(.*)/s) {
            my ($n, $code) = ($1, $2);
            my $skip = eval $code;
            if ($@) {
                bail_out("$name - skip_eval failed: $@");
            }
            return ($n, 'skip_eval') if $skip;
            return;
        }
        bail_out("$name - Invalid --- skip_eval spec: $spec");
    }

    return;
}

sub run_tests () {
    $NginxVersion = get_nginx_version();

    # TEST_NGINX_USE_HUP and TEST_NGINX_MASTER_PROCESS were read when the
    # module loaded, as the real Test::Nginx reads them: set later, they
    # are ignored there and here alike (use_hup(), master_on() instead)

    $ENV{TEST_NGINX_SERVER_PORT} //= $ServerPort;
    $ENV{TEST_NGINX_PORT} //= $ServerPort;

    my @blocks = Test::Base::blocks();
    @blocks = shuffle @blocks unless $NoShuffle;

    for my $block (@blocks) {
        for my $hdl (@BlockPreprocessors) {
            $hdl->($block);
        }

        $block->set_value('name', $0 . ' ' . $block->name);

        my $tb = Test::More->builder;
        my $failed_before = grep { !$_ } $tb->summary;

        run_test($block);

        my $failed_after = grep { !$_ } $tb->summary;
        if ($failed_after > $failed_before) {
            diag_logs($block->name);
        }

        $PrevBlock = $block;
    }

    cleanup();
}

sub check_shutdown_error_log ($) {
    my $block = shift;

    return unless defined $block;
    return unless defined $block->shutdown_error_log
                  || defined $block->no_shutdown_error_log;

    my $copy = bless { %$block }, ref $block;
    $copy->{error_log} = $block->{shutdown_error_log};
    $copy->{no_error_log} = $block->{no_shutdown_error_log};
    delete $copy->{grep_error_log};
    $CheckErrorLog->($copy, undef, 0, 0, 0);
}

sub run_test ($) {
    my $block = shift;
    my $name = $block->name;

    return if defined $block->SKIP;

    my $first_time = $FirstTime;
    $FirstTime = 0;

    my ($skip_n, $skip_reason) = skip_count_for($block);
    if (defined $skip_n) {
        SKIP: {
            Test::More::skip("$name - $skip_reason", $skip_n * $RepeatEach);
        }
        return;
    }

    my $config = expand_env_in_text($block->config, $name);

    my $must_die = $block->must_die;
    my $use_hup = $UseHup && !defined $must_die;

    if (!$NoNginxManager) {
        if (!defined $config) {
            if (!defined $PrevBlock) {
                bail_out("$name - No '--- config' section specified and"
                         . " there is no previous one");
            }
            $config = expand_env_in_text($PrevBlock->config, $name);
            $block->set_value('config', $PrevBlock->config);
        }

        if ($first_time) {
            kill_leftovers($name);
        }

        my $master = master_pid();
        my $started = 0;

        if ($use_hup && defined $master && !$first_time) {
            # keep the master (and its shared memory); start the block's
            # logs afresh: nginx appends (O_APPEND), so truncation is safe
            $ConfigVersion = gen_config_version();
            setup_server_root(1);
            for my $log ($ErrLogFile, $AccLogFile) {
                truncate $log, 0 if -f $log;
            }
            write_user_files($block);
            write_config_file($block, $config, 1);

            return unless reload_nginx($block, $master);
            $started = 1;
        }

        if (!$started) {
            stop_nginx($name);
            check_shutdown_error_log($PrevBlock) unless $use_hup;

            $ConfigVersion = gen_config_version();
            setup_server_root(0);
            write_user_files($block);
            write_config_file($block, $config, $use_hup);

            if (defined $must_die) {
                run_must_die($block, $must_die);
                return;
            }

            return unless start_nginx($name);
        }
    }

    if (defined(my $init = $block->init)) {
        eval $init;
        if ($@) {
            bail_out("$name - init failed: $@");
        }
    }

    $ErrLogFilePos = 0;
    for my $i (1 .. $RepeatEach) {
        if (defined $block->todo) {
            my ($n, $reason) = $block->todo =~ /^\s*(\d+)\s*:\s*(.*)/s;
            TODO: {
                Test::More::todo_skip("$name - " . ($reason // 'todo'),
                                      $n // 1);
            }
            next;
        }
        $RunTestHelper->($block, 0, $i - 1);
    }
}

sub run_must_die ($$) {
    my ($block, $must_die) = @_;
    my $name = $block->name;

    for my $i (1 .. $RepeatEach) {
        my ($status, $stderr) = run_nginx_cmd();
        my $exit_code = $status >> 8;

        if ($status & 127) {
            Test::More::fail("$name - nginx was killed by signal "
                             . ($status & 127));

        } elsif ($must_die =~ /^\s*(\d+)\s*$/) {
            Test::More::is($exit_code, $1,
                           "$name - die with the expected exit code");

        } else {
            Test::More::isnt($status, 0, "$name - die as expected");
        }

        # nginx reports config errors on stderr (Debian's default error
        # log is stderr), so check both
        $ErrLogFilePos = 0;
        my $lines = error_log_data();
        push @$lines, map { "$_\n" } split /\n/, $stderr;
        local $ErrLogLines = $lines;
        local $InMustDie = 1;
        $CheckErrorLog->($block, undef, 0, $i - 1, 0);

        if ($status == 0) {
            warn "WARNING: $name - nginx must die but it does not;"
                 . " killing it\n";
            my $until = time + 1;
            sleep 0.01 while !defined read_pid_file() && time < $until;
            stop_nginx($name);
        }
    }
}

END {
    return if $InSubprocess;

    local $?;

    cleanup();

    if (!$ENV{TEST_NGINX_NO_CLEAN} && !$NoNginxManager) {
        stop_nginx('END');
        check_shutdown_error_log($PrevBlock) if $CheckErrorLog;
    }

    if ($ENV{TEST_NGINX_RANDOMIZE} && $ServRoot =~ m{/t/servroot_\d+$}) {
        remove_tree($ServRoot);
    }
}

1;
