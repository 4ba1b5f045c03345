// The official TypeScript MCP client (SDK 1.x, MCP 2025-11-25) pages through
// a cut tool result: calls TOOL with ARGS at URL, then the page tool with
// each handle the notices give, and prints every result as one JSON line
// ({"isError":bool,"texts":[...]}), then {"sessionId":...} last.
//
//   node page_client.mjs URL TOOL ARGS_JSON PAGE_TOOL [MAX_PAGES]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, tool, argsJson, pageTool, maxPages = "1000"] = process.argv.slice(2);
const client = new Client({ name: "mcp-toon-e2e-ts", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const listed = await client.listTools();
console.log(JSON.stringify({ tools: listed.tools.map((t) => t.name), protocol: transport.protocolVersion ?? null }));
const out = (r) => ({ isError: r.isError === true, texts: r.content.filter((c) => c.type === "text").map((c) => c.text) });
let result = await client.callTool({ name: tool, arguments: JSON.parse(argsJson) });
console.log(JSON.stringify(out(result)));
for (let n = 0; n < Number(maxPages); n++) {
  const notice = result.content.at(-1)?.text ?? "";
  const m = notice.match(/\{"handle":"([A-Za-z0-9_-]+)"\}/);
  if (!m) break;
  result = await client.callTool({ name: pageTool, arguments: { handle: m[1] } });
  console.log(JSON.stringify(out(result)));
}
console.log(JSON.stringify({ sessionId: transport.sessionId ?? null }));
await client.close();
