#!/usr/bin/env bash
# Fault injection under load (RELIABILITY.md, "Fault tests under load").
# Each scenario starts nginx (master + 2 workers, build/'s module) in front
# of emulated engines, drives wrk near saturation with valid requests that
# share prefixes (load.lua), injects one fault mid-run, then checks the
# outcome and prints PASS or FAIL with figures.
#
#   bench/faults/run.sh [scenario ...]     (default: all, in this order)
#     worker  helper  server  server-retry  reload  zone  flood
#
# FAULTS_SECONDS (load per scenario, default 20), FAULTS_CONNS (default 32),
# FAULTS_MODULE (default build/ngx_http_kvroute_module.so).
# Ports 29000-29399; work directories under build/faults/<scenario>.
# Exit status 1 when a scenario fails.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
base=$top/build/faults
secs=${FAULTS_SECONDS:-20}
conns=${FAULTS_CONNS:-32}
port=29000              # nginx
eport=29011             # engine i: HTTP eport+i, events +100, replay +200
flood_port=29399
emulator=$top/bench/emulator/main.js
module=${FAULTS_MODULE:-$top/build/ngx_http_kvroute_module.so}
export FAULTS_PREFIXES=32 FAULTS_BLOCKS=8     # load.lua's shared prefixes

mkdir -p "$base"
procs=()                # background processes this script started
master=""
failed=0
summary=$base/summary.txt
: > "$summary"

stop_nginx() {
    local i
    [ -n "$master" ] || return 0
    kill -TERM "$master" 2>/dev/null
    for i in $(seq 1 50); do
        kill -0 "$master" 2>/dev/null || break
        sleep 0.1
    done
    master=""
}

stop_procs() {
    local p
    for p in "${procs[@]}"; do
        kill -TERM "$p" 2>/dev/null
    done
    for p in "${procs[@]}"; do
        wait "$p" 2>/dev/null
    done
    procs=()
}

cleanup() {
    stop_nginx
    stop_procs
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '%s\n' "$*"; }

# --- engines ---------------------------------------------------------------

# emu DIR NAME ARGS...: one emulator process; its pid in $emu_pid
emu() {
    local dir=$1 name=$2 i
    shift 2
    node "$emulator" --time-scale 200 "$@" > "$dir/$name.log" 2>&1 &
    emu_pid=$!
    procs+=("$emu_pid")
    for i in $(seq 1 300); do
        grep -q '^ready' "$dir/$name.log" && return 0
        kill -0 "$emu_pid" 2>/dev/null || break
        sleep 0.1
    done
    say "emulator $name did not start:"; cat "$dir/$name.log"
    return 1
}

# requests engine i accepted (its /metrics; 0 when it is down)
ereq() {
    curl -s -m 2 "http://127.0.0.1:$((eport + $1))/metrics" \
        | awk '/^kvemu_requests_total/ {v = $2} END {print v + 0}'
}

# engine i's metric NAME
emetric() {
    curl -s -m 2 "http://127.0.0.1:$((eport + $1))/metrics" \
        | awk -v n="$2" 'index($0, n "{") == 1 || $1 == n {v = $NF}
                         END {print v + 0}'
}

srv() { printf '127.0.0.1:%d' $((eport + $1)); }

# --- nginx -----------------------------------------------------------------

# conf DIR UPSTREAM-LINES [LOCATION-LINES]
conf() {
    local dir=$1 up=$2 loc=${3:-}
    mkdir -p "$dir/logs"
    cat > "$dir/nginx.conf" <<CONF
load_module $module;
worker_processes 2;
error_log logs/error.log notice;
pid logs/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    client_max_body_size 8m;
    client_body_buffer_size 64k;
    map \$status \$faults_5xx { ~^5 1; default 0; }
    log_format faults '\$msec \$status "\$upstream_addr" "\$upstream_status" '
                      '\$kvroute_server \$kvroute_reason';
    upstream llm {
$up
        keepalive 64;
    }
    server {
        listen 127.0.0.1:$port;
        location / {
            access_log logs/5xx.log faults if=\$faults_5xx;
            proxy_pass http://llm;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            add_header X-Kvroute "\$kvroute_server \$kvroute_reason \$kvroute_overlap/\$kvroute_blocks" always;
$loc
        }
        location = /kvroute_status { kvroute_status; }
    }
}
CONF
}

ngx_start() {
    local dir=$1 i
    : > "$dir/logs/error.log"
    /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" 2> "$dir/logs/start.log" \
        || { cat "$dir/logs/start.log"; return 1; }
    for i in $(seq 1 50); do
        [ -s "$dir/logs/nginx.pid" ] && break
        sleep 0.1
    done
    master=$(cat "$dir/logs/nginx.pid")
    sleep 0.5
}

# children of the master whose title matches PATTERN (from /proc, no procps)
children() {
    local stat p
    for stat in /proc/[0-9]*/stat; do
        p=${stat#/proc/}
        p=${p%/stat}
        # field 4 is the parent; the name in field 2 has no blanks here
        [ "$(awk '{print $4}' "$stat" 2>/dev/null)" = "$master" ] || continue
        tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q "$1" && echo "$p"
    done
}

# client connections to nginx's port that process PID holds (established)
held() {
    local inodes
    inodes=$(ls -l "/proc/$1/fd" 2>/dev/null \
             | sed -n 's/.*socket:\[\([0-9]*\)\]$/\1/p' | tr '\n' ' ')
    awk -v port="$(printf ':%04X' "$port")" -v inodes=" $inodes " '
        $2 ~ port "$" && $4 == "01" && index(inodes, " " $10 " ") { n++ }
        END { print n + 0 }' /proc/net/tcp
}

status() { curl -sf -m 5 "http://127.0.0.1:$port/kvroute_status"; }

# inflight_sum FILE: requests in flight in all workers, from a status page; -1
# when FILE has no kvroute_inflight_requests line (nginx dead, no page), so
# that "inflight == 0" cannot pass without one
inflight_sum() {
    awk 'index($0, "kvroute_inflight_requests{") == 1 { n++; t += $NF }
         END { printf "%d\n", n ? t : -1 }' "$1"
}

# msum FILE NAME [SERVER]: sum of a metric's values (for one server)
msum() {
    awk -v n="$2" -v s="${3:-}" '
        (index($0, n "{") == 1 || $1 == n) &&
        (s == "" || index($0, "server=\"" s "\"")) { t += $NF }
        END { printf "%d\n", t }' "$1"
}

# --- load ------------------------------------------------------------------

# load DIR SECONDS: wrk in the background ($load_pid); FAULTS_* pass through
load() {
    wrk -t2 -c"$conns" -d"$2s" --timeout 10s -s "$here/load.lua" \
        "http://127.0.0.1:$port" > "$1/wrk.txt" 2>&1 &
    load_pid=$!
    procs+=("$load_pid")
    load_t0=$SECONDS
}

# sleep until T seconds into the load
at() {
    local left=$(( load_t0 + $1 - SECONDS ))
    [ "$left" -gt 0 ] && sleep "$left"
    return 0
}

load_wait() {
    wait "$load_pid" 2>/dev/null
    w_requests=$(awk '/requests in/ {print $1}' "$1/wrk.txt")
    w_rate=$(awk '/Requests\/sec/ {printf "%d", $2}' "$1/wrk.txt")
    w_5xx=$(sed -n 's/^statuses: .*5xx \([0-9]*\).*/\1/p' "$1/wrk.txt")
    w_2xx=$(sed -n 's/^statuses: 2xx \([0-9]*\).*/\1/p' "$1/wrk.txt")
    w_errors=$(awk '/Socket errors/ {gsub(",", ""); print $4 + $6 + $8 + $10}' \
                   "$1/wrk.txt")
    w_errline=$(grep 'Socket errors' "$1/wrk.txt" | sed 's/^ *//')
    w_5xx=${w_5xx:-?} w_2xx=${w_2xx:-?} w_errors=${w_errors:-0}
    w_requests=${w_requests:-0} w_rate=${w_rate:-0}
    say "  wrk: $w_requests requests, $w_rate/s, 2xx $w_2xx, 5xx $w_5xx," \
        "socket errors $w_errors${w_errline:+ ($w_errline)}"
}

# --- verdicts --------------------------------------------------------------

scen_ok=1

# check OK-EXPRESSION DESCRIPTION: an arithmetic test, printed either way
check() {
    if (( $1 )); then
        say "  ok    $2"
    else
        say "  FAIL  $2"
        scen_ok=0
    fi
}

verdict() {
    local name=$1 figures=$2
    if [ "$scen_ok" = 1 ]; then
        say "PASS $name: $figures"
        say "PASS | $name | $figures" >> "$summary"
    else
        say "FAIL $name: $figures"
        say "FAIL | $name | $figures" >> "$summary"
        failed=1
    fi
}

# logged LEVELS FILE [EXCLUDE]: error.log lines at those levels
logged() {
    grep -E "\[($1)\]" "$2" | { [ -n "${3:-}" ] && grep -vE "$3" || cat; } \
        | wc -l
}

begin() {
    scen_ok=1
    dir=$base/$1
    rm -rf "$dir"
    mkdir -p "$dir/logs"
    say ""
    say "== $1: $2"
}

end() {
    stop_nginx
    stop_procs
}

servers() {
    local i
    for i in "$@"; do
        printf '        server %s max_fails=1 fail_timeout=2s;\n' "$(srv "$i")"
    done
}

# --- 1. a worker killed with SIGKILL under load ----------------------------

s_worker() {
    begin worker "one nginx worker killed with SIGKILL under load"
    emu "$dir" emulator --engines 3 --base-port $eport || return
    conf "$dir" "        kvroute capacity=585 zone=faults_worker:8m;
$(servers 0 1 2)"
    ngx_start "$dir" || return
    local before after victim held inflight_pre respawned exits inflight
    before=$(children 'worker process' | tr '\n' ' ')
    load "$dir" "$secs"
    at $(( secs * 2 / 5 ))
    victim=$(children 'worker process' | head -1)
    # client connections the victim holds: each has a request in flight
    held=$(held "$victim")
    status > "$dir/status-before.txt"
    inflight_pre=$(msum "$dir/status-before.txt" kvroute_inflight_requests)
    kill -KILL "$victim"
    sleep 1.5
    after=$(children 'worker process' | tr '\n' ' ')
    respawned=$(children 'worker process' | grep -c .)
    children 'worker process' | grep -q "^$victim$" && respawned=-1
    load_wait "$dir"
    sleep 1
    status > "$dir/status.txt"
    inflight=$(inflight_sum "$dir/status.txt")
    exits=$(grep -c "worker process $victim exited on signal 9" \
            "$dir/logs/error.log")
    say "  workers before: $before; killed $victim holding $held client" \
        "connections ($inflight_pre requests in flight in all workers);" \
        "workers after: $after"
    check "respawned == 2 && exits == 1" \
        "master logged the exit ($exits) and respawned: $respawned workers without $victim"
    check "w_5xx == 0" "no 5xx ($w_5xx)"
    check "w_errors <= held" \
        "socket errors ($w_errors) <= connections the killed worker held ($held)"
    check "inflight == 0" "in-flight requests after the load: $inflight"
    # killed inside the index's critical section, the worker leaves the
    # zone locked: the master logs it and unlocks it (nginx's recovery)
    local other locked
    locked=$(grep -c "was locked by $victim" "$dir/logs/error.log")
    other=$(logged 'alert|crit|emerg' "$dir/logs/error.log" \
            "worker process $victim exited on signal 9|was locked by $victim")
    say "  the zone was locked by the killed worker (master unlocked it): $locked"
    check "other == 0" "other alert/crit/emerg lines in error.log: $other"
    verdict "worker SIGKILL" "$w_requests requests, 5xx $w_5xx, socket errors $w_errors (killed worker held $held connections), worker respawned, zone left locked $locked, in flight after $inflight"
    end
}

# --- 2. the events helper killed with SIGKILL under load -------------------

s_helper() {
    begin helper "the events helper killed with SIGKILL under load (mode=kv, replay)"
    emu "$dir" emulator --engines 3 --base-port $eport --kv-events zmq \
        --events-base-port $((eport + 100)) \
        --replay-base-port $((eport + 200)) || return
    conf "$dir" "        kvroute mode=kv events_port=+100 replay_port=+200 zone=faults_helper:8m;
$(servers 0 1 2)"
    ngx_start "$dir" || return
    local victim starts0 entries0 replays0 replayed0 t0 ms low=-1 back=-1 e s newh
    load "$dir" "$secs"
    at $(( secs * 2 / 5 ))
    victim=$(children 'cache manager')
    status > "$dir/status-before.txt"
    starts0=$(msum "$dir/status-before.txt" kvroute_events_helper_starts_total)
    # blocks the engines reported (index entries also hold predictions)
    entries0=$(msum "$dir/status-before.txt" kvroute_indexed_blocks)
    replays0=$(msum "$dir/status-before.txt" kvroute_events_replays_total)
    replayed0=$(msum "$dir/status-before.txt" \
                kvroute_events_replayed_batches_total)
    t0=$(date +%s%N)
    kill -KILL "$victim"
    # the index: lowest value seen, and when it is back to 80%
    ms=0
    while [ "$ms" -lt 3000 ]; do
        status > "$dir/status-poll.txt"
        s=$(msum "$dir/status-poll.txt" kvroute_events_helper_starts_total)
        e=$(msum "$dir/status-poll.txt" kvroute_indexed_blocks)
        ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        echo "$ms $s $e" >> "$dir/index-after-kill.txt"
        if [ "$s" -gt "$starts0" ]; then
            { [ "$low" -lt 0 ] || [ "$e" -lt "$low" ]; } && low=$e
            if [ "$back" -lt 0 ] && [ $(( e * 10 )) -ge $(( entries0 * 8 )) ]; then
                back=$ms
                break
            fi
        fi
        sleep 0.05
    done
    newh=$(children 'cache manager')
    load_wait "$dir"
    sleep 1
    status > "$dir/status.txt"
    local starts replays inflight entries overlap decisions replayed
    starts=$(msum "$dir/status.txt" kvroute_events_helper_starts_total)
    replays=$(msum "$dir/status.txt" kvroute_events_replays_total)
    inflight=$(inflight_sum "$dir/status.txt")
    entries=$(msum "$dir/status.txt" kvroute_indexed_blocks)
    replayed=$(msum "$dir/status.txt" kvroute_events_replayed_batches_total)
    overlap=$(grep 'reason="overlap"' "$dir/status.txt" | awk '{print $NF}')
    decisions=$(msum "$dir/status.txt" kvroute_decisions_total)
    say "  helper $victim killed; new helper ${newh:-none}; indexed blocks" \
        "before $entries0, lowest seen after the restart $low, back to 80%" \
        "after ${back} ms (first poll after the kill: $(head -1 \
        "$dir/index-after-kill.txt"), ms/starts/blocks); replays $replays0" \
        "-> $replays, batches replayed $((replayed - replayed0)); indexed" \
        "blocks at the end $entries; overlap decisions $overlap of $decisions"
    check "starts == starts0 + 1 && ${newh:-0} > 0 && ${newh:-0} != victim" \
        "respawned: helper starts $starts0 -> $starts, new pid ${newh:-none}"
    check "replays >= replays0 + 3 && replayed > replayed0" \
        "replays asked from the 3 engines: $((replays - replays0)), $((replayed - replayed0)) batches replayed"
    check "back >= 0 && back <= 2000" \
        "index back to >= 80% of $entries0 blocks within 2 s (${back} ms)"
    check "w_5xx == 0 && w_errors == 0" "no 5xx ($w_5xx), no socket errors ($w_errors)"
    check "inflight == 0" "in-flight requests after the load: $inflight"
    verdict "helper SIGKILL" "$w_requests requests, 5xx $w_5xx, helper starts $starts0 -> $starts, indexed blocks $entries0 before, $low after the restart, >= 80% again ${back} ms after the kill, by replay ($((replayed - replayed0)) batches)"
    end
}

# --- 3. a server stopped mid-run and started again -------------------------

# one emulator process per engine, so one can stop; engine i is "e<i>-0"
engine() {
    emu "$dir" "engine$1" --engines 1 --base-port $((eport + $1)) \
        --kv-events zmq --events-base-port $((eport + 100 + $1)) \
        --replay-base-port $((eport + 200 + $1)) --name-prefix "e$1-"
}

# s_server [LOCATION-LINES]: the default proxy_next_upstream unless given
s_server() {
    local name=server extra=${1:-} label="default proxy_next_upstream"
    [ -n "$extra" ] && name=server-retry label="$extra"
    begin "$name" "a server stopped mid-run and started again (mode=kv, $label)"
    local i pids=()
    for i in 0 1 2; do
        engine "$i" || return
        pids[i]=$emu_pid
    done
    conf "$dir" "        kvroute mode=kv events_port=+100 replay_port=+200 zone=faults_server:8m;
$(servers 0 1 2)" "            $extra"
    ngx_start "$dir" || return
    local run=$(( secs + 6 )) stop_at=$(( secs * 3 / 10 ))
    local down=$(( secs / 5 )) s1 blocks_pre inflight_pre gaps_pre
    load "$dir" "$run"
    at "$stop_at"
    status > "$dir/status-before.txt"
    s1=$(srv 1)
    blocks_pre=$(msum "$dir/status-before.txt" kvroute_indexed_blocks "$s1")
    inflight_pre=$(msum "$dir/status-before.txt" kvroute_inflight_requests "$s1")
    gaps_pre=$(msum "$dir/status-before.txt" kvroute_events_gaps_total "$s1")
    replays_pre=$(msum "$dir/status-before.txt" kvroute_events_replays_total \
                  "$s1")
    local served_pre
    served_pre=$(ereq 1)
    local killed_at
    killed_at=$(date +%s.%N)
    kill -TERM "${pids[1]}"
    wait "${pids[1]}" 2>/dev/null
    say "  engine 1 ($s1) stopped at t+${stop_at}s: it had served" \
        "$served_pre requests, $inflight_pre in flight through kvroute," \
        "$blocks_pre blocks indexed"
    sleep 1
    status > "$dir/status-down.txt"
    local blocks_down
    blocks_down=$(msum "$dir/status-down.txt" kvroute_indexed_blocks "$s1")
    at $(( stop_at + down ))
    engine 1 || return
    local t_back=$(( SECONDS - load_t0 )) t0 seen=-1 blocks_seen=-1 bound
    # distinct blocks an engine can hold: with the stale entries kept,
    # the index would hold more (the old cache's tails and the new one's)
    bound=$(emetric 1 kvemu_cache_blocks)
    t0=$(date +%s%N)
    # the sequence starts again at 0: kvroute sees a gap (or asks for a
    # replay when it reconnects), drops what it held for the server and
    # replays the new engine's buffer
    local ms=0 g r
    while [ "$ms" -lt 8000 ]; do
        status > "$dir/status-poll.txt"
        g=$(msum "$dir/status-poll.txt" kvroute_events_gaps_total "$s1")
        r=$(msum "$dir/status-poll.txt" kvroute_events_replays_total "$s1")
        ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        if [ "$g" -gt "$gaps_pre" ] || [ "$r" -gt "$replays_pre" ]; then
            seen=$ms
            blocks_seen=$(msum "$dir/status-poll.txt" kvroute_indexed_blocks \
                          "$s1")
            break
        fi
        sleep 0.05
    done
    local back_pre
    sleep 1
    back_pre=$(ereq 1)
    local e0a e2a
    e0a=$(ereq 0) e2a=$(ereq 2)
    load_wait "$dir"
    local back_end e0b e2b
    back_end=$(ereq 1) e0b=$(ereq 0) e2b=$(ereq 2)
    sleep 1
    status > "$dir/status.txt"
    local inflight blocks_end refused prem lost
    inflight=$(inflight_sum "$dir/status.txt")
    blocks_end=$(msum "$dir/status.txt" kvroute_indexed_blocks "$s1")
    refused=$(grep -c 'Connection refused) while connecting to upstream' \
              "$dir/logs/error.log")
    prem=$(grep -cE 'prematurely closed|reset by peer' "$dir/logs/error.log")
    # 5xx answered by the stopped engine's address alone within a second
    # of its stop: requests it was serving
    lost=$(awk -v a="\"$s1\"" -v t="$killed_at" \
           '$3 == a && $1 >= t - 0.1 && $1 <= t + 1 {n++} END {print n + 0}' \
           "$dir/logs/5xx.log")
    local last=$(( back_end - back_pre )) total=$(( back_end - back_pre
                 + e0b - e0a + e2b - e2a ))
    say "  engine 1 back at t+${t_back}s; sequence reset seen by kvroute" \
        "after ${seen} ms, its indexed blocks then $blocks_seen (before the" \
        "stop $blocks_pre, while down $blocks_down; the engine holds at" \
        "most $bound), at the end $blocks_end"
    say "  requests to engine 1 from 1 s after kvroute saw it back to the end:" \
        "$last of $total; connect() refused and retried: $refused;" \
        "upstream closed mid-request: $prem"
    if [ -s "$dir/logs/5xx.log" ]; then
        say "  5xx (access log: msec status upstream_addr upstream_status server reason):"
        head -5 "$dir/logs/5xx.log" | sed 's/^/    /'
    fi
    if [ -n "$extra" ]; then
        check "w_5xx == 0" "no 5xx ($w_5xx; engine 1 had $inflight_pre in flight when it stopped)"
    else
        # nginx never passes a POST to another server once it was sent:
        # the requests engine 1 was serving fail, nothing else may
        check "w_5xx == lost && lost <= conns" \
            "5xx ($w_5xx) only for requests engine 1 was serving when it died: $lost from engine 1 alone within 1 s of its stop ($inflight_pre in flight there just before)"
    fi
    check "w_errors == 0" "no socket errors ($w_errors)"
    check "refused > 0" "requests refused by the stopped engine were retried ($refused connect() failures)"
    check "seen >= 0 && blocks_end <= bound && blocks_seen <= bound" \
        "restart seen (gap or replay, ${seen} ms after the return); indexed blocks then $blocks_seen and at the end $blocks_end <= $bound the engine can hold (stale entries dropped)"
    check "total > 0 && last * 10 >= total" \
        "traffic returned: engine 1 served $last of $total requests after its return (>= 10%)"
    check "inflight == 0" "in-flight requests after the load: $inflight"
    verdict "server stop/start ($label)" "$w_requests requests, 5xx $w_5xx (lost in flight: $lost), $refused refused connects retried, engine 1 had $inflight_pre in flight at the stop, reset seen ${seen} ms after the return, engine 1 served $last/$total after it"
    end
}

# --- 4. nginx -s reload under load with a changed upstream -----------------

# wait_exit PIDS...: milliseconds until every pid is gone (-1 after 15 s)
wait_exit() {
    local t0 p alive ms
    t0=$(date +%s%N)
    for _ in $(seq 1 300); do
        alive=0
        for p in "$@"; do
            kill -0 "$p" 2>/dev/null && alive=1
        done
        ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        [ "$alive" = 0 ] && { echo "$ms"; return; }
        sleep 0.05
    done
    echo -1
}

s_reload() {
    begin reload "nginx -s reload under load: a server added, then one removed"
    emu "$dir" emulator --engines 3 --base-port $eport || return
    local up="        kvroute capacity=585 zone=faults_reload:8m;"
    conf "$dir" "$up
$(servers 0 1)"
    ngx_start "$dir" || return
    local old1 old2 x1 x2 a1 a2 a3 b1 b2 c1 c2 n1 n2 h=0 p
    load "$dir" "$secs"
    at $(( secs * 3 / 10 ))
    old1=$(children 'worker process')
    for p in $old1; do h=$(( h + $(held "$p") )); done
    conf "$dir" "$up
$(servers 0 1 2)"
    /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" -s reload \
        2>> "$dir/logs/reload.log"
    x1=$(wait_exit $old1)
    sleep 0.5
    a1=$(ereq 0) b1=$(ereq 1) c1=$(ereq 2)
    at $(( secs * 65 / 100 ))
    a2=$(ereq 0) b2=$(ereq 1) c2=$(ereq 2)
    old2=$(children 'worker process')
    for p in $old2; do h=$(( h + $(held "$p") )); done
    conf "$dir" "$up
$(servers 1 2)"
    /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" -s reload \
        2>> "$dir/logs/reload.log"
    x2=$(wait_exit $old2)
    a3=$(ereq 0)
    load_wait "$dir"
    local a4 b4 c4
    a4=$(ereq 0) b4=$(ereq 1) c4=$(ereq 2)
    sleep 1
    status > "$dir/status.txt"
    local inflight workers
    inflight=$(inflight_sum "$dir/status.txt")
    workers=$(children 'worker process' | grep -c .)
    n1=$(echo $old1) n2=$(echo $old2)
    say "  reload 1 (+ engine 2): old workers $n1 gone after ${x1} ms;" \
        "then to the reload 2: engine 0/1/2 served $((a2 - a1))/$((b2 - b1))/$((c2 - c1))"
    say "  reload 2 (- engine 0): old workers $n2 gone after ${x2} ms; from" \
        "then to the end: engine 0/1/2 served $((a4 - a3))/$((b4 - b2))/$((c4 - c2))" \
        "(engine 0 while old workers drained: $((a3 - a2)))"
    check "w_5xx == 0" "no 5xx ($w_5xx)"
    # an exiting worker closes its idle keep-alive client connections; a
    # request the client sends at that moment sees the close (nginx's
    # graceful shutdown, any HTTP server's keep-alive race)
    check "w_errors <= h" \
        "socket errors ($w_errors) <= client connections the old workers held at the reloads ($h)"
    check "x1 >= 0 && x2 >= 0 && workers == 2" \
        "old workers exited (${x1} ms, ${x2} ms after the reload), $workers workers now"
    check "c2 - c1 > 0" "the added engine 2 served $((c2 - c1)) after reload 1"
    check "a4 - a3 == 0" "the removed engine 0 served $((a4 - a3)) after reload 2's old workers left"
    check "inflight == 0" "in-flight requests after the load: $inflight"
    verdict "reload with a changed upstream" "$w_requests requests, 5xx $w_5xx, socket errors $w_errors, old workers gone in ${x1} / ${x2} ms, added server served $((c2 - c1)), removed server $((a4 - a3)) after, in flight after $inflight"
    end
}

# --- 5. the index zone filled to its limit ---------------------------------

# the smallest zone size (kB) nginx -t accepts, from its own message
min_zone() {
    conf "$dir" "        kvroute zone=faults_zone:1k;
$(servers 0)"
    /usr/sbin/nginx -t -p "$dir" -c "$dir/nginx.conf" 2>&1 \
        | sed -n 's/.*expected at least \([0-9]*\)k.*/\1/p'
}

s_zone() {
    begin zone "the index zone at its minimum size, filled by distinct prefixes"
    local kb
    kb=$(min_zone)
    [ -n "$kb" ] || { say "  cannot find the minimum zone size"; scen_ok=0;
                      verdict "zone filled" "no minimum found"; return; }
    emu "$dir" emulator --engines 3 --base-port $eport || return
    conf "$dir" "        kvroute zone=faults_zone:${kb}k;
$(servers 0 1 2)"
    ngx_start "$dir" || return
    local max=0 cap=0 over=0 samples=0 e c
    FAULTS_UNIQUE=1 load "$dir" "$secs"
    while kill -0 "$load_pid" 2>/dev/null; do
        status > "$dir/status-poll.txt"
        e=$(msum "$dir/status-poll.txt" kvroute_index_entries)
        c=$(msum "$dir/status-poll.txt" kvroute_index_capacity)
        echo "$(( SECONDS - load_t0 )) $e $c" >> "$dir/entries.txt"
        samples=$(( samples + 1 ))
        [ "$e" -gt "$max" ] && max=$e
        [ "$c" -gt "$cap" ] && cap=$c
        [ "$e" -gt "$c" ] && over=$(( over + 1 ))
        sleep 0.25
    done
    load_wait "$dir"
    sleep 1
    status > "$dir/status.txt"
    local evict inflight nomem_reason nomem_log alerts entries routed
    evict=$(msum "$dir/status.txt" kvroute_index_full_evictions_total)
    routed=$(msum "$dir/status.txt" kvroute_decisions_total)
    entries=$(msum "$dir/status.txt" kvroute_index_entries)
    inflight=$(inflight_sum "$dir/status.txt")
    nomem_reason=$(grep 'reason="no-memory"' "$dir/status.txt" \
                   | awk '{print $NF}')
    nomem_log=$(grep -ci 'no memory' "$dir/logs/error.log")
    alerts=$(logged 'alert|crit|emerg' "$dir/logs/error.log")
    say "  zone ${kb}k (the minimum nginx -t accepts): capacity $cap" \
        "entries; $samples samples during the load, highest $max, above" \
        "the capacity $over times; at the end $entries; full-zone" \
        "evictions $evict; decisions no-memory ${nomem_reason:-0}"
    say "  error.log: $(wc -l < "$dir/logs/error.log") lines," \
        "'no memory' $nomem_log, alert/crit/emerg $alerts"
    check "w_5xx == 0 && w_errors == 0" "no 5xx ($w_5xx), no socket errors ($w_errors)"
    check "cap > 0 && over == 0 && max <= cap" "entries never above the bound ($max <= $cap)"
    check "max * 10 >= cap * 9" "the zone was filled (highest $max of $cap)"
    # every request records its distinct blocks (its own prefix and one of
    # its tail): all but what the zone holds were evicted
    local per=$(( FAULTS_BLOCKS + 1 ))
    check "evict > 0 && evict == routed * per - entries" \
        "evictions counted: $evict = $routed requests x $per blocks - $entries held"
    check "nomem_log == 0 && alerts == 0" "no 'no memory' ($nomem_log) or alert/crit ($alerts) in error.log"
    check "inflight == 0" "in-flight requests after the load: $inflight"
    verdict "index zone filled" "zone ${kb}k, $w_requests requests with distinct prefixes, 5xx $w_5xx, entries at most $max of $cap, $evict full-zone evictions, no-memory decisions ${nomem_reason:-0}, 'no memory' log lines $nomem_log"
    end
}

# --- 6. a flood of malformed event messages --------------------------------

# json FILE KEY: a number from flood.js's summary line
json() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" "$1" | tail -1; }

s_flood() {
    local rate=${FAULTS_FLOOD_RATE:-12000} every=20
    begin flood "$rate malformed event messages/s with valid ones on engine 2's endpoint (mode=kv)"
    emu "$dir" emulator --engines 3 --base-port $eport --kv-events zmq \
        --events-base-port $((eport + 100)) --replay-base-port 0 || return
    local fsecs=$(( secs / 2 )) delay=4 flood_pid
    # engine 2's events come from the flood publisher instead
    node "$here/flood.js" "tcp://127.0.0.1:$flood_port" "$delay" "$fsecs" \
        "$rate" "$every" > "$dir/flood.out" 2> "$dir/flood.err" &
    flood_pid=$!
    procs+=("$flood_pid")
    local t_bind=$SECONDS s2
    s2=$(srv 2)
    conf "$dir" "        kvroute mode=kv events_port=+100 zone=faults_flood:8m;
$(servers 0 1 2)
        kvroute_events $s2 tcp://127.0.0.1:$flood_port;"
    ngx_start "$dir" || return
    load "$dir" "$secs"
    # requests served each second (all engines), and when the flood ran
    local t prev now started=-1 stopped=-1
    prev=$(( $(ereq 0) + $(ereq 1) + $(ereq 2) ))
    while kill -0 "$load_pid" 2>/dev/null; do
        sleep 1
        now=$(( $(ereq 0) + $(ereq 1) + $(ereq 2) ))
        t=$(( SECONDS - load_t0 ))
        [ "$started" -lt 0 ] && grep -q '^start' "$dir/flood.out" && started=$t
        [ "$stopped" -lt 0 ] && grep -q '^{' "$dir/flood.out" && stopped=$t
        echo "$t $(( now - prev )) ${started} ${stopped}" >> "$dir/rate.txt"
        prev=$now
    done
    load_wait "$dir"
    # the helper may still be reading the queue
    local m m0=-1
    for _ in $(seq 1 30); do
        status > "$dir/status.txt"
        m=$(msum "$dir/status.txt" kvroute_events_messages_total "$s2")
        grep -q '^{' "$dir/flood.out" && [ "$m" = "$m0" ] && break
        m0=$m
        sleep 1
    done
    local frame_bad payload_bad valid blocks bad_s fsent
    frame_bad=$(json "$dir/flood.out" frame_bad)
    payload_bad=$(json "$dir/flood.out" payload_bad)
    valid=$(json "$dir/flood.out" valid)
    blocks=$(json "$dir/flood.out" valid_blocks)
    bad_s=$(json "$dir/flood.out" bad_per_s)
    fsent=$(json "$dir/flood.out" seconds)
    fsent=${fsent:-0}
    local msgs dropped stored gaps inflight
    msgs=$(msum "$dir/status.txt" kvroute_events_messages_total "$s2")
    dropped=$(msum "$dir/status.txt" kvroute_events_dropped_total "$s2")
    stored=$(msum "$dir/status.txt" kvroute_events_stored_blocks_total "$s2")
    gaps=$(msum "$dir/status.txt" kvroute_events_gaps_total "$s2")
    inflight=$(inflight_sum "$dir/status.txt")
    # the last valid chain, asked through kvroute: engine 2 holds it
    local ids probe
    ids=$(sed -n 's/.*"last_chain_ids":\[\([0-9,]*\)\].*/\1/p' "$dir/flood.out")
    probe=$(curl -s -m 5 -o /dev/null -D - -H 'Content-Type: application/json' \
            -d "{\"model\":\"m\",\"max_tokens\":2,\"prompt\":[$ids,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}" \
            "http://127.0.0.1:$port/v1/completions" \
            | sed -n 's/^X-Kvroute: \(.*\)\r$/\1/p')
    # requests/s before, during and after the flood
    local before during after
    before=$(awk -v a="$started" '$1 > 1 && $1 <= a {s += $2; n++}
                 END {printf "%d", n ? s / n : 0}' "$dir/rate.txt")
    during=$(awk -v a="$started" -v b="$stopped" '$1 > a && (b < 0 || $1 <= b) {s += $2; n++}
                 END {printf "%d", n ? s / n : 0}' "$dir/rate.txt")
    after=$(awk -v b="$stopped" 'b >= 0 && $1 > b + 1 {s += $2; n++}
                 END {printf "%d", n ? s / n : 0}' "$dir/rate.txt")
    local lines droplines crashes smash
    lines=$(wc -l < "$dir/logs/error.log")
    crashes=$(grep -c 'cache manager process .* exited on signal' \
              "$dir/logs/error.log")
    smash=$(grep -c 'stack smashing detected' "$dir/logs/error.log")
    droplines=$(grep -c 'dropped a message' "$dir/logs/error.log")
    local bad=$(( ${frame_bad:-0} + ${payload_bad:-0} ))
    say "  flood: ${fsent:-?} s, $bad bad ($frame_bad frame-level," \
        "$payload_bad payload-level, ${bad_s:-?}/s) and $valid valid batches" \
        "($blocks blocks); kvroute counted $msgs messages, $dropped dropped," \
        "$stored blocks stored, $gaps gaps"
    say "  requests/s before the flood $before, during $during, after $after;" \
        "probe with the last valid chain: $probe"
    say "  error.log: $lines lines, 'dropped a message' $droplines, helper" \
        "exits on a signal $crashes ('stack smashing detected' $smash)"
    check "w_5xx == 0 && w_errors == 0" "no 5xx ($w_5xx), no socket errors ($w_errors)"
    check "crashes == 0" "the events helper never crashed ($crashes exits on a signal)"
    check "bad >= rate * 8 / 10 * ${fsent%.*} && msgs == bad + valid" \
        "every message arrived: $msgs = $bad bad + $valid valid"
    check "dropped == bad" "every bad message dropped and counted ($dropped of $bad)"
    check "stored == blocks && gaps == 0" "every valid batch applied: $stored of $blocks blocks, $gaps gaps"
    check "$(case "$probe" in "$s2 overlap 4/5") echo 1;; *) echo 0;; esac)" \
        "the last valid chain routes to engine 2 ($probe; expected '$s2 overlap 4/5')"
    check "droplines <= 2" "error log rate-limited: $droplines 'dropped a message' lines"
    check "inflight == 0" "in-flight requests after the load: $inflight"
    verdict "malformed-event flood" "$bad bad messages in ${fsent:-?} s (${bad_s:-?}/s) + $valid valid: $dropped dropped and counted, $stored/$blocks valid blocks applied, helper crashes $crashes, 5xx $w_5xx, req/s $before before / $during during / $after after, $droplines log lines"
    end
}

# --- main ------------------------------------------------------------------

[ -f "$module" ] || { say "$module missing: make module"; exit 1; }
say "module: $module ($(date -u -r "$module" '+%H:%M UTC'))"

all="worker helper server server-retry reload zone flood"
for s in ${*:-$all}; do
    case "$s" in
    worker|helper|server|reload|zone|flood) "s_$s" ;;
    server-retry) s_server "proxy_next_upstream error timeout non_idempotent;" ;;
    *) say "unknown scenario $s (one of: $all)"; exit 2 ;;
    esac
done

say ""
say "== summary ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg))"
cat "$summary"
exit $failed
