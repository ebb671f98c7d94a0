-- wrk script for the soak: 70% valid chat and completions requests over
-- 32 shared prefixes, 30% bad bodies of every kind kvroute must survive;
-- counts responses by status and by whether the request was valid.

local words = { "the", "model", "serves", "requests", "from", "a", "shared",
                "prefix", "cache", "of", "blocks", "and", "tokens" }

local prefixes = {}

for p = 1, 32 do
    local w = {}
    local seed = p * 7919
    for i = 1, 400 do
        seed = (seed * 1103515245 + 12345) % 2147483648
        w[#w + 1] = words[(seed % #words) + 1]
    end
    prefixes[p] = "You are assistant " .. p .. ". " .. table.concat(w, " ")
end

local bad = {
    "this is not json",
    '{"model":"m","messages":[{"role":"user","content":"trunc',
    '{"model":"m","prompt":"bad \255\254 utf8"}',
    '{"prompt":' .. string.rep("[", 5000) .. string.rep("]", 5000) .. '}',
    '{"model":"m","prompt":""}',
    '[1,2,3]',
    '{"model":"m","messages":"not a list"}',
}

local n = 0
counts = {}

function init(args)
    counts = { ok = 0, engine4xx = 0, other = 0, s5xx = 0 }
end

request = function()
    n = n + 1
    local r = (n * 2654435761) % 100
    if r < 30 then

        return wrk.format("POST", "/v1/completions",
                          { ["Content-Type"] = "application/json",
                            ["X-Soak-Valid"] = "0" },
                          bad[(n % #bad) + 1])
    end
    local p = prefixes[(n % 32) + 1]
    local body
    if r < 65 then
        body = '{"model":"m","max_tokens":4,"messages":[{"role":"system",'
            .. '"content":"' .. p .. '"},{"role":"user","content":"q' .. n
            .. '"}]}'
        return wrk.format("POST", "/v1/chat/completions",
                          { ["Content-Type"] = "application/json" }, body)
    end
    body = '{"model":"m","max_tokens":4,"prompt":"' .. p .. ' q' .. n .. '"}'
    return wrk.format("POST", "/v1/completions",
                      { ["Content-Type"] = "application/json" }, body)
end

response = function(status, headers, body)
    if status >= 200 and status < 300 then
        counts.ok = counts.ok + 1
    elseif status >= 500 then
        counts.s5xx = counts.s5xx + 1
    elseif status >= 400 then
        counts.engine4xx = counts.engine4xx + 1
    else
        counts.other = counts.other + 1
    end
end

local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

function done(summary, latency, requests)
    local t = { ok = 0, engine4xx = 0, other = 0, s5xx = 0 }
    for _, thread in ipairs(threads) do
        local c = thread:get("counts")
        for k, v in pairs(c) do
            t[k] = t[k] + v
        end
    end
    io.write(string.format("statuses: 2xx %d, 4xx %d (engine answers to bad bodies), 5xx %d, other %d\n",
                           t.ok, t.engine4xx, t.s5xx, t.other))
end
