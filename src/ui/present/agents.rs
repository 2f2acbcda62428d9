//! Agents and skills in words, shared by `holon agent …`, `holon skills
//! list` and the console: identity, posture, and each child's supervision
//! line.

use crate::protocol::types::{
    AgentKind, AgentOwnership, AgentVisibility, ChildSupervision, SkillView,
};
use crate::protocol::AgentSummary;

/// `named · public · self-owned` (and lineage when there is one).
pub fn identity_line(s: &AgentSummary) -> String {
    let i = &s.identity;
    let kind = match i.kind {
        AgentKind::Default => "default",
        AgentKind::Named => "named",
        AgentKind::Child => "child",
    };
    let vis = match i.visibility {
        AgentVisibility::Public => "public",
        AgentVisibility::Private => "private",
    };
    let own = match i.ownership {
        AgentOwnership::SelfOwned => "self-owned",
        AgentOwnership::ParentSupervised => "parent-supervised",
    };
    let mut out = format!("{kind} · {vis} · {own}");
    if let Some(p) = i.profile_preset {
        out.push_str(&format!(" · {}", p.as_str()));
    }
    if let Some(p) = &i.lineage_parent_agent_id {
        out.push_str(&format!(" · made by {p}"));
    }
    if i.archived_at.is_some() {
        out.push_str(" · archived");
    }
    out
}

/// One child under its parent: id, task state, posture and label.
pub fn child_line(c: &ChildSupervision) -> String {
    let task = format!("{:?}", c.task_status).to_lowercase();
    let state = if c.task_status.is_terminal() {
        task
    } else {
        format!("{task}, {}", c.posture_reason)
    };
    let mut line = format!("{}  [{}]  {}", c.child_agent_id, state, c.label);
    if let Some((path, cleanup)) = c.worktree_state() {
        line.push_str(&format!("  (worktree {}: {path})", cleanup.as_str()));
    }
    line
}

/// `holon agent list`: one line an agent, its children indented.
pub fn list_lines(agents: &[AgentSummary]) -> Vec<String> {
    if agents.is_empty() {
        return vec!["no agents".into()];
    }
    let w = agents
        .iter()
        .map(|a| a.id.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = Vec::new();
    for a in agents {
        out.push(format!(
            "{:<w$}  {:<14}  {}",
            a.id, a.posture, a.posture_reason
        ));
        for c in &a.children {
            out.push(format!("  └ {}", child_line(c)));
        }
    }
    out
}

/// `holon agent show`.
pub fn show_lines(s: &AgentSummary) -> Vec<String> {
    let mut out = vec![
        format!("{}: {}", s.id, identity_line(s)),
        format!(
            "  {} ({}): {}",
            s.posture,
            s.status.as_str(),
            s.posture_reason
        ),
        format!(
            "  queue {} · tasks {} · work items {} open, {} done · workspace {}",
            s.queue_depth,
            s.tasks_active,
            s.work_items_open,
            s.work_items_completed,
            s.execution.workspace_id
        ),
    ];
    if !s.children.is_empty() {
        out.push("  children:".into());
        for c in &s.children {
            out.push(format!("    {}", child_line(c)));
        }
    }
    out
}

/// `holon skills list`.
pub fn skill_lines(agent: &str, skills: &[SkillView]) -> Vec<String> {
    if skills.is_empty() {
        return vec![format!(
            "{agent} has no skills (a skill is a directory with a SKILL.md under the agent's skills/)"
        )];
    }
    skills
        .iter()
        .map(|s| format!("{}\n    {}", s.line(), s.entrypoint_path))
        .collect()
}
