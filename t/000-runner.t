# Self-test of the Test::Nginx::Socket runner in t/lib, with stock nginx
# and the echo module only (no kvroute).  Each block exercises one
# feature; the last part runs a small file of deliberately wrong
# expectations and checks that every one of them is reported as a failure.

use Test::Nginx::Socket;
use File::Spec ();
use File::Temp ();

$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';

repeat_each(1);

# subtests per block, counted the way real Test::Nginx counts them: one
# for the status, one per response check, one per log pattern, and the
# log checks again after every request but the last of a multi-request
# block; must_die blocks get one for the exit plus their log patterns.
# The last 3 are the failure-detection checks after run_tests().
my @per_block = (3, 2, 5, 3, 2, 3, 9, 3, 2, 5, 2, 2, 2, 4, 2, 2);
plan tests => repeat_each() * eval(join '+', @per_block) + 3;

add_block_preprocessor(sub {
    my $block = shift;
    if (!defined $block->main_config) {
        $block->set_value('main_config',
                          "load_module \$TEST_NGINX_ECHO_SO;\n");
    }
});

no_shuffle();
run_tests();

# --- failure detection ------------------------------------------------
# each block below breaks exactly the expectations named in @must_fail

my $inner = <<'_EOT_';
use Test::Nginx::Socket 'no_plan';
no_shuffle();
run_tests();
@@DATA@@
=== TEST 1: wrong body
--- config
location = /t { return 200 "ok\n"; }
--- request
GET /t
--- response_body
nope
=== TEST 2: wrong status
--- config
location = /t { return 200 "ok\n"; }
--- request
GET /t
--- error_code: 404
=== TEST 3: wrong headers
--- config
location = /t { add_header X-Foo bar; return 200 "ok\n"; }
--- request
GET /t
--- response_headers
X-Foo: baz
!Content-Type
=== TEST 4: log patterns
--- config
location = /t { deny all; }
--- request
GET /t
--- error_code: 403
--- error_log
this line is never logged
--- no_error_log
access forbidden by rule
=== TEST 5: timeout
--- main_config
load_module $TEST_NGINX_ECHO_SO;
--- config
location = /t { echo_sleep 2; echo late; }
--- request
GET /t
--- timeout: 0.5
=== TEST 6: must_die on a good config
--- config
location = /t { return 200; }
--- must_die
=== TEST 7: body pattern
--- config
location = /t { return 200 "ok\n"; }
--- request
GET /t
--- response_body_like: ^nope$
_EOT_

# a literal data marker here would end Test::Base's source filter early
$inner =~ s/^\@\@DATA\@\@$/__DATA__/m;

my @must_fail = (
    qr/TEST 1: wrong body - response_body/,
    qr/TEST 2: wrong status - status code ok/,
    qr/TEST 3: wrong headers - header X-Foo ok/,
    qr/TEST 3: wrong headers - header Content-Type not present/,
    qr/TEST 4: log patterns - pattern "this line is never logged" should match/,
    qr/TEST 4: log patterns - pattern "access forbidden by rule" should not match/,
    qr/client socket timed out - \S+ TEST 5: timeout/,
    qr/TEST 5: timeout - status code ok/,
    qr/TEST 6: must_die on a good config - die as expected/,
    qr/TEST 7: body pattern - response_body_like/,
);

{
    my $dir = File::Temp::tempdir(CLEANUP => 1);
    my $file = "$dir/inner.t";
    open my $out, '>', $file or die "$file: $!";
    print $out $inner;
    close $out;

    (my $lib = $INC{'Test/Nginx/Socket.pm'}) =~ s{/Test/Nginx/Socket\.pm$}{};
    $lib = File::Spec->rel2abs($lib);

    # its own port and server root, so it cannot disturb this file's nginx
    local %ENV = %ENV;
    delete @ENV{grep { /^TEST_NGINX_/ && !/^TEST_NGINX_(?:BINARY|ECHO_SO)$/ }
                keys %ENV};
    $ENV{TEST_NGINX_RANDOMIZE} = 1;

    my $tap = `cd $dir && $^X -I$lib $file 2>&1`;
    my @not_ok = grep { /^not ok/ } split /\n/, $tap;

    my @missing = grep { my $re = $_; !grep { $_ =~ $re } @not_ok }
                  @must_fail;
    is(scalar @not_ok, scalar @must_fail,
       'failure detection: one failure per broken expectation')
        or diag($tap);
    ok(!@missing, 'failure detection: every broken expectation reported')
        or diag("not reported: @missing\n$tap");
    like($tap, qr/^ok \d+ - \S+ TEST 1: wrong body - status code ok/m,
         'failure detection: the right parts still pass');
}

__DATA__

=== TEST 1: response_body
--- config
    location = /t {
        return 200 "hello\n";
    }
--- request
GET /t
--- response_body
hello
--- no_error_log
[error]



=== TEST 2: error_code and response_body_like
--- config
    location = /t {
        return 200 "unused\n";
    }
--- request
GET /no/such/file
--- error_code: 404
--- response_body_like: 404 Not Found



=== TEST 3: response_headers, including an absent one
--- config
    location = /t {
        add_header X-Foo bar;
        return 200 "hdr\n";
    }
--- request
GET /t
--- response_headers
X-Foo: bar
Content-Type: text/plain
!X-Absent
--- response_body
hdr



=== TEST 4: response_headers_like and response_body_like eval
--- config
    location = /t {
        add_header X-Foo bar42;
        return 200 "hdr\n";
    }
--- request
GET /t
--- response_headers_like
X-Foo: bar\d+
--- response_body_like eval
qr/^hdr$/m



=== TEST 5: more_headers reach nginx
--- config
    location = /t {
        return 200 "x-test=$http_x_test\n";
    }
--- more_headers
X-Test: hello there
--- request
GET /t
--- response_body
x-test=hello there



=== TEST 6: POST with a body (chunked response from echo)
--- config
    location = /echo {
        echo_read_request_body;
        echo_request_body;
    }
--- request
POST /echo
hello world
--- response_headers
Transfer-Encoding: chunked
--- response_body chomp
hello world



=== TEST 7: request eval with three requests
--- config
    location = /a {
        return 200 "A\n";
    }
    location = /b {
        return 404;
    }
    location = /echo {
        echo_read_request_body;
        echo_request_body;
    }
--- request eval
["GET /a", "GET /b", "POST /echo\nxyz"]
--- error_code eval
[200, 404, 200]
--- response_body_like eval
[qr/^A\n\z/, qr/404 Not Found/, qr/^xyz\z/]
--- no_error_log
[error]



=== TEST 8: raw_request with a chunked body sent in two pieces
# nginx times the request from the first piece: 0.5 s later the second
# arrives; without the delay it would take a few milliseconds (the 0.2 s
# margin absorbs a slow scheduler)
--- http_config
    log_format rt 'rt=$request_time';
--- config
    location = /echo {
        access_log $TEST_NGINX_SERVER_ROOT/logs/access.log rt;
        echo_read_request_body;
        echo_request_body;
    }
--- raw_request eval
["POST /echo HTTP/1.1\r
Host: localhost\r
Connection: close\r
Transfer-Encoding: chunked\r
\r
5\r
hello\r
",
"6\r
 world\r
0\r
\r
"]
--- raw_request_middle_delay: 0.5
--- response_body chomp
hello world
--- access_log eval
qr/^rt=(?:0\.[3-9]|[1-9])/



=== TEST 9: error_log sees the request's log lines
--- config
    location = /t {
        deny all;
    }
--- request
GET /t
--- error_code: 403
--- error_log
access forbidden by rule



=== TEST 10: error_log and no_error_log with eval arrays
--- config
    location = /t {
        deny all;
    }
--- request
GET /t
--- error_code: 403
--- error_log eval
[qr/\[error\] \d+#\d+: \*\d+ access forbidden/, "client: 127.0.0.1"]
--- no_error_log eval
[qr/\[alert\]/, "[emerg]"]



=== TEST 11: must_die with a bad directive
# the message is on nginx's stderr (Debian's default error log), which
# this runner checks too; the real Test::Nginx does not
--- config
    location = /t {
        no_such_directive_here;
    }
--- request
GET /t
--- must_die
--- error_log
unknown directive "no_such_directive_here"



=== TEST 12: http2 through curl
--- config
    location = /t {
        return 200 "proto=$server_protocol\n";
    }
--- http2
--- request
GET /t
--- response_body
proto=HTTP/2.0



=== TEST 13: $TEST_NGINX_* expansion in config sections
--- config
    location = /t {
        return 200 "port=$TEST_NGINX_SERVER_PORT root=$TEST_NGINX_SERVER_ROOT\n";
    }
--- request
GET /t
--- response_body eval
"port=$ENV{TEST_NGINX_SERVER_PORT} root=$ENV{TEST_NGINX_SERVER_ROOT}\n"



=== TEST 14: pipelined requests on one connection
--- config
    location = /a {
        return 200 "A\n";
    }
    location = /b {
        return 200 "conn=$connection_requests\n";
    }
--- pipelined_requests eval
["GET /a", "GET /b"]
--- response_body eval
["A\n", "conn=2\n"]



=== TEST 15: HEAD request: headers only
--- config
    location = /a {
        return 200 "A\n";
    }
--- request
HEAD /a
--- response_body



=== TEST 16: comments before the request line, HTTP/1.0
--- config
    location = /proto {
        return 200 "$server_protocol\n";
    }
--- request
# the runner skips comment lines
GET /proto HTTP/1.0
--- response_body
HTTP/1.0
