//! Tests of one hook run: the environment's allow-list, input and
//! bounded output, the time limit and what a hook leaves running.
use super::*;
use crate::runtime::hooks::input::sample;
use crate::runtime::settings::hooks::{HookEvent, HookSpec, OnError, DEFAULT_TIMEOUT};

fn hook(command: &str, timeout: Duration) -> HookSpec {
    HookSpec {
        name: "t".into(),
        event: HookEvent::PreTool,
        command: command.into(),
        tools: Vec::new(),
        timeout,
        sandboxed: false,
        network: None,
        env: vec!["HOOK_EXTRA".into()],
        on_error: OnError::Allow,
        from_repository: false,
    }
}

fn runner(root: &Path) -> Runner {
    Runner {
        root: root.to_path_buf(),
        holon_dirs: Vec::new(),
        sandbox_required: false,
    }
}

#[test]
fn the_environment_is_an_allow_list() {
    let h = hook("true", DEFAULT_TIMEOUT);
    let vars = [
        ("PATH", "/bin"),
        ("OPENAI_API_KEY", "sk-secret"),
        ("HOOK_EXTRA", "yes"),
        ("HOLON_HOME", "/h"),
    ]
    .map(|(k, v)| (k.into(), v.into()));
    let env = hook_env(&h, vars, Path::new("/s"), Path::new("/s/tmp"));
    let names: Vec<String> = env
        .iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "PATH",
            "HOOK_EXTRA",
            "HOLON_HOOK_EVENT",
            "HOLON_HOOK_NAME",
            "HOLON_HOOK_STATE_DIR",
            "TMPDIR"
        ]
    );
}

#[tokio::test]
async fn a_run_reads_its_input_and_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner(dir.path());
    let input = sample(HookEvent::PreTool);
    let echo = r
        .run(
            &hook("cat; echo err >&2; exit 3", DEFAULT_TIMEOUT),
            &input,
            false,
        )
        .await;
    assert_eq!(echo.finished.exit, Exit::Code(3));
    assert_eq!(echo.finished.stdout, input.to_bytes());
    assert_eq!(echo.finished.stderr, b"err\n");
    // 1 MB written, 64 KiB kept, all of it counted.
    let loud = r
        .run(
            &hook("head -c 1000000 /dev/zero", DEFAULT_TIMEOUT),
            &input,
            false,
        )
        .await;
    assert_eq!(loud.finished.stdout.len(), STDOUT_LIMIT);
    assert_eq!(loud.output_bytes, 1_000_000);
}

#[tokio::test]
async fn a_hook_past_its_limit_is_killed_with_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner(dir.path());
    let marker = dir.path().join("left");
    let input = sample(HookEvent::Brief);
    // Killed at its limit, not waited for: well before `sleep 30` ends.
    let hung = tokio::time::timeout(
        Duration::from_secs(15),
        r.run(&hook("sleep 30", Duration::from_secs(1)), &input, false),
    )
    .await
    .expect("the hook ran past its limit");
    assert_eq!(hung.finished.exit, Exit::TimedOut(1));
    // A child left running after the hook exits goes with it.
    let cmd = format!("(sleep 1; touch {}) & exit 0", marker.display());
    let forked = r.run(&hook(&cmd, DEFAULT_TIMEOUT), &input, false).await;
    assert_eq!(forked.finished.exit, Exit::Code(0));
    // Once nothing it started runs, nothing can make the marker: wait for
    // that, not for the child's second to pass.
    let needle = marker.display().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while running_with(&needle) {
        assert!(
            std::time::Instant::now() < deadline,
            "the hook's child outlived it"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!marker.exists(), "the hook's child outlived it");
}

/// Whether a live process has `needle` in its command line (a zombie's is
/// empty).
fn running_with(needle: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
    })
}
