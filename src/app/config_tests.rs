//! `Config` loading: precedence, defaults, and errors that name their key.

use super::*;

fn env(pairs: &[(&'static str, &str)]) -> Env {
    Env(pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect())
}

fn load(text: &str, e: &Env) -> Result<Config, ConfigError> {
    Config::from_parts(Path::new("/h/config.toml"), Some(text), e)
}

#[test]
fn defaults_without_a_file() {
    let c = Config::from_parts(Path::new("/h/config.toml"), None, &Env::default()).unwrap();
    assert_eq!(c.default_agent, "main");
    assert_eq!(c.default_agent_source, Source::Default);
    assert_eq!(c.log_filter, "info");
    assert!(c.alt_screen);
    assert!(!c.file_present);
}

#[test]
fn environment_beats_file_beats_default() {
    let text = "[runtime]\ndefault_agent = \"filed\"\n[model]\ndefault = \"openai/a\"\n[log]\nfilter = \"debug\"\n";
    let c = load(text, &Env::default()).unwrap();
    assert_eq!(c.default_agent, "filed");
    assert_eq!(c.default_model.as_deref(), Some("openai/a"));
    assert_eq!(c.log_filter, "debug");
    let e = env(&[
        ("HOLON_AGENT_ID", "envy"),
        ("HOLON_MODEL", "anthropic/b"),
        ("RUST_LOG", "warn"),
    ]);
    let c = load(text, &e).unwrap();
    assert_eq!(c.default_agent, "envy");
    assert_eq!(c.default_agent_source, Source::Environment);
    assert_eq!(c.default_model.as_deref(), Some("anthropic/b"));
    assert_eq!(c.log_filter, "warn");
    let e = env(&[("HOLON_LOG", "trace"), ("RUST_LOG", "warn")]);
    assert_eq!(
        load(text, &e).map(|c| c.log_filter).ok().as_deref(),
        Some("trace")
    );
}

#[test]
fn syntax_error_names_file_line_and_column() {
    let err = load(
        "[model]\ndefault = \"openai/a\"\nfallbacks = [\n",
        &Env::default(),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.starts_with("/h/config.toml:"), "{err}");
    assert!(err.contains(":3:") || err.contains(":4:"), "{err}");
}

#[test]
fn wrong_type_names_the_key() {
    let c = load("[console]\nmouse = false\n", &Env::default()).unwrap();
    assert!(!c.mouse);
    assert!(c.hyperlinks, "links are clickable unless turned off");
    let c = load("[console]\nhyperlinks = false\n", &Env::default()).unwrap();
    assert!(!c.hyperlinks);
    let err = load("[console]\nbell = \"yes\"\n", &Env::default());
    match err {
        Err(ConfigError::Invalid { line, key, .. }) => {
            assert_eq!(line, 2);
            assert_eq!(key.as_deref(), Some("console.bell"));
        }
        other => panic!("expected invalid, got {other:?}"),
    }
}

#[test]
fn unknown_key_is_an_error_naming_it() {
    let err = load("[model]\ndefualt = \"openai/a\"\n", &Env::default());
    match err {
        Err(ConfigError::Invalid {
            line, key, message, ..
        }) => {
            assert_eq!(line, 2);
            assert_eq!(key.as_deref(), Some("model.defualt"));
            assert!(message.contains("unknown field"), "{message}");
        }
        other => panic!("expected invalid, got {other:?}"),
    }
}

#[test]
fn bad_values_are_rejected_with_their_key() {
    match load("[model]\n\ndefault = \"gpt\"\n", &Env::default()) {
        Err(ConfigError::Invalid { line, key, .. }) => {
            assert_eq!(line, 3);
            assert_eq!(key.as_deref(), Some("model.default"));
        }
        other => panic!("expected invalid, got {other:?}"),
    }
    assert!(matches!(
        load("", &env(&[("HOLON_AGENT_ID", "../x")])),
        Err(ConfigError::Env {
            var: "HOLON_AGENT_ID",
            ..
        })
    ));
    assert!(load("[console]\nalt_screen = \"loud\"\n", &Env::default()).is_err());
}

#[test]
fn the_listener_address_defaults_to_loopback_and_can_be_turned_off() {
    let c = load("", &Env::default()).unwrap();
    assert_eq!(
        c.server_listen.as_deref(),
        Some(crate::app::access::DEFAULT_LISTEN)
    );
    let c = load("[server]\nlisten = \"off\"\n", &Env::default()).unwrap();
    assert_eq!(c.server_listen, None);
    let c = load(
        "[server]\nlisten = \"127.0.0.1:9000\"\n",
        &env(&[("HOLON_LISTEN", "127.0.0.1:0")]),
    )
    .unwrap();
    assert_eq!(c.server_listen.as_deref(), Some("127.0.0.1:0"));
    match load("[server]\nlisten = \"nowhere\"\n", &Env::default()) {
        Err(ConfigError::Invalid { key, .. }) => {
            assert_eq!(key.as_deref(), Some("server.listen"))
        }
        other => panic!("expected invalid, got {other:?}"),
    }
    // Wrong in the file is wrong even while the variable overrides it.
    match load(
        "[server]\nlisten = \"not-an-addr\"\n",
        &env(&[("HOLON_LISTEN", "127.0.0.1:0")]),
    ) {
        Err(ConfigError::Invalid { key, .. }) => {
            assert_eq!(key.as_deref(), Some("server.listen"))
        }
        other => panic!("expected invalid, got {other:?}"),
    }
}

#[test]
fn the_approval_policy_is_read_and_bad_values_name_their_key() {
    use crate::model::approval::Approval;
    let c = load(
        "[policy]\napproval = \"on_write\"\nallow_commands = [\"cargo test\"]\n",
        &Env::default(),
    )
    .unwrap();
    assert_eq!(c.policy.approval, Approval::OnWrite);
    assert_eq!(c.policy.allow_commands, vec!["cargo test".to_owned()]);
    assert_eq!(
        load("", &Env::default()).map(|c| c.policy.approval).ok(),
        Some(Approval::OnRequest)
    );
    for (text, key) in [
        ("[policy]\napproval = \"sometimes\"\n", "policy.approval"),
        ("[policy]\nallow_paths = [\"  \"]\n", "policy.allow_paths"),
        ("[policy]\nsandbox = \"strict\"\n", "policy.sandbox"),
        ("[policy]\nnetwork = \"maybe\"\n", "policy.network"),
    ] {
        match load(text, &Env::default()) {
            Err(ConfigError::Invalid { key: k, .. }) => assert_eq!(k.as_deref(), Some(key)),
            other => panic!("expected invalid {key}, got {other:?}"),
        }
    }
}

#[test]
fn store_cache_is_small_by_default_and_bounded() {
    let c = load("", &Env::default()).unwrap();
    assert_eq!(c.store_cache_mib, crate::store::DEFAULT_CACHE_MIB);
    assert!(!c.store_quick_repair);
    let c = load(
        "[store]\ncache_mib = 64\nquick_repair = true\n",
        &Env::default(),
    )
    .unwrap();
    assert_eq!(c.store_cache_mib, 64);
    assert!(c.store_quick_repair);
    for bad in ["0", "9000", "-1", "\"big\""] {
        match load(&format!("[store]\ncache_mib = {bad}\n"), &Env::default()) {
            Err(ConfigError::Invalid { key, .. }) => {
                assert_eq!(key.as_deref(), Some("store.cache_mib"), "{bad}")
            }
            other => panic!("{bad}: expected invalid, got {other:?}"),
        }
    }
}

#[test]
fn tool_output_budgets_default_read_and_check() {
    let c = load("", &Env::default()).unwrap();
    assert_eq!(
        (c.tool_output.default_tokens, c.tool_output.max_tokens),
        (8_000, 64_000)
    );
    let text = "[runtime]\ndefault_tool_output_tokens = 1000\nmax_tool_output_tokens = 2000\n";
    let c = load(text, &Env::default()).unwrap();
    assert_eq!(
        (c.tool_output.default_tokens, c.tool_output.max_tokens),
        (1_000, 2_000)
    );
    let c = load(text, &env(&[("HOLON_MAX_TOOL_OUTPUT_TOKENS", "1500")])).unwrap();
    assert_eq!(c.tool_output.max_tokens, 1_500, "the environment wins");
    // A cap below the default pulls the default down with it.
    let c = load("[runtime]\nmax_tool_output_tokens = 100\n", &Env::default()).unwrap();
    assert_eq!(c.tool_output.default_tokens, 100);
    assert!(load(
        "[runtime]\ndefault_tool_output_tokens = 0\n",
        &Env::default()
    )
    .is_err());
    assert!(load(
        "[runtime]\ndefault_tool_output_tokens = 5000\nmax_tool_output_tokens = 10\n",
        &Env::default()
    )
    .is_err());
    assert!(load("", &env(&[("HOLON_DEFAULT_TOOL_OUTPUT_TOKENS", "lots")])).is_err());
    // The budget bounds what a call may ask for.
    let b = crate::runtime::settings::limits::ToolOutputBudget {
        default_tokens: 10,
        max_tokens: 20,
    };
    assert_eq!(
        (b.bytes(None), b.bytes(Some(1_000)), b.bytes(Some(0))),
        (40, 80, 4)
    );
}

#[test]
fn exec_env_passthrough_is_read_and_checked() {
    let c = load(
        "[exec]\nenv_passthrough = [\"GITHUB_TOKEN\"]\n",
        &Env::default(),
    )
    .unwrap();
    assert_eq!(c.exec_env_passthrough, ["GITHUB_TOKEN"]);
    assert!(load("", &Env::default()).is_ok_and(|c| c.exec_env_passthrough.is_empty()));
    match load("[exec]\nenv_passthrough = [\"A=B\"]\n", &Env::default()) {
        Err(ConfigError::Invalid { key, .. }) => {
            assert_eq!(key.as_deref(), Some("exec.env_passthrough"))
        }
        other => panic!("expected invalid, got {other:?}"),
    }
}

/// A config path that is not a regular file (a FIFO would block the read
/// forever) is refused at once; numeric keys keep to their ranges.
#[test]
fn a_config_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("config.toml");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: mkfifo on a path this test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    match Config::load(&fifo, &Env::default()) {
        Err(ConfigError::Read { source, .. }) => {
            assert!(source.to_string().contains("not a regular file"))
        }
        other => panic!("{other:?}"),
    }
    let huge = "[server]\nidle_timeout_secs = 9200000000000000000\n";
    match load(huge, &Env::default()) {
        Err(ConfigError::Invalid { key, .. }) => {
            assert_eq!(key.as_deref(), Some("server.idle_timeout_secs"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn prices_budgets_and_effort_are_read_and_bad_ones_name_their_key() {
    let text = "[model]\nreasoning_effort = \"high\"\n\n[budget]\ndaily_usd = 2.5\ndaily_tokens = 500000\n\n\
                [pricing.\"openai/gpt-4.1\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 4.0\n";
    let c = load(text, &Env::default()).unwrap();
    assert_eq!(
        c.reasoning_effort,
        Some(crate::model::usage::ReasoningEffort::High)
    );
    assert_eq!(c.budget.daily_micro_usd, Some(2_500_000));
    assert_eq!(c.budget.daily_tokens, Some(500_000));
    assert_eq!(
        c.pricing
            .price_of("openai/gpt-4.1")
            .map(|p| p.output_per_mtok),
        Some(4.0)
    );
    let err = |text: &str| {
        load(text, &Env::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(err("[budget]\ndaily_usd = -1\n").contains("budget.daily_usd"));
    assert!(err("[budget]\ndaily_tokens = 0\n").contains("budget.daily_tokens"));
    assert!(
        err("[pricing.\"gpt\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 1.0\n").contains("pricing")
    );
    assert!(
        err("[pricing.\"a/b\"]\ninput_per_mtok = -2.0\noutput_per_mtok = 1.0\n")
            .contains("0 or more")
    );
    assert!(err("[pricing.\"a/b\"]\ninput_per_mtok = 1.0\n").contains("output_per_mtok"));
    assert!(err("[model]\nreasoning_effort = \"extreme\"\n").contains("reasoning_effort"));
}

#[test]
fn notify_takes_its_choices_and_the_older_bell() {
    use crate::app::config::NotifyMethod;
    use crate::ui::tui::NotifyWhen;
    let c = load("", &Env::default()).unwrap();
    assert_eq!(
        (c.notify, c.notify_method),
        (NotifyWhen::Unfocused, NotifyMethod::Bel)
    );
    let c = load("[console]\nbell = true\n", &Env::default()).unwrap();
    assert_eq!(c.notify, NotifyWhen::Always, "bell = true rings always");
    let c = load("[console]\nbell = false\n", &Env::default()).unwrap();
    assert_eq!(c.notify, NotifyWhen::Off, "bell = false stays quiet");
    let c = load(
        "[console]\nnotify = \"off\"\nbell = true\nnotify_method = \"osc9\"\n",
        &Env::default(),
    )
    .unwrap();
    assert_eq!(
        (c.notify, c.notify_method),
        (NotifyWhen::Off, NotifyMethod::Osc9)
    );
    for (text, key) in [
        ("[console]\nnotify = \"sometimes\"\n", "console.notify"),
        (
            "[console]\nnotify_method = \"email\"\n",
            "console.notify_method",
        ),
    ] {
        match load(text, &Env::default()) {
            Err(ConfigError::Invalid {
                key: k, message, ..
            }) => {
                assert_eq!(k.as_deref(), Some(key));
                assert!(message.contains("is not a choice"), "{message}");
            }
            other => panic!("expected invalid, got {other:?}"),
        }
    }
    // The bytes: a bell, or OSC 9 with control characters left out.
    assert_eq!(NotifyMethod::Bel.bytes("x"), b"\x07");
    assert_eq!(
        NotifyMethod::Osc9.bytes("main needs\x1b your input"),
        b"\x1b]9;Holon: main needs your input\x07"
    );
}

#[test]
fn retain_days_keeps_everything_unset_and_refuses_zero() {
    let c = load("", &Env::default()).unwrap();
    assert_eq!(c.store_retain_days, None, "unset keeps all history");
    let c = load("[store]\nretain_days = 30\n", &Env::default()).unwrap();
    assert_eq!(c.store_retain_days, Some(30));
    for (bad, says) in [
        ("0", "keep no history at all"),
        ("36501", "out of range"),
        ("-3", ""),
    ] {
        match load(&format!("[store]\nretain_days = {bad}\n"), &Env::default()) {
            Err(ConfigError::Invalid { key, message, .. }) => {
                assert_eq!(key.as_deref(), Some("store.retain_days"), "{bad}");
                assert!(message.contains(says), "{bad}: {message}");
            }
            other => panic!("{bad}: expected invalid, got {other:?}"),
        }
    }
}

#[test]
fn a_providers_wire_is_required_but_for_openai_codex_where_it_is_fixed() {
    let missing = load(
        "[providers.mine]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
        &Env::default(),
    );
    let e = missing.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("providers.mine.wire"), "{e}");
    let codex = "[providers.openai-codex]\nbase_url = \"http://127.0.0.1:9/codex\"\n";
    let c = load(codex, &Env::default()).unwrap();
    assert!(c.providers.contains_key("openai-codex"));
    assert_eq!(
        c.codex_auth_file(),
        Path::new("/h/auth/openai-codex.json"),
        "beside the config file"
    );
    let keyed = format!("{codex}api_key_env = \"K\"\n");
    let e = load(&keyed, &Env::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("providers.openai-codex.api_key_env"), "{e}");
}

#[test]
fn a_type_error_names_the_shape_the_key_takes() {
    use super::super::config_checks::shape_message;
    assert_eq!(
        shape_message("invalid type: integer `3`, expected a string", true),
        "takes a list of strings; one element is integer `3`"
    );
    assert_eq!(
        shape_message("invalid type: string \"ls\", expected a sequence", false),
        "takes a list (written [\"a\", \"b\"]), not string \"ls\""
    );
    assert_eq!(
        shape_message("invalid type: string \"x\", expected a boolean", false),
        "takes a boolean, not string \"x\""
    );
    assert_eq!(
        shape_message("unknown field `x`", false),
        "unknown field `x`"
    );
    match load("[policy]\nallow_commands = [\"ls\", 3]\n", &Env::default()) {
        Err(ConfigError::Invalid { key, message, .. }) => {
            assert_eq!(key.as_deref(), Some("policy.allow_commands"));
            assert!(message.contains("takes a list of strings"), "{message}");
        }
        other => panic!("expected invalid, got {other:?}"),
    }
}

/// docs/configuration.md's key list is the file format: its example
/// parses (every key it shows exists), and it shows every key of every
/// section (the keys each section takes are read from the parser's own
/// "expected one of" list, so none is listed by hand).
#[test]
fn configuration_md_shows_every_key_and_only_real_ones() {
    let doc = include_str!("../../docs/configuration.md");
    let start = doc.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let block = &doc[start..start + doc[start..].find("```").expect("its end")];
    if let Err(e) = toml::from_str::<ConfigFile>(block) {
        panic!("the documented keys do not parse: {e}");
    }
    let shown: toml::Table = toml::from_str(block).expect("toml");
    // The fields the parser takes where `probe` puts an unknown one.
    let expected = |probe: &str| -> Vec<String> {
        let err = toml::from_str::<ConfigFile>(probe)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let list = err.split("expected one of").nth(1).unwrap_or_default();
        list.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let sections = expected("__probe__ = 1\n");
    assert!(sections.len() > 10, "{sections:?}");
    let mut missing = Vec::new();
    for section in &sections {
        // A map of named entries (`[providers.NAME]`): the keys of one.
        let named = matches!(
            section.as_str(),
            "providers" | "pricing" | "mcp_servers" | "remotes"
        );
        let (probe, entries): (String, Vec<&toml::Table>) = match named {
            true => (
                format!("[{section}.x]\n__probe__ = 1\n"),
                shown
                    .get(section)
                    .and_then(|v| v.as_table())
                    .map(|t| t.values().filter_map(|v| v.as_table()).collect())
                    .unwrap_or_default(),
            ),
            false => (
                format!("[{section}]\n__probe__ = 1\n"),
                shown
                    .get(section)
                    .and_then(|v| v.as_table())
                    .into_iter()
                    .collect(),
            ),
        };
        let keys = expected(&probe);
        if entries.is_empty() {
            missing.push(format!("[{section}]"));
            continue;
        }
        for key in keys {
            // Shown set, or as a commented alternative (`# url = …`), or
            // named where the key that replaced it is (`bell = true`).
            let set = format!("{key} =");
            let mentioned = block.lines().any(|l| {
                let l = l.trim_start();
                l.starts_with(&set)
                    || l.strip_prefix("# ").is_some_and(|c| c.starts_with(&set))
                    || l.contains(&format!("`{set}"))
            });
            if !mentioned && !entries.iter().any(|t| t.contains_key(&key)) {
                missing.push(format!("{section}.{key}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "configuration.md does not show: {missing:?}"
    );
}
