//! MCP servers as the operator meets them: a repository's `.mcp.json`,
//! approved before anything runs, and `holon mcp` through the binary,
//! offline and through a runtime.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use super::approvals::wait_requests;
use super::mcp::{host, results, stub_server};
use super::runtime_core::{kind, prompt, wait_event};
use holon::model::approval::Approval;
use holon::model::message::Priority;
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};

#[test]
fn holon_mcp_list_offline_online_and_a_bad_config() {
    use super::support::{stderr, Daemon, Home};
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("config")).unwrap();
    let config = home.path().join("config/config.toml");
    let server = stub_server().display().to_string();
    std::fs::write(
        &config,
        format!(
            "[mcp_servers.stub]\ncommand = \"{server}\"\n\n[mcp_servers.off]\ncommand = \"{server}\"\nenabled = false\n\n\
             [mcp_servers.broken]\ncommand = \"/no/such/server\"\n"
        ),
    )
    .unwrap();
    let list = |home: &Home| -> Value {
        serde_json::from_str(&home.ok(&["mcp", "list", "--json"])).unwrap()
    };
    let named = |all: &Value, name: &str| -> Value {
        all.as_array()
            .and_then(|a| a.iter().find(|s| s["name"] == name).cloned())
            .unwrap_or_else(|| panic!("no {name} in {all}"))
    };
    // No runtime: each server is started here as a runtime would, asked
    // for its tools, and stopped.
    let offline = list(&home);
    assert_eq!(named(&offline, "off")["state"], "disabled");
    let stub = named(&offline, "stub");
    assert_eq!(stub["state"], "running", "{stub}");
    assert!(
        stub["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "{stub}"
    );
    let broken = named(&offline, "broken");
    assert_eq!(broken["state"], "failed", "{broken}");
    assert!(
        broken["reason"]
            .as_str()
            .unwrap_or("")
            .contains("cannot start"),
        "{broken}"
    );
    let text = home.ok(&["mcp", "list"]);
    assert!(text.starts_with("no runtime is running"), "{text}");
    assert!(text.contains("stub (stdio) running"), "{text}");

    let out = home.run(&["--detach"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let daemon = Daemon(&home);
    let online = list(&home);
    assert_eq!(
        named(&online, "stub")["state"],
        "idle",
        "nothing starts before a turn"
    );
    assert!(!home.ok(&["mcp", "list"]).contains("no runtime"));
    // Disabled through the runtime, kept by the store: still so offline.
    assert_eq!(home.ok(&["mcp", "disable", "stub"]), "disabled `stub`\n");
    assert_eq!(named(&list(&home), "stub")["state"], "disabled");
    drop(daemon);
    assert_eq!(named(&list(&home), "stub")["state"], "disabled");
    assert_eq!(home.ok(&["mcp", "enable", "stub"]), "enabled `stub`\n");
    assert_eq!(named(&list(&home), "stub")["state"], "running");

    std::fs::write(
        &config,
        "[mcp_servers.both]\ncommand = \"x\"\nurl = \"http://127.0.0.1:1/mcp\"\n",
    )
    .unwrap();
    let out = home.run(&["mcp", "list"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("key `mcp_servers.both.url`"), "{err}");
    assert!(
        err.contains("either `command` (stdio) or `url` (HTTP), not both"),
        "{err}"
    );
}

/// A repository whose `.mcp.json` defines the stub as `proj`.
fn project_with_stub(root: &Path) -> PathBuf {
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let file = json!({"mcpServers": {"proj": {"command": stub_server().display().to_string(), "args": ["--quiet-flag"]}}});
    std::fs::write(repo.join(".mcp.json"), file.to_string()).unwrap();
    repo.canonicalize().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_server_runs_only_once_approved_and_only_where_it_belongs() {
    let dir = tempfile::tempdir().unwrap();
    let repo = project_with_stub(dir.path());
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools("Before.", &[("mcp__proj__echo", json!({"text": "early"}))]),
        Scripted::text("It is not there."),
        Scripted::tools(
            "After.",
            &[
                ("mcp__proj__echo", json!({"text": "approved"})),
                ("mcp__proj__cwd", json!({})),
            ],
        ),
        Scripted::text("It ran."),
    ]));
    let host = host(dir.path(), &provider, Vec::new(), Approval::OnRequest).await;
    let req = holon::model::workspace::UseWorkspace {
        path: Some(repo.display().to_string()),
        ..Default::default()
    };
    host.use_workspace("main", req).await.unwrap();
    host.submit(prompt("before", Priority::Normal))
        .await
        .unwrap();
    wait_requests(&provider, 2).await;
    // Not approved: not offered, not started, and the call is refused.
    assert!(!provider.requests()[0]
        .tools
        .iter()
        .any(|t| t.name.starts_with("mcp__")));
    // Told why, and that only the operator can change it.
    let told = results(&provider, 1);
    assert_eq!(told[0].1["retryable"], false, "{:?}", told[0]);
    let message = told[0].1["message"].as_str().unwrap_or_default();
    assert!(message.contains("awaiting approval"), "{message}");
    let views = host.mcp_servers(None);
    assert_eq!(views.len(), 1);
    assert_eq!(views[0].state, "awaiting_approval");
    assert_eq!(views[0].workspace.as_deref(), Some(repo.to_str().unwrap()));
    let line = format!("{} --quiet-flag", stub_server().display());
    assert_eq!(views[0].command_line.as_deref(), Some(line.as_str()));

    // A name the file does not define is refused, and says which it has.
    let wrong = host.mcp_approve(&repo, "other", None).await.unwrap_err();
    assert!(wrong.to_string().contains("it defines: proj"), "{wrong}");
    // What the operator was shown is what is approved, or nothing.
    let stale = host
        .mcp_approve(&repo, "proj", Some("npx something-else"))
        .await
        .unwrap_err();
    assert!(stale.to_string().contains("look again"), "{stale}");
    let approved = host.mcp_approve(&repo, "proj", Some(&line)).await.unwrap();
    assert_eq!(approved.command_line, line);
    wait_event(&host, "the approval", kind("mcp_server_approved")).await;
    host.submit(prompt("after", Priority::Normal))
        .await
        .unwrap();
    wait_requests(&provider, 4).await;
    let told = results(&provider, 3);
    let [.., echo, cwd] = &told[..] else {
        panic!("{told:?}")
    };
    assert_eq!(echo.1["text"], "approved");
    // It runs in its workspace, as the file's relative paths expect.
    assert_eq!(cwd.1["text"], repo.display().to_string());
    assert_eq!(host.mcp_servers(None)[0].state, "running");

    // A variable added after approval is a different command: the file
    // cannot slip in a PATH or LD_PRELOAD unasked.
    let file = json!({"mcpServers": {"proj": {"command": stub_server().display().to_string(),
        "args": ["--quiet-flag"], "env": {"LD_PRELOAD": "/tmp/evil.so"}}}});
    std::fs::write(repo.join(".mcp.json"), file.to_string()).unwrap();
    let views = host.mcp_servers(Some(&repo));
    assert_eq!(views[0].state, "awaiting_approval", "{views:?}");
    // The file gone, its servers go too.
    std::fs::remove_file(repo.join(".mcp.json")).unwrap();
    assert_eq!(host.mcp_servers(Some(&repo)), Vec::new());
    host.shutdown().await;
}

#[test]
fn holon_mcp_approve_offline_and_list_from_inside_the_project() {
    use super::support::{stderr, Home};
    let home = Home::new();
    let repo = project_with_stub(home.path());
    // A repository: from anywhere inside, the workspace is its root.
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(init.success());
    let sub = repo.join("src");
    std::fs::create_dir_all(&sub).unwrap();
    let sub_arg = sub.display().to_string();
    let list = |home: &Home| -> Value {
        serde_json::from_str(&home.ok(&["mcp", "list", "--json", "--dir", &sub_arg])).unwrap()
    };
    assert_eq!(list(&home)[0]["state"], "awaiting_approval");
    let text = home.ok(&["mcp", "list", "--dir", &sub_arg]);
    assert!(text.contains("awaiting your approval to run"), "{text}");
    let out = home.run(&["mcp", "approve", "nope", "--dir", &sub_arg]);
    assert!(!out.status.success());
    // Not on a terminal: nothing is approved unasked; the line is shown.
    let line = list(&home)[0]["command_line"].as_str().unwrap().to_owned();
    let asked = home.run(&["mcp", "approve", "proj", "--dir", &sub_arg]);
    assert!(!asked.status.success());
    let said = stderr(&asked);
    assert!(said.contains(&line) && said.contains("--expect"), "{said}");
    let wrong = home.run(&[
        "mcp", "approve", "proj", "--dir", &sub_arg, "--expect", "npx x",
    ]);
    assert!(stderr(&wrong).contains("look again"), "{}", stderr(&wrong));
    let said = home.ok(&[
        "mcp", "approve", "proj", "--dir", &sub_arg, "--expect", &line,
    ]);
    assert!(said.starts_with("approved `proj` of "), "{said}");
    // Approved: listed with no runtime, it is started here and answers.
    assert_eq!(list(&home)[0]["state"], "running");
}

/// A `.mcp.json` server starts under the sandbox of the workspace it is
/// the workspace's: here its own policy turns the sandbox off, so a write
/// outside the server's directory, which the runtime's default refuses,
/// goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_server_runs_under_its_workspaces_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let repo = project_with_stub(dir.path());
    let outside = dir.path().join("outside.txt");
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "Writing.",
            &[(
                "mcp__proj__touch",
                json!({"path": outside.display().to_string()}),
            )],
        ),
        Scripted::text("Done."),
    ]));
    let host = host(dir.path(), &provider, Vec::new(), Approval::Never).await;
    let req = holon::model::workspace::UseWorkspace {
        path: Some(repo.display().to_string()),
        ..Default::default()
    };
    let used = host.use_workspace("main", req).await.unwrap();
    let off = holon::model::approval::PolicyChange {
        sandbox: Some(holon::model::sandbox::SandboxMode::Off),
        ..Default::default()
    };
    host.set_workspace_policy("main", &used.execution.workspace_id, off)
        .await
        .unwrap();
    let line = format!("{} --quiet-flag", stub_server().display());
    host.mcp_approve(&repo, "proj", Some(&line)).await.unwrap();
    host.submit(prompt("write", Priority::Normal))
        .await
        .unwrap();
    wait_requests(&provider, 2).await;
    let told = results(&provider, 1);
    assert!(!told[0].2, "{:?}", told[0]);
    assert!(outside.exists(), "the workspace's sandbox (off) applied");
    host.shutdown().await;
}
