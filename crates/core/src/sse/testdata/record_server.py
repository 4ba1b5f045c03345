"""Serves the MCP tool whose SSE responses are recorded here (see README.md)."""
import asyncio, itertools, sys
from mcp.server.mcpserver import MCPServer, Context
from mcp.server.streamable_http import EventStore

class MemoryStore(EventStore):
    def __init__(self):
        self.n = itertools.count(1)
        self.events = []
    async def store_event(self, stream_id, message):
        eid = f"{stream_id}_{next(self.n)}"
        self.events.append((eid, stream_id, message))
        return eid
    async def replay_events_after(self, last_event_id, send_callback):
        return None

mcp = MCPServer("recorder")

@mcp.tool()
async def inventory(ctx: Context, rows: int = 40) -> str:
    """Returns a table after reporting progress."""
    import json
    for i in range(3):
        await ctx.report_progress(i + 1, 4, f"scanning shelf {i + 1} — ok")
        await asyncio.sleep(0.2)
    await asyncio.sleep(float(sys.argv[2]))  # long enough for a keep-alive comment
    await ctx.report_progress(4, 4, "done")
    table = [{"id": i, "name": f"Café {i} €", "emoji": "😀", "price": 9.5 + i, "tags": ["naïve", "x"]} for i in range(rows)]
    return json.dumps(table, ensure_ascii=False)

app = mcp.streamable_http_app(event_store=MemoryStore(), retry_interval=2000)
if __name__ == "__main__":
    import uvicorn
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
