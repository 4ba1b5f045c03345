//! The native `mcp-toon` tool: measures what the plugin would do to captured
//! payloads, and converts JSON ⇄ TOON with the plugin's settings. It maps
//! files and standard streams onto the core and decides nothing itself.
//!
//! Exit codes: 0 done; 1 a payload or input could not be read or converted;
//! 2 a usage error or a configuration the plugin would refuse (same
//! message as the plugin logs).

pub(crate) mod capture;
mod html;
pub mod listing;
pub mod measure;
mod text;
pub mod tokens;

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use mcp_toon_engine::config::{Settings, StreamInfo};
use mcp_toon_engine::convert;
use mcp_toon_engine::marker;
use measure::{Payload, Target};
use tokens::Tokenizer;

#[derive(Debug, Parser)]
#[command(
    name = "mcp-toon",
    version,
    about = "Measure and try what the mcp-toon plugin does to MCP tool results",
    long_about = "Measure and try what the mcp-toon plugin does to MCP tool results.\n\n\
                  Exit status: 0 done, 1 unreadable or invalid input, 2 usage error or a \
                  configuration the plugin would refuse."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run captured payloads through the plugin's pipeline and report, per
    /// text block, the outcome and the bytes and o200k_base tokens before
    /// and after.
    Measure(MeasureArgs),
    /// Encode a JSON text (standard input) as TOON (standard output), with
    /// the header the configuration sets.
    Encode(EncodeArgs),
    /// Decode a TOON text (standard input; with or without the plugin's
    /// marker line and fence) to JSON (standard output).
    Decode(DecodeArgs),
}

/// The settings the plugin would apply.
#[derive(Debug, Args)]
struct SettingsArgs {
    /// The plugin configuration (JSON, as given to Envoy); defaults without.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Tool name the results came from (selects `tools.<name>` settings).
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// Route name the stream would have (for `servers[].match.route`).
    #[arg(long, value_name = "NAME")]
    route: Option<String>,
    /// Cluster name the stream would have (for `servers[].match.cluster`).
    #[arg(long, value_name = "NAME")]
    cluster: Option<String>,
    /// Authority the stream would have (for `servers[].match.authority`).
    #[arg(long, value_name = "HOST")]
    authority: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// An aligned table and a totals line.
    Text,
    /// One JSON document, for scripts.
    Json,
}

#[derive(Debug, Args)]
struct MeasureArgs {
    #[command(flatten)]
    settings: SettingsArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Also write a self-contained HTML page with a chart of tokens before
    /// and after per payload.
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
    /// Apply this JMESPath query to every result, as an agent sending it in
    /// the query argument would (turns `project.queries` on at the top
    /// level; a tool or server entry that turns it off still wins).
    #[arg(long, value_name = "EXPR")]
    project: Option<String>,
    /// Captured payloads: files (a JSON-RPC response or batch, a
    /// CallToolResult, an SSE stream, or any JSON or text, taken as one text
    /// block), directories of them, or `-` for standard input.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
struct EncodeArgs {
    #[command(flatten)]
    settings: SettingsArgs,
}

#[derive(Debug, Args)]
struct DecodeArgs {
    /// Indent the JSON output.
    #[arg(long)]
    pretty: bool,
}

/// A failure to report on standard error, with the exit code.
#[derive(Debug)]
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn input(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
        }
    }

    fn config(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }
}

/// Runs the tool with the process arguments.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Measure(args) => run_measure(&args),
        Command::Encode(args) => run_encode(&args),
        Command::Decode(args) => run_decode(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("{}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn load_settings(args: &SettingsArgs) -> Result<(Settings, Target), Failure> {
    load_settings_with(args, false)
}

/// The settings, with `project.queries` turned on at the top level when
/// `queries` (the command line asks for a query).
fn load_settings_with(args: &SettingsArgs, queries: bool) -> Result<(Settings, Target), Failure> {
    let text = match &args.config {
        Some(path) => fs::read_to_string(path).map_err(|e| {
            Failure::config(format!(
                "mcp-toon: cannot read configuration {}: {e}",
                path.display()
            ))
        })?,
        None => String::new(),
    };
    let text = if queries { with_queries(&text)? } else { text };
    let settings = Settings::from_json(&text).map_err(|e| Failure::config(e.to_string()))?;
    let target = Target {
        tool: args.tool.clone(),
        stream: StreamInfo {
            route: args.route.clone(),
            cluster: args.cluster.clone(),
            authority: args.authority.clone(),
        },
        query: None,
    };
    Ok((settings, target))
}

/// The configuration text with `"project": {"queries": true}` merged in.
fn with_queries(text: &str) -> Result<String, Failure> {
    let invalid = |e: String| Failure::config(format!("mcp-toon configuration: {e}"));
    let mut config: serde_json::Value = if text.trim().is_empty() {
        serde_json::json!({})
    } else {
        serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?
    };
    let Some(top) = config.as_object_mut() else {
        return Err(invalid("must be a JSON object".into()));
    };
    let project = top
        .entry("project")
        .or_insert_with(|| serde_json::json!({}));
    let Some(project) = project.as_object_mut() else {
        return Err(invalid("project: must be an object".into()));
    };
    project.insert("queries".into(), serde_json::Value::Bool(true));
    Ok(config.to_string())
}

fn run_measure(args: &MeasureArgs) -> Result<(), Failure> {
    let (settings, mut target) = load_settings_with(&args.settings, args.project.is_some())?;
    target.query = args.project.clone();
    let mut files = Vec::new();
    for path in &args.paths {
        collect_files(path, &mut files)?;
    }
    if files.is_empty() {
        return Err(Failure::input("mcp-toon: no payload files found"));
    }
    let mut payloads = Vec::with_capacity(files.len());
    for file in files {
        let bytes = if file == Path::new(STDIN) {
            read_stdin_bytes()?
        } else {
            fs::read(&file).map_err(|e| {
                Failure::input(format!("mcp-toon: cannot read {}: {e}", file.display()))
            })?
        };
        payloads.push(Payload {
            name: file.display().to_string(),
            bytes,
        });
    }
    let tokenizer = Tokenizer::o200k_base().map_err(|e| Failure::input(e.to_string()))?;
    let m = measure::measure(&settings, &target, &tokenizer, &payloads);
    if let Some(path) = &args.report {
        fs::write(path, html::render(&m)).map_err(|e| {
            Failure::input(format!("mcp-toon: cannot write {}: {e}", path.display()))
        })?;
    }
    let out = match args.format {
        Format::Text => text::render(&m),
        Format::Json => serde_json::to_string_pretty(&m)
            .map(|s| s + "\n")
            .map_err(|e| Failure::input(format!("mcp-toon: {e}")))?,
    };
    write_stdout(&out)
}

/// A file as it is; a directory's files, depth first in name order, hidden
/// ones (names starting with `.`) left out.
fn collect_files(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), Failure> {
    if path == Path::new(STDIN) {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let meta = fs::metadata(path)
        .map_err(|e| Failure::input(format!("mcp-toon: cannot read {}: {e}", path.display())))?;
    if !meta.is_dir() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = fs::read_dir(path)
        .map_err(|e| Failure::input(format!("mcp-toon: cannot read {}: {e}", path.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.'))
        })
        .collect();
    entries.sort();
    for entry in entries {
        collect_files(&entry, out)?;
    }
    Ok(())
}

/// The PATH that stands for standard input.
const STDIN: &str = "-";

fn read_stdin_bytes() -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::input(format!("mcp-toon: cannot read standard input: {e}")))?;
    Ok(bytes)
}

fn read_stdin() -> Result<String, Failure> {
    String::from_utf8(read_stdin_bytes()?)
        .map_err(|e| Failure::input(format!("mcp-toon: standard input is not UTF-8: {e}")))
}

fn run_encode(args: &EncodeArgs) -> Result<(), Failure> {
    let (settings, target) = load_settings(&args.settings)?;
    let input = read_stdin()?;
    let toon = convert::json_to_toon(&input)
        .map_err(|e| Failure::input(format!("mcp-toon encode: {e}")))?;
    let scope = settings.server_for(&target.stream);
    let policy = settings.policy(scope, target.tool.as_deref());
    let out = marker::wrap(&toon, policy.toon.header, &policy.toon.marker);
    write_stdout(&(out + "\n"))
}

fn run_decode(args: &DecodeArgs) -> Result<(), Failure> {
    let input = read_stdin()?;
    let value = convert::decode_value(&input)
        .map_err(|e| Failure::input(format!("mcp-toon decode: {e}")))?;
    let out = if args.pretty {
        serde_json::to_string_pretty(&value)
    } else {
        serde_json::to_string(&value)
    }
    .map_err(|e| Failure::input(format!("mcp-toon decode: {e}")))?;
    write_stdout(&(out + "\n"))
}

fn write_stdout(text: &str) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        // A reader that stopped early (`| head`) is not an error of ours.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::input(format!(
            "mcp-toon: cannot write standard output: {e}"
        ))),
    }
}
