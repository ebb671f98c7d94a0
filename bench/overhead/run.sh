#!/usr/bin/env bash
# Overhead of kvroute against plain nginx round robin, side by side in one
# run: wrk posts 9.5 KB chat bodies (16 shared system prompts) through
# nginx to 4 backends that answer at once, first through
# `upstream { server ...; }` (round robin), then through
# `upstream { kvroute; server ...; }`, alternating, ROUNDS times each.
# Prints requests/s and latency per round and the median ratio.
#
#   bench/overhead/run.sh [seconds per round] [rounds] [connections]
#
# KVROUTE_SO names another build of the module (default build/'s).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-10}
rounds=${2:-3}
conns=${3:-32}
so=${KVROUTE_SO:-$top/build/ngx_http_kvroute_module.so}
run=$top/build/overhead

mkdir -p "$run/logs"
stop() {
    for pidfile in "$run/logs/nginx.pid" "$run/backends/logs/nginx.pid"; do
        [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
    done
    true
}
trap stop EXIT

cat > "$run/nginx.conf" <<CONF
load_module $so;
worker_processes 1;
error_log logs/error.log warn;
pid logs/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_buffer_size 64k;
    upstream plain {
        server 127.0.0.1:9101; server 127.0.0.1:9102;
        server 127.0.0.1:9103; server 127.0.0.1:9104;
        keepalive 64;
    }
    upstream kv {
        kvroute capacity=585;
        server 127.0.0.1:9101; server 127.0.0.1:9102;
        server 127.0.0.1:9103; server 127.0.0.1:9104;
        keepalive 64;
    }
    server {
        listen 127.0.0.1:9001;
        location / { proxy_pass http://plain; proxy_http_version 1.1;
                     proxy_set_header Connection ""; }
    }
    server {
        listen 127.0.0.1:9002;
        location = /kvroute_status { kvroute_status; }
        location / { proxy_pass http://kv; proxy_http_version 1.1;
                     proxy_set_header Connection ""; }
    }
}
CONF

# the backends run in an nginx of their own, so that the front worker's
# CPU time is the proxy's alone
mkdir -p "$run/backends/logs"
cat > "$run/backends/nginx.conf" <<CONF
worker_processes 1;
error_log logs/error.log warn;
pid logs/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_buffer_size 64k;
    server { listen 127.0.0.1:9101; listen 127.0.0.1:9102;
             listen 127.0.0.1:9103; listen 127.0.0.1:9104;
             location / { return 200 "{\"ok\":true}\n"; } }
}
CONF

/usr/sbin/nginx -p "$run/backends" -c "$run/backends/nginx.conf"
/usr/sbin/nginx -p "$run" -c "$run/nginx.conf"
sleep 0.5
worker=$(pgrep -P "$(cat "$run/logs/nginx.pid")" | head -1)

# CPU seconds (user + system) the front worker has used so far
cpu() {
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' \
        "/proc/$worker/stat"
}

# both endpoints must answer before measuring
for port in 9001 9002; do
    curl -sf -XPOST -H 'Content-Type: application/json' \
        "http://127.0.0.1:$port/v1/chat/completions" -d '{"messages":[]}' >/dev/null
done

measure() {
    wrk -t1 -c"$conns" -d"${secs}s" --latency -s "$here/chat.lua" \
        "http://127.0.0.1:$1/v1/chat/completions" 2>&1
}

results=$run/results.txt
: > "$results"
for r in $(seq 1 "$rounds"); do
    for name in plain kvroute; do
        port=9001; [ "$name" = kvroute ] && port=9002
        c0=$(cpu)
        out=$(measure $port)
        c1=$(cpu)
        rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
        total=$(awk '/requests in/ {print $1}' <<<"$out")
        p50=$(awk '$1=="50%" {print $2}' <<<"$out")
        p99=$(awk '$1=="99%" {print $2}' <<<"$out")
        non2xx=$(awk '/Non-2xx/ {print $4}' <<<"$out")
        usreq=$(awk -v a="$c0" -v b="$c1" -v n="$total" \
                'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')
        echo "$r $name $rps $p50 $p99 ${non2xx:-0} $usreq" | tee -a "$results"
    done
done

curl -s http://127.0.0.1:9002/kvroute_status > "$run/status.txt" || true
grep -E 'decisions_total.*(overlap|home|load)|decision_microseconds' "$run/status.txt" || true

python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(name, col):
    return statistics.median(float(r[col].rstrip('ms').rstrip('u')) if not r[col].endswith('ms') else float(r[col][:-2]) for r in rows if r[1] == name)
def ms(v):
    return float(v[:-2]) if v.endswith('ms') else float(v[:-2]) / 1000 if v.endswith('us') else float(v[:-1]) * 1000
for name in ('plain', 'kvroute'):
    rs = [float(r[2]) for r in rows if r[1] == name]
    p50 = [ms(r[3]) for r in rows if r[1] == name]
    p99 = [ms(r[4]) for r in rows if r[1] == name]
    us = [float(r[6]) for r in rows if r[1] == name]
    print(f"{name:8} median req/s {statistics.median(rs):9.0f}  p50 {statistics.median(p50):.3f} ms  p99 {statistics.median(p99):.3f} ms  worker cpu/request {statistics.median(us):.1f} us")
plain = statistics.median(float(r[2]) for r in rows if r[1] == 'plain')
kv = statistics.median(float(r[2]) for r in rows if r[1] == 'kvroute')
print(f"throughput ratio kvroute/plain: {kv/plain:.3f}")
cp = statistics.median(float(r[6]) for r in rows if r[1] == 'plain')
ck = statistics.median(float(r[6]) for r in rows if r[1] == 'kvroute')
print(f"worker cpu per request ratio plain/kvroute: {cp/ck:.3f} (kvroute adds {ck-cp:.1f} us)")
PY
