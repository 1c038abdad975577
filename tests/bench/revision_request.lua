-- revision_request.lua - wrk script: one MCP request, the body from
-- WRK_BODY and the headers from WRK_HEADERS ("Name: value" lines), as
-- revision_bench.mjs prints them.
wrk.method = "POST"
wrk.path = "/mcp"
wrk.body = os.getenv("WRK_BODY")
for k, v in string.gmatch(os.getenv("WRK_HEADERS"), "([^:\n]+): ([^\n]*)") do
    wrk.headers[k] = v
end

done = function(summary, latency, requests)
    io.write(string.format("wrk-result requests=%d non2xx=%d\n",
        summary.requests, summary.errors.status))
end
