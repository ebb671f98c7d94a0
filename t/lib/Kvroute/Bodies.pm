package Kvroute::Bodies;

# Request bodies for kvroute's tests: OpenAI chat and completions requests
# whose prompts share a prefix chosen by number.

use strict;
use warnings;

use Exporter 'import';
use JSON::PP ();

our @EXPORT = qw(chat_body completions_body prefix_text chat_request
                 completions_request status_request);

my $json = JSON::PP->new->canonical(1);

# about $words words of text, the same for the same $id
sub prefix_text {
    my ($id, $words) = @_;
    $words //= 300;
    my @w;
    for my $i (1 .. $words) {
        push @w, "w" . (($id * 7919 + $i * 104729) % 100000);
    }
    return "You are assistant $id. " . join(' ', @w) . ".";
}

sub chat_body {
    my ($id, $question, %opt) = @_;
    my $body = {
        model    => $opt{model} // 'test-model',
        messages => [
            { role => 'system', content => prefix_text($id, $opt{words}) },
            { role => 'user',   content => $question },
        ],
        max_tokens => 8,
    };
    $body->{cache_salt} = $opt{salt} if defined $opt{salt};
    return $json->encode($body);
}

sub completions_body {
    my ($id, $tail, %opt) = @_;
    return $json->encode({
        model  => $opt{model} // 'test-model',
        prompt => prefix_text($id, $opt{words}) . " " . $tail,
        max_tokens => 8,
    });
}

sub chat_request {
    return "POST /v1/chat/completions\n" . chat_body(@_);
}

sub completions_request {
    return "POST /v1/completions\n" . completions_body(@_);
}

sub status_request {
    return "GET /kvroute_status";
}

1;
