#!/usr/bin/env bash
# Soak: wrk at saturation through kvroute (2 workers, approximate mode) in
# front of 6 emulated engines (fast time scale), 30% bad bodies. Reports
# statuses (5xx would be kvroute's or nginx's doing: the engines answer bad
# bodies with 400), worker memory before and after, in-flight counters and
# index size after the load stops.
#
#   bench/soak/run.sh [seconds] [connections]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-600}
conns=${2:-64}
run=$top/build/soak

mkdir -p "$run/logs"
stop() {
    [ -f "$run/logs/nginx.pid" ] && kill "$(cat "$run/logs/nginx.pid")" 2>/dev/null
    [ -n "${emu:-}" ] && kill "$emu" 2>/dev/null
    true
}
trap stop EXIT

servers=""
for i in 0 1 2 3 4 5; do servers="$servers    server 127.0.0.1:$((9311 + i)) max_fails=0;
"; done

cat > "$run/nginx.conf" <<CONF
load_module $top/build/ngx_http_kvroute_module.so;
worker_processes 2;
error_log logs/error.log notice;
pid logs/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    client_max_body_size 8m;
    client_body_buffer_size 64k;
    upstream llm {
        kvroute capacity=585 zone=kvroute_soak:8m;
$servers        keepalive 64;
    }
    server {
        listen 127.0.0.1:9300;
        location / { proxy_pass http://llm; proxy_http_version 1.1;
                     proxy_set_header Connection ""; }
        location = /kvroute_status { kvroute_status; }
    }
}
CONF

node "$top/bench/emulator/main.js" --engines 6 --base-port 9311 \
    --time-scale 200 --max-num-seqs 256 > "$run/logs/emulator.log" 2>&1 &
emu=$!
for _ in $(seq 1 300); do grep -q '^ready' "$run/logs/emulator.log" && break; sleep 0.1; done

: > "$run/logs/error.log"
/usr/sbin/nginx -p "$run" -c "$run/nginx.conf"
sleep 0.5

rss() {
    for p in $(pgrep -P "$(cat "$run/logs/nginx.pid")"); do
        awk '/VmRSS/ {printf "%s ", $2}' "/proc/$p/status"
    done
}

echo "worker RSS before (kB): $(rss)"
wrk -t2 -c"$conns" -d"${secs}s" -s "$here/mixed.lua" http://127.0.0.1:9300 \
    > "$run/wrk.txt" &
load=$!

# memory over time: RSS (kB) of each worker every tenth of the run
step=$(( secs / 10 > 0 ? secs / 10 : 1 ))
while kill -0 "$load" 2>/dev/null; do
    sleep "$step"
    kill -0 "$load" 2>/dev/null && echo "  t+${SECONDS}s worker RSS (kB): $(rss)"
done
wait "$load" || true
grep -E "Requests/sec|requests in|statuses|Socket errors" "$run/wrk.txt"
sleep 2
echo "worker RSS after (kB): $(rss)"
curl -s http://127.0.0.1:9300/kvroute_status > "$run/status.txt"
echo "in flight after the load (should be 0):"
grep -E '^kvroute_inflight_requests' "$run/status.txt" | awk '{s += $2} END {print "  requests", s}'
grep -E '^kvroute_index_(entries|capacity)|^kvroute_decisions_total.*(not-json|invalid-utf8|overlap|home|load|empty|not-object|no-prompt)' "$run/status.txt" | grep -v ' 0$'
echo "alerts / crashes in error.log: $(grep -E '\[(alert|emerg)\]|exited on signal' "$run/logs/error.log" | grep -vc 'signal process started' || true)"
