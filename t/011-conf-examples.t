# The example configurations in conf/ pass `nginx -t` with the module as
# built (load_module pointed at it, log paths into a scratch prefix).

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Temp qw(tempdir);
use Test::More;

my $nginx = $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx';
my $so = $ENV{TEST_NGINX_KVROUTE_SO} || 'build/ngx_http_kvroute_module.so';

plan skip_all => "no $so (make module)" unless -f $so;
$so = abs_path($so);

my @examples = glob 'conf/*.conf';
ok(@examples >= 2, 'conf/ holds the vLLM and SGLang examples');

for my $example (@examples) {
    my $prefix = tempdir(CLEANUP => 1);
    mkdir "$prefix/logs";

    open my $in, '<', $example or die "$example: $!";
    my $text = do { local $/; <$in> };
    close $in;

    like($text, qr/^load_module modules\/ngx_http_kvroute_module\.so;$/m,
         "$example loads the module as installed");
    $text =~ s{^load_module modules/ngx_http_kvroute_module\.so;}
              {load_module $so;}m;
    $text =~ s{/var/log/nginx/}{$prefix/logs/}g;

    open my $out, '>', "$prefix/nginx.conf" or die;
    print $out $text;
    close $out;

    my $result = `$nginx -t -p $prefix -c $prefix/nginx.conf -g "pid $prefix/nginx.pid; error_log $prefix/logs/error.log;" 2>&1`;
    is($?, 0, "$example passes nginx -t") or diag($result);
}

done_testing();
