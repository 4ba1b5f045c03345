// Preloaded into the 0.1.16 reference server (node --import), from the
// server's folder: logs every server-to-client message sent without a related
// request — those go out on the session's standalone GET stream — and whether
// that stream was open. A request sent while it is not open is stored for a
// replay a first GET never asks for, so the client never sees it: the race
// tests/e2e/test_conformance.py retries only when this log shows it.
//
// The SDK module is imported by its file URL under the server's own
// node_modules, the instance the server uses; `_streamMapping` and
// `_standaloneSseStreamId` are fields of that locked SDK version (1.32.2).
import path from "node:path";
import { pathToFileURL } from "node:url";

const file = path.join(process.cwd(), "node_modules/@modelcontextprotocol/sdk/dist/esm/server/webStandardStreamableHttp.js");
const { WebStandardStreamableHTTPServerTransport: Transport } = await import(pathToFileURL(file).href);
const send = Transport.prototype.send;
Transport.prototype.send = async function (message, options) {
  const request = typeof message?.method === "string" && message.id !== undefined;
  if (request && options?.relatedRequestId === undefined) {
    const open = this._streamMapping.get(this._standaloneSseStreamId) !== undefined;
    console.log(`[standalone-trace] ${message.method} session=${this.sessionId} get-stream=${open ? "open" : "not-open"}`);
  }
  return send.call(this, message, options);
};
