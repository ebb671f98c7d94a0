-- wrk script for the fault runs: valid /v1/completions requests with
-- token-id prompts (keyed by kvroute in every mode, no tokenization in the
-- emulator). Environment:
--   FAULTS_PREFIXES  shared prefixes (default 32), each FAULTS_BLOCKS
--                    blocks of 16 tokens (default 8), then a 16-token tail
--                    unique to the request
--   FAULTS_UNIQUE=1  every request gets a prefix of its own (fills the index)
-- Prints "statuses: 2xx N, 4xx N, 5xx N, other N" and the codes seen.

local prefixes = tonumber(os.getenv("FAULTS_PREFIXES") or "32")
local blocks = tonumber(os.getenv("FAULTS_BLOCKS") or "8")
local unique = os.getenv("FAULTS_UNIQUE") == "1"

local n = 0
local nthreads = 0
local threads_list = {}
tid = 0
codes = {}

-- runs in the main state: each thread gets its number (global tid)
function setup(thread)
    nthreads = nthreads + 1
    thread:set("tid", nthreads)
    table.insert(threads_list, thread)
end

function init(args)
    codes = {}
end

local function prompt(ids)
    return '{"model":"m","max_tokens":2,"prompt":[' .. table.concat(ids, ",")
        .. ']}'
end

request = function()
    n = n + 1
    local ids = {}
    local u = tid * 10000000 + n
    if unique then
        -- two leading ids encode the request's number: a first block
        -- nobody else sends
        ids[1] = 1000 + (u % 100000)
        ids[2] = 1000 + math.floor(u / 100000) % 100000
        for i = 3, blocks * 16 do
            ids[i] = 2000 + i
        end
    else
        local p = (n * 2654435761) % prefixes
        for i = 1, blocks * 16 do
            ids[i] = 1000 + p * 300 + i
        end
    end
    for i = 1, 16 do
        ids[#ids + 1] = 40000 + ((u * 16 + i) % 100000)
    end
    return wrk.format("POST", "/v1/completions",
                      { ["Content-Type"] = "application/json" }, prompt(ids))
end

response = function(status, headers, body)
    codes[status] = (codes[status] or 0) + 1
end

function done(summary, latency, requests)
    local all = {}
    local t = { ok = 0, c4 = 0, c5 = 0, other = 0 }
    for _, thread in ipairs(threads_list) do
        local c = thread:get("codes")
        for k, v in pairs(c) do
            all[k] = (all[k] or 0) + v
            if k >= 200 and k < 300 then
                t.ok = t.ok + v
            elseif k >= 500 then
                t.c5 = t.c5 + v
            elseif k >= 400 then
                t.c4 = t.c4 + v
            else
                t.other = t.other + v
            end
        end
    end
    io.write(string.format("statuses: 2xx %d, 4xx %d, 5xx %d, other %d\n",
                           t.ok, t.c4, t.c5, t.other))
    local list = {}
    for k, v in pairs(all) do
        list[#list + 1] = k .. "=" .. v
    end
    table.sort(list)
    io.write("codes: " .. table.concat(list, " ") .. "\n")
end
