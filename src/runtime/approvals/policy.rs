//! The execution policy's approval gate (pure): whether a tool call waits
//! for the operator. What a command can reach once it runs is the
//! sandbox's (`runtime::sandbox`), not the gate's.
//!
//! `on_request` (the default) and `never` run every call; `on_write` asks before anything that may
//! write (every ApplyPatch, every command but a read-only one: programs
//! that only read, joined by pipes, `&&`, `||` or `;`, with no redirection
//! or substitution); `always` asks before every command and patch. Either
//! way an allow-list of command prefixes and path prefixes never asks. A
//! command joined with shell control operators never matches the
//! allow-list: `cargo test; rm -rf x` is not `cargo test`.
//!
//! An MCP server's tool (`Action::Tool`) is judged by its server's own
//! mode when it has one, else the workspace's: `on_write` asks unless the
//! server marks the tool read-only, `always` always asks, and
//! `allow_tools` names tools that never ask.

use crate::model::approval::{compound, Action, Approval, ApprovalPolicy};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Run,
    /// Wait for the operator; the reason names the policy and the action.
    Ask(String),
}

use super::read_only::read_only_command;

/// `prefix` is `cmd`'s first words (whole words, not a string prefix:
/// `git status` does not allow `git statusx`).
fn has_prefix(cmd: &str, prefix: &str) -> bool {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let want: Vec<&str> = prefix.split_whitespace().collect();
    !want.is_empty() && words.len() >= want.len() && words[..want.len()] == want[..]
}

fn path_allowed(path: &str, allowed: &[String]) -> bool {
    let path = path.trim_start_matches("./");
    allowed.iter().any(|a| {
        let a = a.trim_start_matches("./").trim_end_matches('/');
        !a.is_empty() && (path == a || path.starts_with(&format!("{a}/")))
    })
}

/// Whether `action` may run under `policy` without the operator.
pub fn gate(policy: &ApprovalPolicy, action: &Action) -> Gate {
    if let Action::Tool {
        name,
        read_only,
        approval,
    } = action
    {
        return gate_tool(policy, name, *read_only, *approval);
    }
    let mode = policy.approval.as_str();
    match (policy.approval, action) {
        // Under `never` the tool itself refuses an escape.
        (Approval::Never, _) => return Gate::Run,
        // Every other mode asks before a command leaves the sandbox; no
        // allow-list covers that.
        (_, Action::Escape { cmd, justification }) => {
            return Gate::Ask(format!(
                "approval is `{mode}`: run outside the sandbox: `{}` — {}",
                cmd.trim(),
                justification.trim()
            ))
        }
        (_, Action::Workspace { path }) => {
            return Gate::Ask(format!(
                "approval is `{mode}`: work in {path}, which no one attached: the sandbox's \
                 writable root moves there"
            ))
        }
        (Approval::OnRequest, _) => return Gate::Run,
        _ => {}
    }
    match action {
        Action::Escape { .. } | Action::Workspace { .. } | Action::Tool { .. } => Gate::Run,
        Action::Commands(cmds) => {
            // Each item's own reason, without the mode each one repeats.
            let prefix = format!("approval is `{mode}`: ");
            let asked: Vec<String> = cmds
                .iter()
                .filter_map(|c| match gate(policy, &Action::Command(c.clone())) {
                    Gate::Ask(why) => Some(why.trim_start_matches(&prefix).to_owned()),
                    Gate::Run => None,
                })
                .collect();
            match asked.is_empty() {
                true => Gate::Run,
                false => Gate::Ask(format!("{prefix}in the batch, {}", asked.join("; "))),
            }
        }
        Action::Command(cmd) => {
            let cmd = cmd.trim();
            let single = !compound(cmd);
            if single && policy.allow_commands.iter().any(|p| has_prefix(cmd, p)) {
                return Gate::Run;
            }
            if policy.approval == Approval::OnWrite && read_only_command(cmd) {
                return Gate::Run;
            }
            let why = if single {
                "is not a known read-only command and not on the allow-list"
            } else {
                "joins commands or redirects, so no allow-list entry covers it"
            };
            Gate::Ask(format!("approval is `{mode}`: `{cmd}` {why}"))
        }
        Action::Write(paths) => {
            let outside: Vec<&String> = paths
                .iter()
                .filter(|p| !path_allowed(p, &policy.allow_paths))
                .collect();
            if outside.is_empty() && !paths.is_empty() {
                return Gate::Run;
            }
            let names: Vec<&str> = outside.iter().map(|p| p.as_str()).collect();
            Gate::Ask(format!(
                "approval is `{mode}`: the patch writes {}",
                if names.is_empty() {
                    "files".to_owned()
                } else {
                    names.join(", ")
                }
            ))
        }
    }
}

/// An MCP tool: the server's own mode if it has one, else the
/// workspace's; `on_write` asks unless the server says the tool only
/// reads; the allow-list names tools whole.
fn gate_tool(policy: &ApprovalPolicy, name: &str, read_only: bool, own: Option<Approval>) -> Gate {
    let approval = own.unwrap_or(policy.approval);
    let asks = match approval {
        Approval::Never | Approval::OnRequest => false,
        Approval::OnWrite => !read_only,
        Approval::Always => true,
    };
    if !asks || policy.allow_tools.iter().any(|t| t == name) {
        return Gate::Run;
    }
    let whose = if own.is_some() {
        "the server's approval"
    } else {
        "approval"
    };
    let what = if read_only {
        "asks before every tool call"
    } else {
        "may write (the server does not mark it read-only)"
    };
    Gate::Ask(format!(
        "{whose} is `{}`: `{name}` {what}",
        approval.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::approval::{always_rule, always_tool};

    fn policy(approval: Approval) -> ApprovalPolicy {
        ApprovalPolicy {
            approval,
            allow_commands: vec!["cargo test".into()],
            allow_paths: vec!["docs/".into()],
            ..ApprovalPolicy::default()
        }
    }

    fn asks(p: &ApprovalPolicy, a: &Action) -> bool {
        matches!(gate(p, a), Gate::Ask(_))
    }

    #[test]
    fn mcp_tools_ask_by_their_hint_their_server_and_the_allow_list() {
        let tool = |read_only, approval| Action::Tool {
            name: "mcp__gh__create_issue".into(),
            read_only,
            approval,
        };
        let on_write = policy(Approval::OnWrite);
        assert!(asks(&on_write, &tool(false, None)));
        assert!(!asks(&on_write, &tool(true, None)));
        assert!(asks(&on_write, &tool(true, Some(Approval::Always))));
        assert!(!asks(&on_write, &tool(false, Some(Approval::Never))));
        assert!(asks(
            &policy(Approval::OnRequest),
            &tool(true, Some(Approval::Always))
        ));
        assert!(!asks(
            &policy(Approval::Always),
            &tool(true, Some(Approval::Never))
        ));
        let mut allowed = policy(Approval::Always);
        allowed.allow_tools.push("mcp__gh__create_issue".into());
        assert!(!asks(&allowed, &tool(false, None)));
        assert_eq!(always_rule(&tool(false, None)), (None, Vec::new()));
        assert_eq!(
            always_tool(&tool(false, None)).as_deref(),
            Some("mcp__gh__create_issue")
        );
    }

    #[test]
    fn never_runs_everything_and_always_asks_unless_allowed() {
        let never = policy(Approval::Never);
        assert!(!asks(&never, &Action::Command("rm -rf target".into())));
        let escape = Action::Escape {
            cmd: "curl example.com".into(),
            justification: "fetch the spec".into(),
        };
        // `never` lets the tool refuse it; every other mode asks, whatever
        // the allow-list says.
        assert!(!asks(&never, &escape));
        let mut on_request = policy(Approval::OnRequest);
        on_request.allow_commands.push("curl".into());
        assert!(asks(&on_request, &escape));
        assert!(!asks(&on_request, &Action::Command("rm -rf target".into())));
        assert!(!asks(&on_request, &Action::Write(vec!["src/x.rs".into()])));
        assert!(asks(&policy(Approval::OnWrite), &escape));
        assert_eq!(always_rule(&escape), (None, Vec::new()));
        assert!(!asks(&never, &Action::Write(vec!["src/x.rs".into()])));
        let always = policy(Approval::Always);
        assert!(
            asks(&always, &Action::Command("ls".into())),
            "always asks even to read"
        );
        assert!(!asks(&always, &Action::Command("cargo test --all".into())));
        assert!(asks(&always, &Action::Command("cargo testing".into())));
        assert!(!asks(
            &always,
            &Action::Write(vec!["docs/a.md".into(), "./docs/b/c.md".into()])
        ));
        assert!(asks(
            &always,
            &Action::Write(vec!["docs/a.md".into(), "src/x.rs".into()])
        ));
        assert!(asks(&always, &Action::Write(vec!["docsx/a.md".into()])));
    }

    #[test]
    fn on_write_lets_single_read_only_commands_through_and_nothing_compound() {
        let p = policy(Approval::OnWrite);
        assert!(!asks(&p, &Action::Command("git status --short".into())));
        assert!(!asks(&p, &Action::Command("rg TODO src".into())));
        assert!(asks(&p, &Action::Command("git commit -m x".into())));
        assert!(asks(&p, &Action::Command("cat a > b".into())));
        assert!(asks(&p, &Action::Command("ls; rm -rf /".into())));
        assert!(asks(
            &p,
            &Action::Command("cargo test && rm -rf target".into())
        ));
        assert!(asks(&p, &Action::Command("echo $(rm x)".into())));
        let Gate::Ask(why) = gate(&p, &Action::Command("make install".into())) else {
            panic!("make install asks")
        };
        assert!(
            why.contains("on_write") && why.contains("make install"),
            "{why}"
        );
    }

    /// Pipelines and lists of programs that only read run under
    /// `on_write`; anything that could write or run something unseen
    /// asks, quoted or not.
    #[test]
    fn on_write_runs_what_only_reads_however_it_is_joined() {
        let p = policy(Approval::OnWrite);
        for cmd in [
            "echo hello",
            "printf '%s\\n' a b",
            "git log --oneline | head -20",
            "rg -n TODO src && echo done",
            "find . -name '*.rs' | wc -l",
            "cat a.txt | grep 'x|y' || true",
            "echo \"a > b\"",
            "ls -la; pwd",
            "git branch --show-current",
            "git diff --stat HEAD~1",
        ] {
            assert_eq!(gate(&p, &Action::Command(cmd.into())), Gate::Run, "{cmd}");
        }
        for cmd in [
            "find . -delete",
            "find . -name x -exec rm {} \\;",
            "sort -o out.txt in.txt",
            "sort -uo out.txt in.txt",
            "sort -oout.txt in.txt",
            "git branch new-feature",
            "git -c core.pager=sh log",
            "git log --output=notes.txt",
            "git diff --ext-diff",
            "git grep -O pattern",
            "git grep --open-files=sh foo",
            "sort --outp=f in",
            "sort -S1 --compress-program=./x big",
            "tree -R -H . -L 1",
            "file -C -m m",
            "rg foo *",
            "find . -dele\\\nte",
            "find . \"-dele\\\nte\"",
            "find . $'-delete'",
            "echo -delete; find . $_",
            "printf -v x %s --pre=sh; rg foo $x",
            "echo '$(touch p)'; echo \"${_@P}\"",
            "echo 'a[$(touch p)]'; echo $[_]",
            "echo \"$HOME\"",
            "rg --pre=sh pattern",
            "tree -o listing.txt",
            "date -s 2020-01-01",
            "echo hi > f",
            "cat x | sh",
            "ls &",
            "echo \"$(rm x)\"",
            "echo `rm x`",
            "(ls)",
            "| ls",
            "ls |",
            "ls &&",
            "echo 'unterminated",
            "FOO=1 ls",
            "xargs rm < list",
            "ls\nrm x",
        ] {
            assert!(asks(&p, &Action::Command(cmd.into())), "{cmd}");
        }
    }

    #[test]
    fn always_allow_adds_the_program_and_subcommand_or_the_paths() {
        assert_eq!(
            always_rule(&Action::Command("touch a.txt".into())),
            (Some("touch".into()), vec![])
        );
        assert_eq!(
            always_rule(&Action::Command("cargo test --all".into())),
            (Some("cargo test".into()), vec![])
        );
        assert_eq!(
            always_rule(&Action::Command("make".into())),
            (Some("make".into()), vec![])
        );
        assert_eq!(
            always_rule(&Action::Command("python3 ./x.py".into())),
            (Some("python3".into()), vec![])
        );
        assert_eq!(
            always_rule(&Action::Command("a | b".into())),
            (None, vec![])
        );
        assert_eq!(
            always_rule(&Action::Write(vec!["src/a.rs".into()])),
            (None, vec!["src/a.rs".into()])
        );
    }

    #[test]
    fn a_batch_asks_when_any_of_its_commands_would_and_names_those() {
        let batch = |cmds: &[&str]| Action::Commands(cmds.iter().map(|c| c.to_string()).collect());
        let on_write = policy(Approval::OnWrite);
        assert_eq!(
            gate(&on_write, &batch(&["git status", "ls src"])),
            Gate::Run
        );
        match gate(&on_write, &batch(&["git status", "touch x", "ls | rm y"])) {
            Gate::Ask(why) => assert_eq!(
                why,
                "approval is `on_write`: in the batch, `touch x` is not a known read-only \
                 command and not on the allow-list; `ls | rm y` joins commands or redirects, \
                 so no allow-list entry covers it"
            ),
            Gate::Run => panic!("a writing item must ask"),
        }
        assert_eq!(
            gate(&policy(Approval::OnRequest), &batch(&["rm y"])),
            Gate::Run
        );
        assert_eq!(gate(&policy(Approval::Never), &batch(&["rm y"])), Gate::Run);
        assert_eq!(always_rule(&batch(&["cargo test"])), (None, Vec::new()));
    }

    #[test]
    fn approval_names_round_trip() {
        for a in [
            Approval::OnRequest,
            Approval::Never,
            Approval::OnWrite,
            Approval::Always,
        ] {
            assert_eq!(Approval::parse(a.as_str()), Some(a));
        }
        assert_eq!(Approval::parse("sometimes"), None);
    }
}
