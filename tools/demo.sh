#!/usr/bin/env bash
# kvroute demo: 4 emulated vLLM engines (bench/emulator, a small KV cache
# each) behind Debian's nginx twice: once through kvroute (port 8400), once
# through plain round robin (port 8401).  The same requests, a few shared
# system prompts, go through both; the demo prints where each went, why,
# and how many prompt tokens the engine served from its prefix cache.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
run=$top/build/demo
engines=${DEMO_ENGINES:-4}
requests=${DEMO_REQUESTS:-24}
prefixes=${DEMO_PREFIXES:-4}

mkdir -p "$run/logs"
cleanup() {
    [ -f "$run/logs/nginx.pid" ] && kill "$(cat "$run/logs/nginx.pid")" 2>/dev/null || true
    [ -n "${emu_pid:-}" ] && kill "$emu_pid" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap cleanup EXIT

servers=""
for i in $(seq 0 $((engines - 1))); do
    servers="$servers        server 127.0.0.1:$((8411 + i));
"
done

cat > "$run/nginx.conf" <<CONF
load_module $top/build/ngx_http_kvroute_module.so;
worker_processes 2;
error_log logs/error.log notice;
pid logs/nginx.pid;
events { worker_connections 1024; }
http {
    log_format kvroute '\$kvroute_server \$kvroute_reason '
                       '\$kvroute_overlap/\$kvroute_blocks \$kvroute_decision_us';
    client_max_body_size 4m;
    client_body_buffer_size 1m;

    upstream engines_kvroute {
        # 585 blocks of 16 tokens per engine, like the seed experiment
        kvroute mode=approx capacity=585 block_size=16;
$servers    }
    upstream engines_rr {
        kvroute mode=round_robin zone=kvroute_rr:4m;
$servers    }
    server {
        listen 127.0.0.1:8400;
        access_log logs/kvroute.log kvroute;
        location / {
            proxy_pass http://engines_kvroute;
            add_header X-Kvroute "\$kvroute_reason \$kvroute_overlap/\$kvroute_blocks" always;
        }
        location = /kvroute_status { kvroute_status; }
    }
    server {
        listen 127.0.0.1:8401;
        location / {
            proxy_pass http://engines_rr;
            add_header X-Kvroute "\$kvroute_reason" always;
        }
    }
}
CONF

echo "== starting $engines emulated engines (ports 8411..)"
node "$top/bench/emulator/main.js" --engines "$engines" --base-port 8411 \
    --capacity-blocks 585 --time-scale 10 > "$run/logs/emulator.log" 2>&1 &
emu_pid=$!
for _ in $(seq 1 300); do
    grep -q '^ready' "$run/logs/emulator.log" 2>/dev/null && break
    kill -0 "$emu_pid" 2>/dev/null || { cat "$run/logs/emulator.log"; exit 1; }
    sleep 0.1
done

echo "== starting nginx with kvroute (8400) and round robin (8401)"
/usr/sbin/nginx -p "$run" -c "$run/nginx.conf"
sleep 0.5

python3 - "$requests" "$prefixes" <<'PY'
import json, random, sys, urllib.request

requests, prefixes = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(7)
words = "the of and to in is that for it as with was on be by at this from".split()
systems = [" ".join(rng.choice(words) for _ in range(1500)) for _ in range(prefixes)]
plan = [rng.randrange(prefixes) for _ in range(requests)]

def ask(port, p, i):
    body = json.dumps({"model": "Qwen/Qwen3-0.6B", "max_tokens": 4,
        "messages": [{"role": "system", "content": f"Assistant {p}. " + systems[p]},
                     {"role": "user", "content": f"Question number {i}: why?"}]}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
        data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        out = json.load(r)
        return (r.headers.get("x-engine-id"), r.headers.get("X-Kvroute"),
                out["usage"]["prompt_tokens"],
                out["usage"]["prompt_tokens_details"]["cached_tokens"])

for port, name in ((8400, "kvroute (approx)"), (8401, "round robin")):
    print(f"\n-- {name}: {requests} requests, {prefixes} shared system prompts")
    print(f"{'#':>3} {'prefix':>6} {'engine':<10} {'decision':<22} {'prompt':>6} {'cached':>6}")
    hits = cached = total = 0
    where = {}
    for i, p in enumerate(plan):
        engine, decision, prompt, hit = ask(port, p, i)
        where.setdefault(p, set()).add(engine)
        hits += hit > 0; cached += hit; total += prompt
        print(f"{i:>3} {p:>6} {engine:<10} {decision:<22} {prompt:>6} {hit:>6}")
    spread = sum(len(s) for s in where.values()) / len(where)
    print(f"   hit rate {hits}/{requests}, cached-token ratio {cached/total:.3f}, "
          f"engines per prefix {spread:.2f}")
PY

echo
echo "== kvroute's status (curl http://127.0.0.1:8400/kvroute_status)"
curl -s http://127.0.0.1:8400/kvroute_status | grep -E '^kvroute_(indexed_blocks|decisions_total)' | grep -v ' 0$'
