-- http_tools_list.lua - wrk script: POST tools/list on one MCP session.
-- The session id comes from the environment (MCP_SESSION_ID).
wrk.method = "POST"
wrk.path = os.getenv("MCP_PATH") or "/mcp"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Mcp-Session-Id"] = os.getenv("MCP_SESSION_ID")
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"

local bad = 0
response = function(status, headers, body)
    if status ~= 200 then
        bad = bad + 1
    end
end

done = function(summary, latency, requests)
    local non2xx = summary.errors.status
    io.write(string.format("wrk-result requests=%d duration_us=%d non2xx=%d\n",
        summary.requests, summary.duration, non2xx))
end
