package Test::Nginx::Socket;

# kvroute's own runner for the Test::Nginx::Socket block format
# (openresty/test-nginx), written because Test::Nginx is not packaged in
# Debian 12.  Test files written for it run unchanged under the real
# module.  This half builds and sends the requests and checks the
# responses and logs; Test::Nginx::Util manages nginx.  See t/README.md.

use Test::Base -base;

use Digest::MD5 ();
use Digest::SHA ();
use Errno qw( EAGAIN EINTR EWOULDBLOCK );
use HTTP::Response ();
use IO::Select ();
use IO::Socket::INET ();
use Time::HiRes qw( sleep time );

use Test::Nginx::Util;

our $VERSION = '0.29-kvroute';

our @EXPORT = qw(
    env_to_nginx is_str run_tests run_test repeat_each config_preamble
    worker_connections master_process_enabled no_long_string workers
    master_on master_off log_level no_shuffle no_root_location use_hup
    server_name server_addr server_root html_dir server_port
    server_port_for_client timeout no_nginx_manager check_accum_error_log
    add_block_preprocessor bail_out add_cleanup_handler
    add_response_body_check
);

our @ResponseBodyChecks;

sub xenv ($$$);
sub parse_response ($$$);

$Test::Nginx::Util::RunTestHelper = \&run_test_helper;
$Test::Nginx::Util::CheckErrorLog = \&check_error_log;

sub add_response_body_check ($) {
    push @ResponseBodyChecks, shift;
}


# ---------------------------------------------------------------------------
# building requests

# $TEST_NGINX_* in a request or response section (an extension: real
# Test::Nginx expands only the nginx.conf sections)
sub xenv ($$$) {
    my ($value, $name, $section) = @_;

    return $value unless defined $value;

    if (!ref $value) {
        return Test::Nginx::Util::expand_env_in_text($value, $name, $section);
    }

    if (ref $value eq 'ARRAY') {
        return [map { xenv($_, $name, $section) } @$value];
    }

    if (ref $value eq 'HASH' && exists $value->{value}) {
        return { %$value,
                 value => xenv($value->{value}, $name, $section) };
    }

    return $value;
}

sub parse_more_headers ($) {
    my $in = shift;
    my ($out, $is_chunked) = ('', 0);

    for my $header (split /\n+/, $in) {
        next if $header =~ /^\s*#/ || $header !~ /\S/;
        my ($key, $val) = split /:\s*/, $header, 2;
        $val = '' unless defined $val;
        $val =~ s/\r$//;
        if (lc($key) eq 'transfer-encoding' && $val eq 'chunked') {
            $is_chunked = 1;
        }
        $out .= "$key: $val\r\n";
    }

    return ($out, $is_chunked);
}

# turns "METHOD [URI [PROTOCOL]]\nbody" (possibly split into packets)
# into a full HTTP/1 request split at the corresponding places
sub build_request ($$$$$) {
    my ($name, $more_headers, $is_chunked, $conn, $packets) = @_;

    my @values = map { ref $_ ? $_->{value} : $_ } @$packets;
    $_ = '' for grep { !defined } @values;
    my $all = join '', @values;

    my ($first, $content) = $all =~ /\A([^\n]*\n?)(.*)\z/s;

    if ($first !~ /\S/) {
        bail_out("$name - Request line should be non-empty");
    }

    my ($meth, $url, $ver) = $first =~
        /^\s*(\S+)(?:[ ]+(\S+))?(?:[ ]+(\S+))?\s*$/;
    if (!defined $meth) {
        bail_out("$name - Request line is not valid. Should be"
                 . " 'meth [url [version]]' but got \"$first\".");
    }
    $url = '/' unless defined $url;
    $ver = 'HTTP/1.1' unless defined $ver;

    my $lead = 0;
    my $len_header = '';
    if (!$is_chunked && $content ne ''
        && $more_headers !~ /(?:^|\n)Content-Length:/)
    {
        $content =~ /\A(\s*)/;
        $lead = length $1;
        $content =~ s/^\s+|\s+$//gs;
        $len_header = 'Content-Length: ' . length($content) . "\r\n";
    }

    $more_headers =~ s/(?<!\r)\n/\r\n/gs;

    my $headers = '';
    if ($more_headers !~ /(?:^|\n)Host:/msi) {
        $headers .= "Host: $Test::Nginx::Util::ServerName\r\n";
    }
    if ($more_headers !~ /(?:^|\n)Connection/msi) {
        $headers .= "Connection: $conn\r\n";
    }
    $headers .= "$more_headers$len_header\r\n";

    my $line = "$meth $url $ver";
    my $head = "$line\r\n$headers";
    my $req = $head . $content;

    # map the packet boundaries of the source onto the built request
    my @pieces;
    my ($src_end, $prev) = (0, 0);
    for my $i (0 .. $#$packets) {
        my $last = $i == $#$packets;
        $src_end += length $values[$i];

        my $cut;
        if ($last) {
            $cut = length $req;

        } elsif ($src_end < length $first) {
            $cut = $src_end < length $line ? $src_end : length $line;

        } else {
            my $off = $src_end - length($first) - $lead;
            $off = 0 if $off < 0;
            $off = length $content if $off > length $content;
            $cut = length($head) + $off;
        }
        $cut = $prev if $cut < $prev;

        my $piece = ref $packets->[$i] ? { %{ $packets->[$i] } } : {};
        $piece->{value} = substr $req, $prev, $cut - $prev;
        push @pieces, $piece;
        $prev = $cut;
    }

    return \@pieces;
}

sub headers_for ($$$) {
    my ($name, $more_headers, $i) = @_;

    if (ref $more_headers eq 'ARRAY') {
        my $hdr = $more_headers->[$i];
        if (!defined $hdr) {
            bail_out("$name - --- more_headers lacks data for the"
                     . " request $i");
        }
        return parse_more_headers($hdr);
    }

    return parse_more_headers($more_headers);
}

# a list of requests; each request is a list of pieces
# { value => bytes, delay_before => seconds }
sub get_req_from_block ($) {
    my $block = shift;
    my $name = $block->name;
    my @reqs;

    if (defined $block->raw_request) {
        my $raw = xenv($block->raw_request, $name, 'raw_request');
        if (ref $raw eq 'ARRAY') {
            push @reqs, [map { ref $_ ? { %$_ } : { value => $_ } } @$raw];
        } else {
            push @reqs, [{ value => $raw }];
        }
        return \@reqs;
    }

    my $more_headers = xenv($block->more_headers // '', $name,
                            'more_headers');

    if (defined(my $pipelined = $block->pipelined_requests)) {
        if (ref $pipelined ne 'ARRAY') {
            bail_out("$name - invalid entries in --- pipelined_requests");
        }
        $pipelined = xenv($pipelined, $name, 'pipelined_requests');
        my $all = '';
        for my $i (0 .. $#$pipelined) {
            my ($hdr, $chunked) = headers_for($name, $more_headers, $i);
            my $conn = $i == $#$pipelined ? 'close' : 'keep-alive';
            my $pieces = build_request($name, $hdr, $chunked, $conn,
                                       [$pipelined->[$i]]);
            $all .= join '', map { $_->{value} } @$pieces;
        }
        push @reqs, [{ value => $all }];
        return \@reqs;
    }

    my $request = $block->request;
    if (!defined $request && defined $block->request_eval) {
        $request = eval $block->request_eval;
        warn $@ if $@;
    }
    return \@reqs unless defined $request;

    $request = xenv($request, $name, 'request');

    if (!ref $request) {
        # comment lines may precede the request line
        1 while $request =~ s/^\s*#[^\n]+\s+|^\s+//gs;
        my ($hdr, $chunked) = headers_for($name, $more_headers, 0);
        push @reqs, build_request($name, $hdr, $chunked, 'close',
                                  [$request]);
        return \@reqs;
    }

    if (ref $request ne 'ARRAY') {
        bail_out("$name - invalid --- request: MUST be a string or an"
                 . " array of requests");
    }

    for my $i (0 .. $#$request) {
        my $one = $request->[$i];
        my ($hdr, $chunked) = headers_for($name, $more_headers, $i);
        my $packets = ref $one eq 'ARRAY' ? $one : [$one];
        for my $p (@$packets) {
            if (ref $p && ref $p ne 'HASH') {
                bail_out("$name - Invalid syntax: a packet must be a"
                         . " string or a hash with a value");
            }
        }
        push @reqs, build_request($name, $hdr, $chunked, 'close',
                                  $packets);
    }

    return \@reqs;
}


# ---------------------------------------------------------------------------
# sending

sub connect_to_server ($$) {
    my ($name, $timeout) = @_;
    my $addr = $Test::Nginx::Util::ServerAddr;
    my $port = $Test::Nginx::Util::ServerPortForClient;
    my $wait = 0.015;
    my $err;

    for my $try (1 .. 20) {
        my $sock = IO::Socket::INET->new(PeerAddr => $addr,
                                         PeerPort => $port,
                                         Proto => 'tcp',
                                         Timeout => $timeout);
        return $sock if $sock;
        $err = $!;
        sleep $wait;
        $wait *= 1.5;
        $wait = 0.5 if $wait > 0.5;
    }

    Test::More::fail("$name - Can't connect to $addr:$port: $err");
    return undef;
}

# sends the pieces on one connection and reads until the server closes
# it; the timeout bounds the time between two I/O events
sub send_request ($$$$) {
    my ($pieces, $middle_delay, $timeout, $block) = @_;
    my $name = $block->name;

    my $head_req = (join '', map { $_->{value} // '' } @$pieces)
                   =~ /^\s*HEAD\s+/ ? 1 : 0;

    if (Test::Nginx::Util::use_http2($block)) {
        return (send_http_req_by_curl($block, $pieces, $timeout),
                $head_req);
    }

    my $sock = connect_to_server($name, $timeout) or return (undef, 0);
    $sock->blocking(0);

    local $SIG{PIPE} = 'IGNORE';

    my @todo = @$pieces;
    my $piece = shift @todo;
    my $buf = $piece->{value} // '';
    my $off = 0;
    my $next_write = 0;
    my $resp = '';

    for (;;) {
        my $now = time;
        my $writing = defined $buf;
        my $delayed = $writing && $now < $next_write;
        my $wait = $delayed ? $next_write - $now : $timeout;
        $wait = $timeout if $wait > $timeout;

        my $rset = '';
        vec($rset, fileno $sock, 1) = 1;
        my $wset = '';
        vec($wset, fileno $sock, 1) = 1 if $writing && !$delayed;

        my $n = select(my $rready = $rset, my $wready = $wset, undef, $wait);

        if ($n < 0) {
            next if $! == EINTR;
            warn "WARNING: $name - select() failed: $!\n";
            last;
        }

        if ($n == 0) {
            next if $delayed;
            if (!defined $block->abort) {
                Test::More::fail("ERROR: client socket timed out - $name");
            }
            last;
        }

        if (vec($rready, fileno $sock, 1)) {
            my $got = sysread $sock, my $data, 65536;
            if (!defined $got) {
                if ($! != EAGAIN && $! != EWOULDBLOCK && $! != EINTR) {
                    warn "WARNING: $name - HTTP response read failure:"
                         . " $!\n";
                    last;
                }
            } elsif ($got == 0) {
                last;
            } else {
                $resp .= $data;
            }
        }

        if ($writing && !$delayed && vec($wready, fileno $sock, 1)) {
            my $wrote = syswrite $sock, $buf, length($buf) - $off, $off;
            if (!defined $wrote) {
                if ($! != EAGAIN && $! != EWOULDBLOCK && $! != EINTR) {
                    # the server may answer and close early; keep reading
                    undef $buf;
                }
                next;
            }
            $off += $wrote;
            next if $off < length $buf;

            if (@todo) {
                $piece = shift @todo;
                $buf = $piece->{value} // '';
                $off = 0;
                my $delay = $piece->{delay_before} // $middle_delay;
                $next_write = time + ($delay || 0);

            } else {
                undef $buf;
                if (defined(my $how = $block->shutdown)) {
                    $how = 1 unless $how =~ /\d/;
                    shutdown $sock, $how + 0;
                }
            }
        }
    }

    close $sock;
    return ($resp, $head_req);
}

# curl command line for a built request (http2 mode and --- curl)
sub gen_curl_cmd_from_req ($$$) {
    my ($block, $pieces, $http2) = @_;
    my $name = $block->name;

    my $req = join '', map { $_->{value} // '' } @$pieces;

    my ($meth, $uri, $ver);
    if ($req =~ m{\G\s*(\w+)\s+(\S+)\s+HTTP/(\S+)\r?\n}gcs) {
        ($meth, $uri, $ver) = ($1, $2, $3);
    } else {
        bail_out("$name - cannot parse the request line in: $req");
    }

    my ($headers, $body) = ('', '');
    if ($req =~ m{\G(.*?)\r?\n\r?\n}gcs) {
        $headers = $1;
    }
    if ($req =~ m{\G(.+)}gcs) {
        $body = $1;
    }

    my @args = ('curl', '-i', '-sS', '-H', 'User-Agent:', '-H', 'Accept:');
    push @args, '--http2-prior-knowledge' if $http2;
    push @args, $meth eq 'HEAD' ? ('-I') : ('-X', $meth);
    push @args, '-0' if $ver ne '1.1' && !$http2;

    my $has_type;
    for my $h (split /\r?\n/, $headers) {
        next if $h =~ /^(?:Connection|Content-Length|Transfer-Encoding)\s*:/i;
        $has_type = 1 if $h =~ /^Content-Type\s*:/i;
        push @args, '-H', $h;
    }

    if ($body ne '') {
        push @args, '-H', 'Content-Type:' unless $has_type;
        my $file = html_dir() . '/curl.data.bin';
        open my $out, '>', $file or bail_out("Cannot write $file: $!");
        binmode $out;
        print $out $body;
        close $out;
        push @args, '--data-binary', "\@$file";
    }

    my $timeout = parse_time($block->timeout) || timeout();
    push @args, '--connect-timeout', $timeout, '--max-time', $timeout;

    if (defined(my $opts = $block->curl_options)) {
        push @args, split ' ', $opts;
    }

    my $proto = $block->curl_protocol // 'http';
    $proto =~ s/^\s+|\s+$//g;
    push @args, "$proto://$Test::Nginx::Util::ServerAddr:"
                . "$Test::Nginx::Util::ServerPortForClient$uri";

    return \@args;
}

sub quote_sh_arg ($) {
    my $arg = shift;
    return $arg if $arg =~ m{^[-\w.:/=@,+]+$};
    $arg =~ s/'/'\\''/g;
    return "'$arg'";
}

sub send_http_req_by_curl ($$$) {
    my ($block, $pieces, $timeout) = @_;
    my $name = $block->name;

    require IPC::Run;

    my $cmd = gen_curl_cmd_from_req($block, $pieces, 1);
    my ($in, $out, $err) = ('', '', '');

    my $ok = eval {
        IPC::Run::run($cmd, \$in, \$out, \$err,
                      IPC::Run::timeout($timeout + 2));
        1;
    };

    if (!$ok) {
        Test::More::fail("ERROR: client socket timed out - $name ($@)")
            unless defined $block->abort;
        return undef;
    }

    if ($out eq '') {
        Test::More::fail("$name - curl command \"@$cmd\" generates no"
                         . " stdout output: $err");
        return undef;
    }

    warn "WARNING: $name - curl stderr: $err" if $err ne '';

    return $out;
}


# ---------------------------------------------------------------------------
# parsing responses

sub parse_response ($$$) {
    my ($name, $raw, $head_req) = @_;

    my $raw_headers = $raw =~ /\A(.*?\r\n)\r\n/s ? $1 : '';

    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    $head = '' unless defined $head;
    $body = '' unless defined $body;

    my @lines = split /\r\n/, $head;
    my $status = shift @lines // '';

    my ($code, $msg);
    if ($status =~ m{^HTTP/\S+[ \t]+(\d{3})(?:[ \t]+(.*))?}) {
        ($code, $msg) = ($1, $2 // '');
    }

    # an interim response (100 Continue) precedes the real one
    if (defined $code && $code =~ /^1/ && $code != 101
        && $body =~ m{^HTTP/})
    {
        return parse_response($name, $body, $head_req);
    }

    my @headers;
    for my $line (@lines) {
        if ($line =~ /^[ \t]+(.*)/ && @headers) {
            $headers[-1] .= " $1";
            next;
        }
        my ($k, $v) = split /:[ \t]*/, $line, 2;
        next unless defined $k && $k ne '';
        $v = '' unless defined $v;
        $v =~ s/\s+$//;
        push @headers, $k, $v;
    }

    my $res = HTTP::Response->new($code, $msg, \@headers, $body);

    return ($res, $raw_headers) if !defined $code;
    return ($res, $raw_headers) if $code == 304 || $code == 101;

    my $enc = $res->header('Transfer-Encoding');
    my $len = $res->header('Content-Length');
    my $left;

    if (defined $enc && lc($enc) eq 'chunked') {
        my $decoded = '';
        my $pos = 0;

        for (;;) {
            pos($body) = $pos;
            if ($body =~ /\G0[ \t]*(?:;[^\r\n]*)?\r\n((?:[^\r\n]+\r\n)*)\r\n/gc)
            {
                $pos = pos $body;
                $left = substr $body, $pos if $pos < length $body;
                last;
            }

            pos($body) = $pos;
            if ($body =~ /\G[ \t]*([0-9A-Fa-f]+)[ \t]*(?:;[^\r\n]*)?\r\n/gc)
            {
                my $size = hex $1;
                $pos = pos $body;
                if (length($body) - $pos < $size + 2) {
                    Test::More::fail("$name - invalid chunked data received"
                                     . " (not enough octets for the data"
                                     . " section)");
                    return (undef, $raw_headers);
                }
                $decoded .= substr $body, $pos, $size;
                $pos += $size;
                if (substr($body, $pos, 2) ne "\r\n") {
                    Test::More::fail("$name - invalid chunked data"
                                     . " received (expected CRLF).");
                    return (undef, $raw_headers);
                }
                $pos += 2;
                next;
            }

            if ($pos < length $body) {
                Test::More::fail("$name - invalid chunked body received: "
                                 . substr($body, $pos, 40));
            } else {
                Test::More::fail("$name - no last chunk found - $body");
            }
            return (undef, $raw_headers);
        }

        $res->content($decoded);

    } elsif (defined $len && $len =~ /^\s*(\d+)\s*$/) {
        $len = $1;
        if (length $body < $len) {
            warn "WARNING: $name - response body truncated: $len expected,"
                 . " but got " . length($body) . "\n" unless $head_req;

        } elsif (length $body > $len) {
            $left = substr $body, $len;
            $res->content(substr $body, 0, $len);
        }
    }

    return ($res, $raw_headers, $left);
}


# ---------------------------------------------------------------------------
# checks (one subtest per check, as in real Test::Nginx, so that plans
# computed for it hold here)

sub get_indexed_value ($$$$) {
    my ($name, $value, $idx, $need_array) = @_;

    if (ref $value && ref $value eq 'ARRAY') {
        return $value->[$idx] if $need_array;
        return $value->[0];
    }

    if ($need_array) {
        # real Test::Nginx bails out here
        Test::More::fail("$name - You asked for many requests, the"
                         . " expected results should be arrays as well.");
    }

    return $value;
}

sub subst_port ($) {
    my $s = shift;
    return $s if !defined $s || ref $s;
    $s =~ s/\$ServerPortForClient\b/$Test::Nginx::Util::ServerPortForClient/g;
    $s =~ s/\$ServerPort\b/$Test::Nginx::Util::ServerPort/g;
    return $s;
}

sub check_error_code ($$$$) {
    my ($block, $res, $idx, $need_array) = @_;
    my $name = $block->name;
    my $got = ($res && $res->code) || '';

    if (defined $block->error_code_like) {
        my $val = get_indexed_value($name, $block->error_code_like, $idx,
                                    $need_array);
        Test::More::like($got, qr/$val/sm, "$name - status code ok");

    } elsif (defined $block->error_code) {
        my $val = get_indexed_value($name, $block->error_code, $idx,
                                    $need_array);
        Test::More::is($got, $val, "$name - status code ok");

    } else {
        Test::More::is($got, 200, "$name - status code ok");
    }
}

sub check_raw_response_headers ($$$$) {
    my ($block, $raw_headers, $idx, $need_array) = @_;
    my $name = $block->name;

    if (defined $block->raw_response_headers_like) {
        my $pat = get_indexed_value($name, $block->raw_response_headers_like,
                                    $idx, $need_array);
        Test::More::like($raw_headers, qr/$pat/s,
                         "$name - raw resp headers like");
    }

    if (defined $block->raw_response_headers_unlike) {
        my $pat = get_indexed_value($name,
                                    $block->raw_response_headers_unlike,
                                    $idx, $need_array);
        Test::More::unlike($raw_headers, qr/$pat/s,
                           "$name - raw resp headers unlike");
    }
}

sub check_response_headers ($$$$$) {
    my ($block, $res, $raw_headers, $idx, $need_array) = @_;
    my $name = $block->name;

    if (defined $block->response_headers) {
        my $spec = get_indexed_value($name,
                                     xenv($block->response_headers, $name,
                                          'response_headers'),
                                     $idx, $need_array);
        my $headers = parse_headers($spec // '');

        for my $key (sort keys %$headers) {
            my $val = $headers->{$key};

            if (!defined $val) {
                Test::More::unlike($raw_headers, qr/^\s*\Q$key\E\s*:/msi,
                    "$name - header $key not present in the raw headers");
                next;
            }

            $val = subst_port($val);
            my $got = $res ? $res->header($key) : undef;
            Test::More::is($got // '', $val, "$name - header $key ok");
        }

    } elsif (defined $block->response_headers_like) {
        my $spec = get_indexed_value($name,
                                     xenv($block->response_headers_like,
                                          $name, 'response_headers_like'),
                                     $idx, $need_array);
        my $headers = parse_headers($spec // '');

        for my $key (sort keys %$headers) {
            my $val = $headers->{$key} // '';
            my $got = $res ? $res->header($key) : undef;
            Test::More::like($got // '', qr/^$val$/,
                             "$name - header $key like ok");
        }
    }
}

sub run_body_filter ($$$) {
    my ($block, $filter, $content) = @_;
    my $name = $block->name;

    return $filter->($content) if ref $filter eq 'CODE';

    if (ref $filter) {
        bail_out("$name - --- response_body_filters only supports"
                 . " subroutine references and names");
    }

    my %builtin = (
        md5_hex  => \&Digest::MD5::md5_hex,
        sha1_hex => \&Digest::SHA::sha1_hex,
        uc       => sub { uc $_[0] },
        lc       => sub { lc $_[0] },
        ucfirst  => sub { ucfirst $_[0] },
        lcfirst  => sub { lcfirst $_[0] },
        length   => sub { length $_[0] },
    );

    my $f = $builtin{$filter}
        or bail_out("$name - unknown filter \"$filter\" in"
                    . " --- response_body_filters");

    return $f->($content);
}

sub transform_response_body ($$$) {
    my ($block, $res, $idx) = @_;

    return unless defined $res && defined $res->content;

    my $filters = $block->response_body_filters;
    return unless defined $filters;

    if (!ref $filters) {
        $filters =~ s/^\s+|\s+$//gs;
        $filters = [split /\s+/, $filters];
    } elsif (ref $filters ne 'ARRAY') {
        $filters = [$filters];
    }

    if (@$filters && ref $filters->[0] eq 'ARRAY') {
        $filters = $filters->[$idx]
            or bail_out($block->name . " - no --- response_body_filters"
                        . " for request $idx");
    }

    my $content = $res->content;
    for my $f (@$filters) {
        $content = run_body_filter($block, $f, $content);
    }
    $res->content($content);
}

sub check_response_body ($$$$$) {
    my ($block, $res, $idx, $repeated_idx, $need_array) = @_;
    my $name = $block->name;
    my $content = $res ? $res->content : undef;

    if (defined $block->response_body || defined $block->response_body_eval)
    {
        my $expected;
        if (defined $block->response_body_eval) {
            $expected = eval get_indexed_value($name,
                                               $block->response_body_eval,
                                               $idx, $need_array);
            warn $@ if $@;
        } else {
            $expected = get_indexed_value($name,
                                          xenv($block->response_body, $name,
                                               'response_body'),
                                          $idx, $need_array);
        }

        $expected = subst_port($expected);

        my $desc = "$name - response_body - response is expected"
                   . " (repeated req $repeated_idx, req $idx)";
        if (ref $expected) {
            Test::More::like($content, $expected,
                             "$name - response_body - like (repeated req"
                             . " $repeated_idx, req $idx)");
        } else {
            is_str($content, $expected, $desc);
        }

    } elsif (defined $block->response_body_like
             || defined $block->response_body_unlike)
    {
        my ($type, $patterns) = defined $block->response_body_like
            ? ('like', $block->response_body_like)
            : ('unlike', $block->response_body_unlike);

        my $pat = get_indexed_value($name,
                                    xenv($patterns, $name,
                                         "response_body_$type"),
                                    $idx, $need_array);
        $pat = subst_port("$pat");

        my $summary = trim($content) // '';
        $summary = substr($summary, 0, 60) . '...' if length $summary > 60;

        my $desc = "$name - response_body_$type - response is expected"
                   . " ($summary)";
        if ($type eq 'like') {
            Test::More::like($content, qr/$pat/s, $desc);
        } else {
            Test::More::unlike($content, qr/$pat/s, $desc);
        }
    }

    for my $check (@ResponseBodyChecks) {
        $check->($block, $content, $idx, $repeated_idx, 0);
    }
}

sub fmt_str ($) {
    my $s = shift;
    chomp $s;
    $s =~ s/"/\\"/g;
    $s =~ s/\r/\\r/g;
    $s =~ s/\n/\\n/g;
    return $s;
}

sub pattern_list ($) {
    my $pats = shift;

    if (!ref $pats) {
        chomp $pats;
        return [split /\n+/, $pats];
    }
    return [$pats] if ref $pats eq 'Regexp';
    return [@$pats];
}

sub line_matches ($$) {
    my ($line, $pat) = @_;
    return ref $pat ? $line =~ /$pat/ : index($line, $pat) >= 0;
}

# --- error_log / --- no_error_log (and the access_log pair) against the
# lines logged since the previous check
sub check_log_patterns ($$$$$) {
    my ($block, $what, $lines, $repeated_idx, $file) = @_;
    my $name = $block->name;

    if (defined(my $want = $block->$what)) {
        my $pats = pattern_list($want);
        for my $line (@$lines) {
            for my $pat (@$pats) {
                next unless defined $pat;
                if (line_matches($line, $pat)) {
                    Test::More::pass("$name - pattern \"$pat\" matches a"
                                     . " line in $file (req"
                                     . " $repeated_idx)");
                    undef $pat;
                }
            }
        }
        for my $pat (grep { defined } @$pats) {
            Test::More::fail("$name - pattern \"$pat\" should match a line"
                             . " in $file (req $repeated_idx)");
        }
    }

    my $neg = "no_$what";
    if (defined(my $unwanted = $block->$neg)) {
        my $pats = pattern_list($unwanted);
        my %found;
        for my $line (@$lines) {
            for my $pat (@$pats) {
                next unless defined $pat;
                if (line_matches($line, $pat)) {
                    $found{$pat} = 1;
                    Test::More::fail("$name - pattern \"" . fmt_str($pat)
                                     . "\" should not match any line in"
                                     . " $file but matches line \""
                                     . fmt_str($line) . "\" (req"
                                     . " $repeated_idx)");
                }
            }
        }
        for my $pat (@$pats) {
            next if !defined $pat || $found{$pat};
            Test::More::pass("$name - pattern \"" . fmt_str($pat) . "\" does"
                             . " not match a line in $file (req"
                             . " $repeated_idx)");
        }
    }
}

sub check_error_log ($$$$$) {
    my ($block, $res, $dry_run, $repeated_idx, $need_array) = @_;
    my $name = $block->name;
    my $lines;

    if (defined(my $grep = $block->grep_error_log)) {
        $grep = $grep->[$repeated_idx] if ref $grep eq 'ARRAY';
        my $expected = $block->grep_error_log_out;
        if (!defined $expected) {
            bail_out("$name - No --- grep_error_log_out defined but"
                     . " --- grep_error_log is defined");
        }
        $expected = $expected->[$repeated_idx] if ref $expected eq 'ARRAY';

        $lines ||= error_log_data();
        my $matched = '';
        for my $line (@$lines) {
            if (ref $grep ? $line =~ /$grep/ : $line =~ /\Q$grep\E/) {
                $matched .= "$&\n" if $& !~ /\n/;
            }
        }
        is_str($matched, $expected,
               "$name - grep_error_log_out (req $repeated_idx)");
    }

    if (defined $block->error_log || defined $block->no_error_log) {
        $lines ||= error_log_data();
        check_log_patterns($block, 'error_log', $lines, $repeated_idx,
                           'error.log');
    }

    # like real Test::Nginx, point out alerts nobody asked about (a
    # must_die block expects them)
    return if $Test::Nginx::Util::InMustDie;

    my $mentioned = join ' ', map { ref $_ eq 'ARRAY' ? "@$_" : "$_" }
                              grep { defined } $block->error_log,
                                               $block->no_error_log;
    $lines ||= error_log_data();
    for my $level (qw(alert crit emerg)) {
        next if index($mentioned, "[$level") >= 0;
        for my $line (@$lines) {
            warn "WARNING: $name - " . fmt_str($line) . "\n"
                if $line =~ /\[$level\]/;
        }
    }
}

sub check_access_log ($$) {
    my ($block, $repeated_idx) = @_;

    return unless defined $block->access_log
                  || defined $block->no_access_log;

    check_log_patterns($block, 'access_log', access_log_data(),
                       $repeated_idx, 'access.log');
}


# ---------------------------------------------------------------------------
# one run of a block (repeat_each runs it several times)

sub run_test_helper ($$$) {
    my ($block, $dry_run, $repeated_idx) = @_;
    my $name = $block->name;

    my $reqs = get_req_from_block($block);
    if (!@$reqs) {
        bail_out("$name - request empty");
    }

    if (defined $block->curl) {
        my $cmd = gen_curl_cmd_from_req($block, $reqs->[0],
                                        Test::Nginx::Util::use_http2($block));
        warn "# " . join(' ', map { quote_sh_arg($_) } @$cmd) . "\n";
    }

    my $timeout = parse_time($block->timeout);
    $timeout = timeout() unless defined $timeout && $timeout > 0;

    my $wait = parse_time($block->wait);
    my $idx = 0;
    my $res;

    for my $i (0 .. $#$reqs) {
        my ($raw, $head_req) = send_request($reqs->[$i],
                                            parse_time(
                                                $block
                                                ->raw_request_middle_delay),
                                            $timeout, $block);
        $raw = '' unless defined $raw;

        my ($n, $need_array);
        if (defined $block->pipelined_requests) {
            $n = @{ $block->pipelined_requests };
            $need_array = 1;
        } else {
            $need_array = @$reqs > 1;
        }

        for (;;) {
            my ($raw_headers, $left) = ('', undef);

            if (!defined $block->ignore_response) {
                if (defined $block->http09) {
                    $res = HTTP::Response->new(200, 'OK', [], $raw);
                } else {
                    ($res, $raw_headers, $left) =
                        parse_response($name, $raw, $head_req);
                }
            }

            if ($n) {
                $raw = $left // '';
                $n--;
            } elsif (defined $left && $left ne '') {
                warn "WARNING: $name - unexpected extra bytes after the"
                     . " response: \"" . fmt_str($left) . "\"\n";
            }

            if (!defined $block->ignore_response) {
                check_error_code($block, $res, $idx, $need_array);
                check_raw_response_headers($block, $raw_headers, $idx,
                                           $need_array);
                check_response_headers($block, $res, $raw_headers, $idx,
                                       $need_array);
                transform_response_body($block, $res, $idx);
                check_response_body($block, $res, $idx, $repeated_idx,
                                    $need_array);
            }

            # real Test::Nginx checks the logs after every request
            if ($n || $i < $#$reqs) {
                sleep $wait if $wait;
                check_error_log($block, $res, $dry_run, $repeated_idx,
                                $need_array);
                check_access_log($block, $repeated_idx)
                    unless defined $block->ignore_response;
            }

            $idx++;
            last unless $n;
        }
    }

    sleep $wait if $wait;

    check_error_log($block, $res, $dry_run, $repeated_idx, 0);
    check_access_log($block, $repeated_idx)
        unless defined $block->ignore_response;
}

1;
