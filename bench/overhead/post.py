#!/usr/bin/env python3
"""POSTs the overhead benchmark's chat bodies over one keep-alive connection.

The 16 bodies are chat.lua's, byte for byte: its generator runs in LuaJIT
doubles, so the arithmetic here is done in doubles the same way.

    post.py PORT [REQUESTS]
"""

import http.client
import math
import sys

WORDS = ("the model serves requests from a shared prefix cache of blocks "
         "and tokens").split()


def lua_mod(a, b):
    # LuaJIT's a % b on numbers
    return a - math.floor(a / b) * b


def bodies():
    out = []
    for p in range(1, 17):
        seed = float(p * 7919)
        words = []
        for _ in range(1500):
            seed = lua_mod(seed * 1103515245.0 + 12345.0, 2147483648.0)
            words.append(WORDS[int(lua_mod(seed, float(len(WORDS))))])
        out.append(('{"model":"Qwen/Qwen3-0.6B","max_tokens":16,"messages":['
                    '{"role":"system","content":"You are assistant %d. %s"},'
                    '{"role":"user","content":"Summarise the text above in '
                    'one line."}]}' % (p, " ".join(words))).encode())
    return out


def main():
    port = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    all_bodies = bodies()
    conn = http.client.HTTPConnection("127.0.0.1", port)
    for i in range(n):
        conn.request("POST", "/v1/chat/completions",
                     body=all_bodies[(i + 1) % 16],
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            sys.exit("status %d" % resp.status)


if __name__ == "__main__":
    main()
