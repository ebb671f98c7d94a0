-- wrk script: POSTs 9.5 KB chat bodies built from 16 system prompts, in
-- turn, each with its own short user message.

local words = { "the", "model", "serves", "requests", "from", "a", "shared",
                "prefix", "cache", "of", "blocks", "and", "tokens" }

bodies = {}

for p = 1, 16 do
    local w = {}
    local seed = p * 7919
    for i = 1, 1500 do
        seed = (seed * 1103515245 + 12345) % 2147483648
        w[#w + 1] = words[(seed % #words) + 1]
    end
    bodies[p] = '{"model":"Qwen/Qwen3-0.6B","max_tokens":16,"messages":['
        .. '{"role":"system","content":"You are assistant ' .. p .. '. '
        .. table.concat(w, " ") .. '"},'
        .. '{"role":"user","content":"Summarise the text above in one line."}]}'
end

local n = 0

request = function()
    n = n + 1
    return wrk.format("POST", nil,
                      { ["Content-Type"] = "application/json" },
                      bodies[(n % 16) + 1])
end
