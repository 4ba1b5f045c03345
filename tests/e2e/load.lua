-- wrk script for tests/e2e/test_load.py and scripts/bench.py (via loadgen.py).
--
-- Environment:
--   LOAD_CASES         comma-separated case names; request i goes to /load/<case i mod n>
--   LOAD_PER_THREAD    each thread stops after this many responses (0: no limit)
--                      and creates the file LOAD_DONE_DIR/done-<thread>; wrk's
--                      run lasts its -d all the same, so the caller sends
--                      SIGINT once every thread is done
--   LOAD_EXPECTED_DIR  if set, every response body is compared with
--                      <dir>/<case>.expected, the case named by the response's
--                      x-case header (set by the canned upstream)
--   LOAD_BODY          the POST body (a JSON-RPC tools/call)
--   LOAD_HEADERS       optional request headers besides the defaults, one
--                      `name: value` per line (e.g. MCP 2026-07-28's
--                      `mcp-method`)
-- Prints one line `LOAD {json}` with the totals of all threads.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

local function read_file(path)
  local f = assert(io.open(path, "rb"))
  local data = f:read("*a")
  f:close()
  return data
end

function init(args)
  cases = {}
  for name in string.gmatch(os.getenv("LOAD_CASES"), "[^,]+") do
    table.insert(cases, name)
  end
  per_thread = tonumber(os.getenv("LOAD_PER_THREAD"))
  expected = {}
  local dir = os.getenv("LOAD_EXPECTED_DIR") or ""
  if dir ~= "" then
    for _, name in ipairs(cases) do
      expected[name] = read_file(dir .. "/" .. name .. ".expected")
    end
  end
  local headers = {
    ["content-type"] = "application/json",
    ["accept"] = "application/json, text/event-stream",
    ["mcp-protocol-version"] = "2026-07-28",
  }
  for name, value in string.gmatch(os.getenv("LOAD_HEADERS") or "", "([^:\n]+):%s*([^\n]*)") do
    headers[name] = value
  end
  requests = {}
  for i, name in ipairs(cases) do
    requests[i] = wrk.format("POST", "/load/" .. name, headers, os.getenv("LOAD_BODY"))
  end
  next_case = 0
  responses = 0
  non_2xx = 0
  mismatched = 0
  for _, name in ipairs(cases) do
    _G["count_" .. name] = 0
  end
end

function request()
  next_case = next_case % #requests + 1
  return requests[next_case]
end

function response(status, headers, body)
  responses = responses + 1
  if status < 200 or status > 299 then
    non_2xx = non_2xx + 1
  end
  local name = headers["x-case"]
  if name ~= nil and _G["count_" .. name] ~= nil then
    _G["count_" .. name] = _G["count_" .. name] + 1
  end
  if next(expected) ~= nil and (name == nil or expected[name] ~= body) then
    mismatched = mismatched + 1
  end
  if per_thread > 0 and responses == per_thread then
    local f = assert(io.open(os.getenv("LOAD_DONE_DIR") .. "/done-" .. tid, "w"))
    f:close()
    wrk.thread:stop()
  end
end

function done(summary, latency, requests_)
  local total, bad, wrong = 0, 0, 0
  local per_case = {}
  for _, t in ipairs(threads) do
    total = total + t:get("responses")
    bad = bad + t:get("non_2xx")
    wrong = wrong + t:get("mismatched")
  end
  local names = {}
  for name in string.gmatch(os.getenv("LOAD_CASES"), "[^,]+") do
    local n = 0
    for _, t in ipairs(threads) do
      n = n + (t:get("count_" .. name) or 0)
    end
    table.insert(names, string.format('"%s":%d', name, n))
  end
  local e = summary.errors
  io.write(string.format(
    'LOAD {"responses":%d,"non_2xx":%d,"mismatched":%d,"per_case":{%s},' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"requests_per_s":%.1f,"p50_us":%d,"p99_us":%d,"mean_us":%.1f}\n',
    total, bad, wrong, table.concat(names, ","),
    e.connect, e.read, e.write, e.status, e.timeout,
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), latency.mean))
end
