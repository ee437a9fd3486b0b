//! What the MCP tests share: finding server-everything, starting its HTTP mode, the fake
//! server, and calling a tool through a `ToolSet`.

#![allow(dead_code, unreachable_pub)] // each test file uses its own part

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use motet_directives::{ToolArgs, ToolCallView, ToolResult};
use motet_mcp::{McpClient, McpServerConfig};
use motet_runtime::tool::ToolSet;

/// The installed server-everything package (`MOTET_MCP_EVERYTHING`), or a `skipped:` line.
pub fn everything() -> Option<PathBuf> {
    match std::env::var("MOTET_MCP_EVERYTHING") {
        Ok(dir) if Path::new(&dir).join("dist/index.js").is_file() => Some(PathBuf::from(dir)),
        _ => {
            motet_runtime::testing::missing(
                "MOTET_MCP_EVERYTHING is not set to an installed server-everything \
                 (eval \"$(bash scripts/mcp-everything.sh env)\")",
            );
            None
        }
    }
}

/// server-everything over stdio.
pub fn stdio_config(dir: &Path) -> McpServerConfig {
    McpServerConfig::stdio("everything", "node")
        .arg(dir.join("dist/index.js").display().to_string())
        .arg("stdio")
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/mcp-everything.sh")
}

/// server-everything in Streamable HTTP mode, started through the project's script on a free
/// port; stopped when dropped.
pub struct HttpEverything {
    child: Child,
    pub url: String,
}

impl HttpEverything {
    pub fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|addr| addr.port())
            .expect("a free port");
        Self::start_on(port)
    }

    /// On a given port (to start a server again where a client expects it).
    pub fn start_on(port: u16) -> Self {
        let child = Command::new("bash")
            .arg(script())
            .arg("serve-http")
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("bash runs the script");
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "server-everything did not listen on {port} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl HttpEverything {
    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse()
            .expect("the port of our own url")
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fake server in one of its modes (see fixtures/fake_server.py).
pub fn fake_config(mode: &str) -> McpServerConfig {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_server.py");
    McpServerConfig::stdio("fake", "python3")
        .arg(script.display().to_string())
        .arg(mode)
}

/// A set of the client's tools, with a time limit.
pub async fn tool_set(client: &McpClient, timeout: Duration) -> ToolSet {
    let mut builder = ToolSet::builder().with_timeout(timeout);
    for tool in client.tools().await.expect("the tool list") {
        builder = builder.tool(tool);
    }
    builder.build().expect("valid tool names")
}

/// Calls `name` with `args` through the set, as an agent would.
pub async fn call(tools: &ToolSet, name: &str, args: serde_json::Value) -> ToolResult {
    let args = ToolArgs::from_value(&args);
    tools
        .dispatch(ToolCallView {
            id: "call_1",
            name,
            args: &args,
        })
        .await
}

/// The fake server over Streamable HTTP (`fake_server.py http <mode>`) on a free port;
/// stopped when dropped.
pub struct FakeHttp {
    child: Child,
    pub url: String,
}

impl FakeHttp {
    /// Starts it and waits for the port it prints.
    pub fn start(mode: &str) -> Self {
        use std::io::BufRead;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg("http")
            .arg(mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the fake server");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the fake server prints its port");
        let port = line
            .trim()
            .strip_prefix("port ")
            .expect("a `port N` line")
            .to_owned();
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for FakeHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether python3 runs (the project's fake MCP server is a python script); prints a
/// `skipped:` line without it, and fails under `CI=true`.
pub(crate) fn python() -> bool {
    let found = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !found {
        motet_runtime::testing::missing(
            "python3 is not installed (the fake MCP server is a python script)",
        );
    }
    found
}
