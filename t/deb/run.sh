#!/usr/bin/env bash
# The Debian packages as a user gets them (mk/deb.mk, `make test-deb`):
#   1. dpkg -i installs the module and the CLI; the module's load file is
#      linked into /etc/nginx/modules-enabled;
#   2. nginx -t loads it from there: Debian's own nginx.conf, and a
#      configuration that includes modules-enabled/*.conf as Debian's does
#      and uses the kvroute directives (refused if the module is not loaded);
#   3. that configuration, on free ports, routes a request through a kvroute
#      upstream to a backend and reports it on the status page;
#   4. dpkg --purge removes both packages and leaves none of their files.
# Usage: t/deb/run.sh MODULE.deb CLI.deb   (as root)
set -euo pipefail

module_deb=$1 cli_deb=$2
pkgs="libnginx-mod-http-kvroute kvroute-tokenize"
enabled=/etc/nginx/modules-enabled/50-mod-http-kvroute.conf
available=/usr/share/nginx/modules-available/mod-http-kvroute.conf
nginx=/usr/sbin/nginx
n=0 failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else not_ok "$what"; fi; }

installed() {
    dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q 'ok installed'
}

[ "$(id -u)" = 0 ] || { echo "Bail out! dpkg -i needs root"; exit 1; }
for p in $pkgs; do
    if installed "$p"; then
        echo "Bail out! $p is installed already: this test would remove it"
        exit 1
    fi
done

dir=$(mktemp -d /tmp/kvroute-deb.XXXXXX)
nginx_pid=
cleanup() {
    if [ -n "$nginx_pid" ]; then kill "$nginx_pid" 2>/dev/null || true; fi
    for p in $pkgs; do
        if dpkg-query -W "$p" >/dev/null 2>&1; then
            dpkg --purge "$p" >/dev/null 2>&1 || true
        fi
    done
    rm -rf "$dir"
}
trap cleanup EXIT

free_port() {
    perl -MIO::Socket::INET -e \
        'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1")
             ->sockport'
}

# 1. install
dpkg -i "$module_deb" "$cli_deb" > "$dir/dpkg-i.log" 2>&1 \
    || { cat "$dir/dpkg-i.log"; echo "Bail out! dpkg -i failed"; exit 1; }
ok "dpkg -i $(basename "$module_deb") $(basename "$cli_deb")"
check "the module is in /usr/lib/nginx/modules" \
    test -f /usr/lib/nginx/modules/ngx_http_kvroute_module.so
check "$available loads it" \
    grep -qx 'load_module modules/ngx_http_kvroute_module.so;' "$available"
check "$enabled links to it" \
    test "$(readlink "$enabled")" = "$available"
abi=$(dpkg-query -W -f='${Provides}' nginx | grep -o 'nginx-abi-[^ ,]*')
check "the module depends on nginx's ABI ($abi)" \
    bash -c "dpkg-query -W -f='\${Depends}' libnginx-mod-http-kvroute \
             | grep -qw -- '$abi'"
check "kvroute-tokenize is on PATH" \
    bash -c 'kvroute-tokenize --help 2>&1 | grep -qi usage'

# 2. nginx -t through modules-enabled
check "nginx -t with Debian's nginx.conf" \
    $nginx -q -t

port=$(free_port) backend=$(free_port)
# load files name modules/...so relative to the prefix: Debian's prefix,
# /usr/share/nginx, links modules to /usr/lib/nginx/modules; so does this one
mkdir -p "$dir/logs"
ln -s "$(readlink -f /usr/share/nginx/modules)" "$dir/modules"
cat > "$dir/nginx.conf" <<CONF
include /etc/nginx/modules-enabled/*.conf;
pid $dir/logs/nginx.pid;
error_log $dir/logs/error.log info;
daemon off;
master_process on;
worker_processes 2;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    upstream llm {
        kvroute block_size=4;
        server 127.0.0.1:$backend;
    }
    server {
        listen 127.0.0.1:$backend;
        location / { return 200 "backend\n"; }
    }
    server {
        listen 127.0.0.1:$port;
        location / {
            proxy_pass http://llm;
            add_header X-Kvroute-Reason \$kvroute_reason always;
        }
        location = /kvroute_status { kvroute_status; }
    }
}
CONF
check "nginx -t loads kvroute through modules-enabled" \
    $nginx -q -t -p "$dir/" -c "$dir/nginx.conf"

# 3. a request through the kvroute upstream
$nginx -p "$dir/" -c "$dir/nginx.conf" 2> "$dir/logs/stderr.log" &
nginx_pid=$!
for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$port/kvroute_status" && break
    sleep 0.1
done
body='{"model":"m","prompt":"the same long prompt, over several blocks of text"}'
curl -s -D "$dir/headers" -o "$dir/response" -H 'Content-Type: application/json' \
    --data "$body" "http://127.0.0.1:$port/v1/completions" || true
check "the request reaches the backend" grep -qx backend "$dir/response"
check "kvroute routed it (X-Kvroute-Reason: home)" \
    grep -qi '^X-Kvroute-Reason: home' "$dir/headers"
curl -s -o "$dir/status" "http://127.0.0.1:$port/kvroute_status" || true
check "the status page counts it" \
    grep -q 'kvroute_decisions_total{[^}]*reason="home"[^}]*} 1' "$dir/status"
kill "$nginx_pid"; wait "$nginx_pid" || true; nginx_pid=

# 4. purge, nothing left
files=$(dpkg -L $pkgs | sort -u)
dpkg --purge $pkgs > "$dir/dpkg-purge.log" 2>&1 \
    || { cat "$dir/dpkg-purge.log"; not_ok "dpkg --purge"; }
ok "dpkg --purge $pkgs"
left=
for f in $files; do
    # directories other packages share stay, as they should
    if [ -e "$f" ] && [ ! -d "$f" ]; then left="$left $f"; fi
    if [ -d "$f" ] && [ -z "$(ls -A "$f")" ] \
        && ! dpkg -S "$f" >/dev/null 2>&1; then left="$left $f"; fi
done
check "no file of the packages left${left:+:$left}" test -z "$left"
check "no modules-enabled link left" \
    bash -c "! ls /etc/nginx/modules-enabled/ | grep -q kvroute"
check "nginx -t without the module" $nginx -q -t

echo "1..$n"
[ "$failed" = 0 ]
