#!/usr/bin/env bash
# Instructions per request of the front worker, plain round robin against
# kvroute, counted by callgrind: deterministic where requests/s and CPU time
# on a shared machine are not.  One nginx process (master_process off) runs
# under valgrind, counting only inside ngx_process_events_and_timers, while
# post.py sends REQUESTS of the overhead bodies (chat.lua's) over one
# keep-alive connection; the backends answer from an nginx of their own.
#
#   bench/overhead/callgrind.sh [requests]        (default 1000)
#
# KVROUTE_SO names another build of the module (default build/'s).  The
# profiles stay in build/overhead-cg/cg.{plain,kvroute} for
# callgrind_annotate.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
n=${1:-1000}
so=${KVROUTE_SO:-$top/build/ngx_http_kvroute_module.so}
run=$top/build/overhead-cg

mkdir -p "$run/logs" "$run/backends/logs"

stop() {
    [ -f "$run/backends/logs/nginx.pid" ] \
        && kill "$(cat "$run/backends/logs/nginx.pid")" 2>/dev/null
    true
}
trap stop EXIT

cat > "$run/backends/nginx.conf" <<CONF
worker_processes 1;
error_log logs/error.log warn;
pid logs/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_buffer_size 64k;
    server { listen 127.0.0.1:9121; listen 127.0.0.1:9122;
             listen 127.0.0.1:9123; listen 127.0.0.1:9124;
             location / { return 200 "{\"ok\":true}\n"; } }
}
CONF

# the measured front: run.sh's configuration, in one process
cat > "$run/nginx.conf" <<CONF
load_module $so;
worker_processes 1;
master_process off;
daemon off;
error_log logs/error.log warn;
pid logs/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_buffer_size 64k;
    upstream plain {
        server 127.0.0.1:9121; server 127.0.0.1:9122;
        server 127.0.0.1:9123; server 127.0.0.1:9124;
        keepalive 64;
    }
    upstream kv {
        kvroute capacity=585;
        server 127.0.0.1:9121; server 127.0.0.1:9122;
        server 127.0.0.1:9123; server 127.0.0.1:9124;
        keepalive 64;
    }
    server {
        listen 127.0.0.1:9021;
        location / { proxy_pass http://plain; proxy_http_version 1.1;
                     proxy_set_header Connection ""; }
    }
    server {
        listen 127.0.0.1:9022;
        location / { proxy_pass http://kv; proxy_http_version 1.1;
                     proxy_set_header Connection ""; }
    }
}
CONF

/usr/sbin/nginx -p "$run/backends" -c "$run/backends/nginx.conf"

for name in plain kvroute; do
    port=9021; [ "$name" = kvroute ] && port=9022

    valgrind --tool=callgrind \
        --toggle-collect=ngx_process_events_and_timers \
        --callgrind-out-file="$run/cg.$name" \
        /usr/sbin/nginx -p "$run" -c "$run/nginx.conf" \
        > "$run/valgrind.$name.log" 2>&1 &
    vg=$!

    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" && break
        sleep 0.2
    done

    python3 "$here/post.py" "$port" "$n"

    kill -QUIT "$vg"
    wait "$vg" || true

    total=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$run/valgrind.$name.log")
    awk -v name="$name" -v t="$total" -v n="$n" \
        'BEGIN { printf "%-8s %d instructions, %.0f a request\n", name, t, t / n }'
done
