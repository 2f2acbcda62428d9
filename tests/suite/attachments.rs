//! Brief attachments: a file the model attaches reaches its turn's brief
//! with its kind, name, size and digest, kept by Holon whatever becomes of
//! the file; the next turn's brief starts with none.

use serde_json::json;

use holon::model::message::Priority;
use holon::runtime::provider::scripted::Scripted;

use super::runtime_core::{events, prompt, rig, wait_event};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_file_reaches_the_brief_kept_and_digested() {
    let patch = "--- /dev/null\n+++ b/out/report.md\n@@ -0,0 +1,2 @@\n+# Report\n+all green\n";
    let r = rig(vec![
        Scripted::tools("", &[("ApplyPatch", json!({ "patch": patch }))]),
        Scripted::tools(
            "",
            &[
                ("AttachToBrief", json!({ "path": "out/report.md" })),
                ("AttachToBrief", json!({ "path": "out/missing.md" })),
            ],
        ),
        Scripted::text("see the report"),
        Scripted::text("nothing attached"),
    ])
    .await;
    r.host
        .submit(prompt("report", Priority::Normal))
        .await
        .unwrap();
    let brief = wait_event(&r.host, "the brief", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "see the report"
    })
    .await;
    let attached = brief.payload["brief"]["attachments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        attached.len(),
        1,
        "the missing file was refused: {attached:?}"
    );
    let a = &attached[0];
    assert_eq!(a["kind"], "file");
    assert_eq!(a["name"], "report.md");
    assert_eq!(a["source_path"], "out/report.md");
    assert_eq!(a["size_bytes"], 19);
    let content = "# Report\nall green\n";
    let digest = {
        use sha2::{Digest, Sha256};
        Sha256::digest(content.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    assert_eq!(a["digest"], format!("sha256:{digest}"));
    let kept = a["uri"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(kept).unwrap(),
        content,
        "a copy Holon keeps"
    );
    let refused = events(&r.host)
        .into_iter()
        .find(|e| e.kind == "tool_executed" && e.payload["is_error"] == true)
        .expect("the missing file's refusal");
    assert!(refused.payload["result_preview"]
        .as_str()
        .unwrap_or_default()
        .contains("does not exist"));

    r.host
        .submit(prompt("again", Priority::Normal))
        .await
        .unwrap();
    let next = wait_event(&r.host, "the next brief", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "nothing attached"
    })
    .await;
    assert!(
        next.payload["brief"].get("attachments").is_none(),
        "{next:?}"
    );
    r.host.shutdown().await;
}

/// A hostile model's ways to attach what is not its to read: a link its
/// command planted (at the end of the path, or on the way out of the
/// root), a path with `..`, an absolute path elsewhere, a fifo that would
/// block the runtime. Each is refused, and nothing is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_fifos_and_paths_out_of_the_root_are_never_attached() {
    let plant = "ln -s /etc/hostname leak.txt; ln -s /etc out; mkfifo pipe; echo planted";
    let r = rig(vec![
        Scripted::tools("", &[("ExecCommand", json!({ "cmd": plant }))]),
        Scripted::tools(
            "",
            &[
                ("AttachToBrief", json!({ "path": "leak.txt" })),
                ("AttachToBrief", json!({ "path": "out/hostname" })),
                ("AttachToBrief", json!({ "path": "../../../etc/hostname" })),
                ("AttachToBrief", json!({ "path": "/etc/hostname" })),
                ("AttachToBrief", json!({ "path": "pipe" })),
            ],
        ),
        Scripted::text("tried"),
    ])
    .await;
    r.host
        .submit(prompt("attach", Priority::Normal))
        .await
        .unwrap();
    let brief = wait_event(&r.host, "the brief", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "tried"
    })
    .await;
    assert!(
        brief.payload["brief"].get("attachments").is_none(),
        "{brief:?}"
    );
    let refused: Vec<String> = events(&r.host)
        .into_iter()
        .filter(|e| e.kind == "tool_executed" && e.payload["tool_name"] == "AttachToBrief")
        .map(|e| {
            assert_eq!(e.payload["is_error"], true, "{:?}", e.payload);
            e.payload["result_preview"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(refused.len(), 5);
    assert!(refused[0].contains("symbolic link"), "{}", refused[0]);
    assert!(
        refused[1].contains("leaves the execution root"),
        "{}",
        refused[1]
    );
    assert!(refused[4].contains("regular file"), "{}", refused[4]);
    let kept = r._dir.path().join("data").join("attachments");
    assert!(!kept.exists() || std::fs::read_dir(&kept).unwrap().next().is_none());
    r.host.shutdown().await;
}
