//! `mcp-toon`: measure what the plugin does to captured MCP tool results,
//! and convert JSON ⇄ TOON with its settings. See `mcp-toon --help`.

fn main() -> std::process::ExitCode {
    mcp_toon_cli::main()
}
