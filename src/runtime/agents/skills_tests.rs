//! Tests of `skills.rs`.

use super::*;

fn skill(base: &Path, rel: &str, text: &str) {
    let d = base.join(rel);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("SKILL.md"), text).unwrap();
}

#[test]
fn metadata_comes_from_front_matter_or_prose() {
    let (n, d) = parse_metadata(
        "---\nname: review\ndescription: \"Review a diff\"\n---\n# R\nbody",
        "dir",
    );
    assert_eq!((n.as_str(), d.as_str()), ("review", "Review a diff"));
    let (n, d) = parse_metadata("# Title\n\nFirst line of prose.\nmore", "triage");
    assert_eq!((n.as_str(), d.as_str()), ("triage", "First line of prose."));
    let (_, d) = parse_metadata(&format!("{}\u{7}", "x".repeat(500)), "long");
    assert_eq!(d.chars().count(), MAX_DESCRIPTION);
    assert!(!d.contains('\u{7}'));
}

#[test]
fn first_existing_root_only_within_a_scope_and_specific_scopes_win() {
    let t = tempfile::tempdir().unwrap();
    let (user, home, ws) = (t.path().join("u"), t.path().join("h"), t.path().join("w"));
    skill(
        &user,
        ".agents/skills/shared",
        "---\nname: shared\ndescription: user\n---",
    );
    skill(
        &user,
        ".claude/skills/hidden",
        "never: a later root of the same scope",
    );
    skill(&home, "skills/mine", "agent skill");
    skill(&home, ".agents/skills/ignored", "a later agent root");
    skill(
        &ws,
        ".codex/skills/shared",
        "---\nname: shared\ndescription: workspace\n---",
    );
    let roots = SkillRoots {
        user_home: Some(user.clone()),
        include_user: true,
        agent_home: home.clone(),
        workspace_anchor: Some(ws.clone()),
    };
    let found = discover(&roots);
    let names: Vec<(&str, SkillScope, &str)> = found
        .iter()
        .map(|s| (s.name.as_str(), s.scope, s.description.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("mine", SkillScope::Agent, "agent skill"),
            ("shared", SkillScope::Workspace, "workspace"),
        ]
    );
    // Named and child agents skip the user scope.
    skill(&user, ".agents/skills/only-user", "u");
    let no_user = discover(&SkillRoots {
        include_user: false,
        ..roots.clone()
    });
    assert!(no_user.iter().all(|s| s.scope != SkillScope::User));
    assert!(discover(&roots).iter().any(|s| s.name == "only-user"));
}

#[test]
fn activation_matches_skill_md_and_scripts_only() {
    let root = PathBuf::from("/h/skills/review");
    let catalog = vec![SkillEntry {
        name: "review".into(),
        description: String::new(),
        scope: SkillScope::Agent,
        entrypoint_path: root.join("SKILL.md"),
        root: root.clone(),
    }];
    let a = activations(
        &catalog,
        "sed -n 1,200p '/h/skills/review/SKILL.md'",
        Path::new("/x"),
    );
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].1, LoadReason::ReadSkillMd);
    let a = activations(
        &catalog,
        "cd /tmp && ./skills/review/scripts/run.sh --all",
        Path::new("/h"),
    );
    assert_eq!(a[0].1, LoadReason::RunSkillScript);
    assert_eq!(a[0].2, PathBuf::from("/h/skills/review/scripts/run.sh"));
    let a = activations(&catalog, "cat ../h/skills/review/SKILL.md", Path::new("/y"));
    assert_eq!(a[0].1, LoadReason::ReadSkillMd);
    assert!(activations(&catalog, "ls /h/skills/review", Path::new("/")).is_empty());
    assert!(activations(&catalog, "cat /h/skills/review/notes.md", Path::new("/")).is_empty());
}

#[test]
fn turn_active_skills_promote_and_restore() {
    let s = SkillEntry {
        name: "r".into(),
        description: String::new(),
        scope: SkillScope::Agent,
        root: "/r".into(),
        entrypoint_path: "/r/SKILL.md".into(),
    };
    let mut active = Vec::new();
    assert!(activate(&mut active, &s));
    assert!(!activate(&mut active, &s), "already turn-active");
    assert!(promote(&mut active));
    assert_eq!(active[0].state, SkillState::SessionActive);
    assert!(activate(&mut active, &s), "active again in a new turn");
    let mut other = active.clone();
    other.push(ActiveSkill {
        name: "t".into(),
        state: SkillState::TurnActive,
        ..active[0].clone()
    });
    promote(&mut other[..1]);
    assert!(restore(&mut other));
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].state, SkillState::Restored);
    let block = prompt_block(std::slice::from_ref(&s), &other).unwrap_or_default();
    assert!(
        block.contains("- r (agent) [restored]: no description — /r/SKILL.md"),
        "{block}"
    );
    assert!(prompt_block(&[], &[]).is_none());
}
