package Kvroute::Emulator;

# Starts the bench's engine emulator (bench/emulator/main.js) for a test
# file, and other node scripts beside it (start_node), and stops them when
# the file ends.

use strict;
use warnings;

use Exporter 'import';
use POSIX ();

our @EXPORT = qw(start_emulator start_node);

my @pids;

# start_node(LOG, SCRIPT, ARGS...): node SCRIPT ARGS in the background,
# its output in LOG
sub start_node {
    my ($log, @cmd) = @_;

    unlink $log;

    my $pid = fork();
    die "fork: $!" unless defined $pid;

    if ($pid == 0) {
        open STDOUT, '>', $log or POSIX::_exit(127);
        open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
        exec('node', @cmd) or POSIX::_exit(127);
    }

    push @pids, $pid;

    return $pid;
}

# start_emulator(engines => 2, base_port => P, log => FILE, args => [...])
sub start_emulator {
    my %o = @_;
    my $log = $o{log} || 't/emulator.log';

    my $pid = start_node($log, 'bench/emulator/main.js',
                         '--engines', $o{engines} || 2,
                         '--base-port', $o{base_port}, '--time-scale', 20,
                         @{ $o{args} || [] });

    for (1 .. 300) {
        if (open my $fh, '<', $log) {
            local $/;
            return $pid if <$fh> =~ /^ready/m;
        }
        select(undef, undef, undef, 0.1);
    }

    die "the emulator did not start (see $log)";
}

# the last started first: a client before the engine it loads
END { kill 'TERM', reverse @pids if @pids }

1;
