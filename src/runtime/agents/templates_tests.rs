//! Tests of `templates.rs`.

use super::*;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

#[test]
fn selectors_parse_three_forms_and_refuse_the_rest() {
    assert_eq!(
        ok(TemplateSelector::parse("holon-default")),
        TemplateSelector::Id("holon-default".into())
    );
    assert_eq!(
        ok(TemplateSelector::parse("/t/x")),
        TemplateSelector::Path("/t/x".into())
    );
    assert!(matches!(
        ok(TemplateSelector::parse(
            "https://github.com/o/r/tree/main/t"
        )),
        TemplateSelector::GitHub(_)
    ));
    for bad in ["", "../x", "a/b", ".hidden", "x y"] {
        assert!(TemplateSelector::parse(bad).is_err(), "{bad}");
    }
    assert!(matches!(
        resolve("https://github.com/o/r/tree/main/t", &[]),
        Err(TemplateError::Remote(_))
    ));
}

#[test]
fn seeding_creates_refreshes_and_keeps_local_edits() {
    let d = tmp();
    let first = ok(seed_builtin(d.path()));
    assert!(first.iter().all(|(_, s)| *s == Seeded::Created));
    assert!(ok(seed_builtin(d.path()))
        .iter()
        .all(|(_, s)| *s == Seeded::Current));
    // An older Holon-managed copy is refreshed.
    let md = d.path().join("holon-default/AGENTS.md");
    std::fs::write(&md, "old builtin").unwrap();
    let old = files_hash(&[("AGENTS.md", "old builtin".to_owned())]);
    std::fs::write(d.path().join("holon-default").join(MANAGED_MARKER), old).unwrap();
    assert_eq!(
        ok(seed_builtin(d.path()))[0],
        ("holon-default", Seeded::Refreshed)
    );
    assert!(ok(std::fs::read_to_string(&md)).contains("general-purpose"));
    // A locally edited copy is not overwritten.
    std::fs::write(&md, "mine").unwrap();
    assert_eq!(
        ok(seed_builtin(d.path()))[0],
        ("holon-default", Seeded::KeptLocalEdits)
    );
    assert_eq!(ok(std::fs::read_to_string(&md)), "mine");
}

#[test]
fn applying_a_template_materialises_the_home_or_nothing() {
    let d = tmp();
    let templates = d.path().join("templates");
    ok(seed_builtin(&templates));
    let t = ok(resolve("holon-developer", std::slice::from_ref(&templates)));
    let home = d.path().join("agents/dev");
    let p = ok(create_home(&home, &t, "now"));
    assert_eq!(p.skills, vec!["holon-verify".to_owned()]);
    for rel in [
        "AGENTS.md",
        "memory/self.md",
        "memory/operator.md",
        "skills/holon-verify/SKILL.md",
        ".holon/state/template.json",
    ] {
        assert!(home.join(rel).is_file(), "{rel}");
    }
    for rel in ["notes", "work"] {
        assert!(home.join(rel).is_dir(), "{rel}");
    }
    assert!(ok(std::fs::read_to_string(home.join("AGENTS.md"))).contains("## Your agent home"));
    // Occupied home: refused, untouched.
    assert!(matches!(
        create_home(&home, &t, "now"),
        Err(TemplateError::HomeExists { .. })
    ));
    // A template without AGENTS.md, and broken skills.json: refused
    // before anything is written.
    let bad = d.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    let sel = bad.display().to_string();
    assert!(matches!(
        resolve(&sel, &[]),
        Err(TemplateError::NoAgentsMd { .. })
    ));
    std::fs::write(bad.join("AGENTS.md"), "x").unwrap();
    std::fs::write(bad.join("skills.json"), "{not json").unwrap();
    assert!(matches!(
        resolve(&sel, &[]),
        Err(TemplateError::BadSkillsJson { .. })
    ));
    std::fs::write(
        bad.join("skills.json"),
        r#"{"skill_refs":["builtin:nope"]}"#,
    )
    .unwrap();
    assert!(matches!(
        resolve(&sel, &[]),
        Err(TemplateError::BadSkillRef { .. })
    ));
    std::fs::write(
        bad.join("skills.json"),
        r#"{"skill_refs":["/no/such/skill"]}"#,
    )
    .unwrap();
    assert!(matches!(
        resolve(&sel, &[]),
        Err(TemplateError::BadSkillRef { .. })
    ));
    assert!(matches!(
        resolve("nope", std::slice::from_ref(&templates)),
        Err(TemplateError::UnknownId { .. })
    ));
    // No staging directory is left behind by any of it.
    let left: Vec<_> = ok(std::fs::read_dir(d.path().join("agents")))
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".creating"))
        .collect();
    assert!(left.is_empty());
}

#[test]
fn the_default_agent_gets_a_missing_agents_md_only() {
    let d = tmp();
    ok(seed_builtin(d.path()));
    let t = ok(resolve(DEFAULT_TEMPLATE, &[d.path().to_path_buf()]));
    let home = d.path().join("main");
    assert!(ok(fill_missing(&home, &t)));
    std::fs::write(home.join("AGENTS.md"), "operator's own").unwrap();
    assert!(!ok(fill_missing(&home, &t)));
    assert_eq!(
        ok(std::fs::read_to_string(home.join("AGENTS.md"))),
        "operator's own"
    );
}
