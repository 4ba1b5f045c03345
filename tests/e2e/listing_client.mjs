// An agent's steps with the official TypeScript client (@modelcontextprotocol/sdk
// 1.x, MCP 2025-11-25) over Streamable HTTP: list the tools (the SDK checks the
// listing against its ListToolsResultSchema), call tools, and report what the
// client read with the response body as it crossed the wire.
//
// stdin:  {"url": "...", "steps": [{"list": true} | {"name": "...", "arguments": {...}} |
//          {"listChanged": N}, ...]}
// stdout: {"protocolVersion", "steps": [{"tools", "contentType", "body"} |
//          {"name", "result" | "error", "contentType", "body"} | {"listChanged"}, ...]}
// A {"listChanged": N} step waits (up to 10 s) until the client has received N
// `notifications/tools/list_changed` in all (on any stream), and reports how many.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const plan = JSON.parse(Buffer.concat(chunks).toString("utf8"));

let pending = null;
const recordingFetch = async (url, init) => {
  const response = await fetch(url, init);
  const body = typeof init?.body === "string" ? init.body : "";
  if (init?.method === "POST" && /"method":"tools\/(call|list)"/.test(body)) {
    const clone = response.clone();
    pending = clone.text().then((text) => ({ contentType: response.headers.get("content-type"), body: text }));
  }
  return response;
};

const client = new Client({ name: "mcp-toon-e2e", version: "1" });
let listChanged = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  listChanged += 1;
});
const transport = new StreamableHTTPClientTransport(new URL(plan.url), { fetch: recordingFetch });
await client.connect(transport);
const out = { protocolVersion: transport.protocolVersion ?? null, steps: [] };
for (const step of plan.steps) {
  pending = null;
  const entry = {};
  try {
    if (step.list) {
      entry.tools = (await client.listTools()).tools;
    } else if (step.listChanged) {
      const deadline = Date.now() + 10000;
      while (listChanged < step.listChanged && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      entry.listChanged = listChanged;
    } else {
      entry.name = step.name;
      entry.result = await client.callTool({ name: step.name, arguments: step.arguments ?? {} });
    }
  } catch (err) {
    entry.error = String(err?.message ?? err);
  }
  if (pending) Object.assign(entry, await pending);
  out.steps.push(entry);
}
await client.close();
process.stdout.write(JSON.stringify(out));
