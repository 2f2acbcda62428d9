//! The one-shot CLI contract: `send`, `status`, `events` on the store, with
//! JSON shapes scripts can rely on, and clear errors for bad input.

use super::support::{json_lines, stderr, Home};

#[test]
fn send_queues_an_operator_envelope_and_events_show_it() {
    let home = Home::new();
    let out = home.ok(&["send", "build the thing", "--json"]);
    let admitted: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(admitted["queue_status"], "queued");
    assert_eq!(admitted["priority"], "normal");
    home.ok(&["send", "urgent", "--priority", "interject"]);

    let events = json_lines(&home.ok(&["events", "--json"]));
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        vec!["agent_created", "message_admitted", "message_admitted"]
    );
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["event_seq"].as_u64(), Some(i as u64 + 1));
        for field in ["id", "ts", "kind", "agent_id", "provenance", "payload"] {
            assert!(!e[field].is_null(), "event lacks {field}: {e}");
        }
    }
    let first = &events[1];
    let msg = &first["payload"]["message"];
    assert_eq!(msg["origin"]["kind"], "operator");
    assert_eq!(msg["trust"], "trusted_operator");
    assert_eq!(msg["authority_class"], "operator_instruction");
    assert_eq!(msg["delivery_surface"], "cli_prompt");
    assert_eq!(msg["body"]["text"], "build the thing");
    assert_eq!(first["provenance"]["message_id"], admitted["message_id"]);
    assert_eq!(first["provenance"]["delivery_surface"], "cli_prompt");
    assert_eq!(events[2]["payload"]["message"]["priority"], "interject");

    let status: serde_json::Value = serde_json::from_str(&home.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["runtime"], "not_running", "{status}");
    assert!(
        status["pid"].is_null() && status["mode"].is_null(),
        "{status}"
    );
    let main = &status["agents"][0];
    assert_eq!(main["id"], "main");
    assert_eq!(main["queue_depth"], 2);
    assert_eq!(main["last_event_seq"], 3);
}

#[test]
fn events_filter_by_kind_cursor_and_limit() {
    let home = Home::new();
    for i in 0..5 {
        home.ok(&["send", &format!("m{i}")]);
    }
    let page = json_lines(&home.ok(&["events", "--json", "--from", "3", "--limit", "2"]));
    let seqs: Vec<u64> = page
        .iter()
        .filter_map(|e| e["event_seq"].as_u64())
        .collect();
    assert_eq!(seqs, vec![3, 4]);
    let created = json_lines(&home.ok(&["events", "--json", "--kind", "agent_created"]));
    assert_eq!(created.len(), 1);
    let human = home.ok(&["events"]);
    assert_eq!(human.lines().count(), 6);
    // The human form is the shared presentation: summaries, not raw kinds.
    assert!(human.contains("Operator: m0"), "{human}");
    assert!(human.contains("Agent main created"), "{human}");
}

#[test]
fn holon_agent_id_names_the_default_agent() {
    let home = Home::new();
    let out = home
        .cmd()
        .env("HOLON_AGENT_ID", "ops")
        .args(["send", "hi", "--json"])
        .output();
    let out = out.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["agent_id"], "ops");
}

#[test]
fn bad_input_gets_clear_errors_and_nonzero_exits() {
    let home = Home::new();
    let out = home.run(&["send", "x", "--agent", "ghost"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no agent `ghost`"),
        "{}",
        stderr(&out)
    );

    let out = home.run(&["send", "x", "--priority", "urgent"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("unknown priority"),
        "{}",
        stderr(&out)
    );

    let out = home.run(&["send", "x", "--agent", "../etc"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("may contain only"),
        "{}",
        stderr(&out)
    );

    std::fs::create_dir_all(home.path().join("config")).unwrap();
    std::fs::write(
        home.path().join("config/config.toml"),
        "[model]\ndefault = \"openai/gpt-4.1\"\n\n[console]\nbell = maybe\n",
    )
    .unwrap();
    let out = home.run(&["send", "hello"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("config.toml:5:"), "names file and line: {err}");
    assert!(err.contains("console.bell"), "names the key: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let out = home.run(&["status"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("config.toml:5:"), "{}", stderr(&out));
    // This home's runtime stays reachable: attach warns and goes on (to
    // say that none runs here).
    let err = stderr(&home.run(&["attach", "--plain"]));
    assert!(
        err.contains("warning") && err.contains("config.toml:5:"),
        "{err}"
    );
    // A remote by its name is the file's to say: refused.
    let err = stderr(&home.run(&["attach", "somewhere"]));
    assert!(
        !err.contains("warning") && err.contains("config.toml:5:"),
        "{err}"
    );
}

#[test]
fn a_reader_that_goes_away_ends_a_command_quietly() {
    // `holon daemon status --json | head`: the pipe is closed before the
    // command writes, as once `head` has read enough.
    let home = Home::new();
    for args in [
        &["daemon", "status", "--json"][..],
        &["daemon", "status"][..],
    ] {
        let out = home.run_reader_gone(args);
        let err = stderr(&out);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{err}"
        );
        assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
    }
}

#[test]
fn no_logging_reaches_the_terminal() {
    let home = Home::new();
    let out = home
        .cmd()
        .env("HOLON_LOG", "trace")
        .args(["send", "quiet please"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(stderr(&out).is_empty(), "stderr: {}", stderr(&out));
    let logs: Vec<_> = std::fs::read_dir(home.path().join("logs"))
        .unwrap()
        .filter_map(Result::ok)
        .collect();
    assert!(
        logs.iter()
            .any(|f| f.file_name().to_string_lossy().starts_with("holon.log")),
        "a rolling log file exists"
    );
}

#[test]
fn store_compact_reports_what_it_reclaimed_and_keeps_every_event() {
    let home = Home::new();
    for i in 0..30 {
        home.ok(&["send", &format!("prompt {i} {}", "x".repeat(1500))]);
    }
    let report: serde_json::Value =
        serde_json::from_str(home.ok(&["store", "compact", "--json"]).trim()).unwrap();
    let before = report["bytes_before"].as_u64().unwrap_or(0);
    let after = report["bytes_after"].as_u64().unwrap_or(u64::MAX);
    assert!(after <= before, "{report}");
    assert_eq!(report["bytes_reclaimed"].as_u64(), Some(before - after));
    let on_disk = std::fs::metadata(home.store_file())
        .map(|m| m.len())
        .unwrap_or(0);
    assert_eq!(on_disk, after);
    let events = json_lines(&home.ok(&["events", "--json", "--limit", "1000"]));
    assert_eq!(events.len(), 31, "agent_created + 30 admissions survive");
    let text = home.ok(&["store", "compact"]);
    assert!(text.starts_with("compacted "), "{text}");
}

#[test]
fn store_verify_passes_a_sound_store_and_names_a_gap() {
    let home = Home::new();
    for i in 0..5 {
        home.ok(&["send", &format!("prompt {i}")]);
    }
    let text = home.ok(&["store", "verify"]);
    assert!(text.contains("1 agent, 6 events: sound"), "{text}");
    // Take event 3 out behind Holon's back.
    {
        let db = redb::Database::open(home.store_file()).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(holon::store::schema::EVENTS).unwrap();
            assert!(t.remove(("main", 3u64)).unwrap().is_some());
        }
        txn.commit().unwrap();
    }
    let out = home.run(&["store", "verify"]);
    assert!(!out.status.success(), "a gap must fail verify");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("PROBLEMS") && text.contains("events 3 to 3 are missing"),
        "{text}"
    );
}

#[test]
fn store_backup_copies_the_store_offline_and_while_the_runtime_runs() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    for i in 0..3 {
        home.ok(&["send", &format!("prompt {i}")]);
    }
    let out_dir = tempfile::tempdir().unwrap();
    let a = out_dir.path().join("a.redb");
    let a_arg = a.display().to_string();
    // No runtime: the command opens the store itself.
    let text = home.ok(&["store", "backup", &a_arg]);
    assert!(
        text.starts_with(&format!("backed up to {a_arg}: ")),
        "{text}"
    );
    let mode = std::fs::metadata(&a).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
    let text = home.ok(&["store", "verify", &a_arg]);
    assert!(text.contains("1 agent, 4 events: sound"), "{text}");
    // A backup never replaces a file.
    let out = home.run(&["store", "backup", &a_arg]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("exists"), "{}", stderr(&out));

    // With a runtime: the runtime copies a snapshot, the file is moved.
    let out = home.cmd().arg("--detach").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let _daemon = super::support::Daemon(&home);
    home.ok(&["send", "one more"]);
    let b = out_dir.path().join("b.redb");
    let b_arg = b.display().to_string();
    let text = home.ok(&["store", "backup", &b_arg]);
    assert!(
        text.starts_with(&format!("backed up to {b_arg}: ")),
        "{text}"
    );
    // The running agent's turns add events: the copy is a sound store.
    let text = home.ok(&["store", "verify", &b_arg]);
    assert!(
        text.contains(": 1 agent, ") && text.ends_with(": sound\n"),
        "{text}"
    );
    // Only PATH holds it: no twin in backups/ to count toward
    // backup_keep or evict a scheduled backup.
    let backups = home.store_file().parent().unwrap().join("backups");
    let twins = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .map(|d| d.flatten().filter(|e| e.path().is_file()).count())
            .unwrap_or(0)
    };
    assert_eq!(twins(&backups), 0);
    assert_eq!(twins(&backups.join("copies")), 0);
    // Without a path it stays in backups/ beside the store.
    let v: serde_json::Value =
        serde_json::from_str(&home.ok(&["store", "backup", "--json"])).unwrap();
    let kept = std::path::PathBuf::from(v["path"].as_str().unwrap());
    assert_eq!(
        kept.parent(),
        home.store_file()
            .parent()
            .map(|d| d.join("backups"))
            .as_deref()
    );
    assert!(kept.is_file());
    // Nothing but the two copies was left in the destination directory.
    let mut names: Vec<String> = std::fs::read_dir(out_dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.redb", "b.redb"]);
}

#[test]
fn store_salvage_of_a_sound_store_loses_nothing_and_runs() {
    let home = Home::new();
    for i in 0..3 {
        home.ok(&["send", &format!("prompt {i}")]);
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("salvaged.redb");
    let store = home.store_file().display().to_string();
    let text = home.ok(&["store", "salvage", &store, &out.display().to_string()]);
    assert!(text.contains("1 agent, 4 events"), "{text}");
    assert!(text.trim_end().ends_with("nothing was lost"), "{text}");
    // The salvaged store takes the damaged one's place and serves.
    std::fs::rename(&out, home.store_file()).unwrap();
    let status = home.ok(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(v["agents"][0]["queue_depth"], 3, "{v}");
    // Salvage never writes over a file.
    let again = home.run(&["store", "salvage", &store, &store]);
    assert!(!again.status.success());
    assert!(stderr(&again).contains("exists"), "{}", stderr(&again));
}

/// A home on a read-only mount (a bind mount made read-only in a mount
/// namespace of its own): status, events, listings and verify read the
/// store read-only and say so; a prompt is refused naming the cause; the
/// file is not changed. Skipped where the machine cannot make mount
/// namespaces.
#[test]
fn a_read_only_home_is_shown_and_never_written() {
    let home = Home::new();
    home.ok(&["send", "hello"]);
    let before = std::fs::read(home.store_file()).unwrap();
    let h = home.path().display().to_string();
    let bin = env!("CARGO_BIN_EXE_holon");
    let script = format!(
        "mount --bind {h} {h} && mount -o remount,bind,ro {h} || exit 99
         for c in status approvals 'agent list' 'events --limit 5' 'store verify' 'send more'; do
           echo \"== $c\"; {bin} $c 2>&1; echo \"rc=$?\"
         done"
    );
    let cmd = home.cmd();
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(home.path())
        .output();
    let Ok(out) = out.map_err(|e| eprintln!("skipped: no unshare ({e})")) else {
        return;
    };
    if out.status.code() == Some(99) || !String::from_utf8_lossy(&out.stdout).contains("== ") {
        eprintln!(
            "skipped: cannot make a read-only mount here: {}",
            stderr(&out)
        );
        return;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let section = |name: &str| -> String {
        let start = text
            .find(&format!("== {name}\n"))
            .unwrap_or_else(|| panic!("{name}: {text}"));
        let rest = &text[start + name.len() + 4..];
        rest[..rest.find("== ").unwrap_or(rest.len())].to_owned()
    };
    for reader in [
        "status",
        "approvals",
        "agent list",
        "events --limit 5",
        "store verify",
    ] {
        let s = section(reader);
        assert!(s.trim_end().ends_with("rc=0"), "{reader}: {s}");
        assert!(s.contains("read-only"), "{reader} says nothing of it: {s}");
        assert!(!s.contains("cannot create"), "{reader}: {s}");
    }
    assert!(
        section("events --limit 5").contains("Operator: hello"),
        "{text}"
    );
    let send = section("send more");
    assert!(send.trim_end().ends_with("rc=1"), "{send}");
    assert!(
        send.contains("the store") && send.contains("is read-only"),
        "{send}"
    );
    assert_eq!(std::fs::read(home.store_file()).unwrap(), before);
}

#[test]
fn status_names_the_running_runtimes_model_not_the_clis() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("config")).unwrap();
    std::fs::write(
        home.path().join("config/config.toml"),
        "[model]\nfallbacks = [\"openai/fallback-model\"]\n",
    )
    .unwrap();
    let out = home
        .cmd()
        .env("HOLON_MODEL", "openai/runtime-model")
        .env("OPENAI_API_KEY", "sk-status")
        .arg("--detach")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let _daemon = super::support::Daemon(&home);
    let status = |home: &Home| -> serde_json::Value {
        let out = home
            .cmd()
            .env("HOLON_MODEL", "openai/cli-model")
            .args(["status", "--json"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)))
    };
    let v = status(&home);
    assert_eq!(v["default_model"], "openai/runtime-model");
    assert_eq!(v["agents"][0]["model"], "openai/runtime-model");
    assert_eq!(v["agents"][0]["model_source"], "runtime_default");
    assert_eq!(
        v["agents"][0]["fallback_models"],
        serde_json::json!(["openai/fallback-model"])
    );
    let text = home.ok(&["status"]);
    assert!(
        text.contains("model openai/runtime-model, falling back to openai/fallback-model"),
        "{text}"
    );
    // Offline, the store is read with this command's configuration.
    home.ok(&["daemon", "stop"]);
    let v = status(&home);
    assert_eq!(v["agents"][0]["model"], "openai/cli-model");
}

#[test]
fn every_event_kind_is_documented() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/events.md")).unwrap();
    let missing: Vec<&str> = holon::protocol::events::EventKind::ALL
        .iter()
        .map(|k| k.as_str())
        .filter(|k| !doc.contains(&format!("`{k}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/events.md does not describe {missing:?}"
    );
}

#[test]
fn debug_prompt_prints_the_next_frame_with_sizes_and_status_shows_context_use() {
    let home = Home::new();
    home.ok(&["send", "a queued prompt marker-7731"]);
    std::fs::create_dir_all(home.path().join("config")).unwrap();
    std::fs::write(
        home.path().join("config/config.toml"),
        "[model]\ncontext_window = 32000\n",
    )
    .unwrap();
    let text = home.ok(&["debug", "prompt"]);
    for section in [
        "── policy · ~",
        "── memory · ~",
        "── work_queue · ~",
        "── execution · ~",
        "── tools · ~",
        "── history · ",
    ] {
        assert!(text.contains(section), "{section} missing:\n{text}");
    }
    assert!(
        text.contains("32.0k-token window ([model] context_window"),
        "{text}"
    );
    assert!(text.contains("Nothing compacted yet."));
    // The frame's cache identity, and how the wire lowers it.
    assert!(text.contains("Cache: key holon:"), "{text}");
    assert!(
        text.contains("working memory revision 0, compression epoch 0"),
        "{text}"
    );
    assert!(text.contains("Wire: full_request_only"), "{text}");
    let brief = home.ok(&["debug", "prompt", "--summary"]);
    assert!(!brief.contains("You are a long-lived agent"));
    let preview: serde_json::Value =
        serde_json::from_str(&home.ok(&["debug", "prompt", "--json"])).unwrap();
    assert_eq!(preview["budget"]["window"], 32_000);
    let names: Vec<&str> = preview["sections"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(
        names,
        // The default agent's AGENTS.md comes from `holon-default`.
        vec![
            "policy",
            "guidance",
            "memory",
            "work_queue",
            "execution",
            "tools"
        ]
    );
    // A window out of range is a config error naming the key.
    std::fs::write(
        home.path().join("config/config.toml"),
        "[model]\ncontext_window = 5\n",
    )
    .unwrap();
    let out = home.run(&["debug", "prompt"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("model.context_window"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(home.path().join("config/config.toml")).unwrap();
    let status = home.ok(&["status"]);
    assert!(status.contains(" CTX "), "{status}");
}

#[test]
fn store_stats_lists_every_table_with_its_rows_and_bytes() {
    let home = Home::new();
    home.ok(&["send", "one"]);
    home.ok(&["send", "two"]);
    let v: serde_json::Value =
        serde_json::from_str(&home.ok(&["store", "stats", "--json"])).unwrap();
    let tables = v["tables"].as_array().cloned().unwrap_or_default();
    let rows = |name: &str| {
        tables
            .iter()
            .find(|t| t["table"] == name)
            .and_then(|t| t["rows"].as_u64())
    };
    assert_eq!(rows("queue_entries"), Some(2));
    // An envelope's one copy is its admission event.
    assert_eq!(rows("messages"), Some(0));
    assert_eq!(rows("events"), Some(3), "agent_created and two admissions");
    assert_eq!(rows("event_blocks"), Some(0), "too few events to seal");
    assert!(v["file_bytes"].as_u64().unwrap_or(0) > 0);
    let text = home.ok(&["store", "stats"]);
    assert!(
        text.contains("TABLE") && text.contains("queue_entries"),
        "{text}"
    );
}

/// docs/architecture.md stays true to the tree: every source file it
/// names (a `…rs` path in backquotes, as written under its folder) exists,
/// and every folder of `src/` is named in it.
#[test]
fn architecture_md_names_files_that_exist_and_every_source_folder() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    let mut stack = vec![root.join("src")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                dirs.push(rel);
                stack.push(p);
            } else {
                files.push(rel);
            }
        }
    }
    for extra in ["tests", "benches", "examples", "crates"] {
        let mut stack = vec![root.join(extra)];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                match p.is_dir() {
                    true => stack.push(p),
                    false => {
                        files.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
                    }
                }
            }
        }
    }
    let named: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| t.ends_with(".rs") && !t.contains(' ') && !t.contains('*'))
        .collect();
    assert!(named.len() > 100, "{} files named", named.len());
    let missing: Vec<&&str> = named
        .iter()
        .filter(|n| {
            let n = n.trim_start_matches("./");
            !files
                .iter()
                .any(|f| f == n || f.ends_with(&format!("/{n}")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "named in architecture.md, not in the tree: {missing:?}"
    );
    let unnamed: Vec<&String> = dirs
        .iter()
        .filter(|d| {
            let name = d.rsplit('/').next().unwrap_or(d);
            // Test data of the console's snapshots, not source.
            if name == "snapshots" {
                return false;
            }
            !doc.contains(&format!("{name}/")) && !doc.contains(&format!("`{name}`"))
        })
        .collect();
    assert!(
        unnamed.is_empty(),
        "source folders architecture.md does not name: {unnamed:?}"
    );
}

/// Listing agents, showing one and listing approvals with no runtime
/// running start none: the ledger gains no event (a runtime started for
/// them recorded its start each time). An unknown agent's approvals are
/// refused, said as every command says it.
#[test]
fn offline_reads_start_no_runtime_and_say_a_missing_agent() {
    let home = Home::new();
    home.ok(&["status"]);
    let ledger = || json_lines(&home.ok(&["events", "--json"])).len();
    let before = ledger();
    home.ok(&["agent", "list"]);
    home.ok(&["agent", "show", "main"]);
    home.ok(&["approvals", "--all"]);
    home.ok(&["skills", "list"]);
    home.ok(&["policy", "rules"]);
    home.ok(&["workspace", "policy", "agent_home"]);
    // The agent home is made at a runtime's first start: not "gone".
    let list = home.ok(&["workspace", "list"]);
    assert!(!list.contains("is gone"), "{list}");
    assert!(
        home.ok(&["policy"]).contains("config"),
        "{}",
        home.ok(&["policy"])
    );
    assert_eq!(ledger(), before, "{}", home.ok(&["events"]));
    // The first show provisions the trigger, as a runtime would; the
    // second reads it. Neither starts a runtime.
    let first = home.ok(&["trigger", "show"]);
    assert_eq!(home.ok(&["trigger", "show"]), first);
    let kinds: Vec<String> = json_lines(&home.ok(&["events", "--json"]))
        .iter()
        .skip(before)
        .map(|e| e["kind"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(kinds, ["external_trigger_provisioned"], "{first}");
    let out = home.run(&["approvals", "--agent", "nobody"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no agent `nobody`; list agents with `holon status`"),
        "{}",
        stderr(&out)
    );
}
