// Calls MCP tools with the official TypeScript client (@modelcontextprotocol/sdk
// 1.x, which speaks MCP 2025-11-25) over Streamable HTTP, and reports each
// result together with the response body as it crossed the wire.
//
// stdin:  {"url": "...", "calls": [{"name": "...", "arguments": {...}}, ...]}
// stdout: {"server": {...}, "protocolVersion": "...",
//          "calls": [{"name", "result" | "error", "contentType", "body"}, ...]}
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const plan = JSON.parse(Buffer.concat(chunks).toString("utf8"));

// Each tools/call response body, read from a clone so the client reads the
// same bytes as it would without this hook.
let pending = null;
const recordingFetch = async (url, init) => {
  const response = await fetch(url, init);
  const body = typeof init?.body === "string" ? init.body : "";
  if (init?.method === "POST" && body.includes('"method":"tools/call"')) {
    const clone = response.clone();
    pending = clone.text().then((text) => ({ contentType: response.headers.get("content-type"), body: text }));
  }
  return response;
};

const client = new Client({ name: "mcp-toon-e2e", version: "1" });
const transport = new StreamableHTTPClientTransport(new URL(plan.url), { fetch: recordingFetch });
await client.connect(transport);
const out = { server: client.getServerVersion(), protocolVersion: transport.protocolVersion ?? null, calls: [] };
for (const call of plan.calls) {
  pending = null;
  const entry = { name: call.name };
  try {
    entry.result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} });
  } catch (err) {
    entry.error = String(err?.message ?? err);
  }
  if (pending) Object.assign(entry, await pending);
  out.calls.push(entry);
}
await client.close();
process.stdout.write(JSON.stringify(out));
