//! The workspaces overlay: the agent's attached workspaces and AgentHome
//! (`workspace.list`), with the active one marked and where its tools act.
//! Enter uses the selected workspace directly, `i` enters (or, on the
//! active isolated one, leaves) isolated mode, `a` attaches a directory,
//! `d` detaches one (never the active one: the runtime refuses and says
//! so). Also: what opening the console in a directory does.

use std::path::Path;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::keymap::{Action, KeyContext, OverlayKind};
use super::super::msg::RequestId;
use super::super::rows::Tone;
use super::super::wrap::fit;
use super::input::{Input, Purpose};
use super::{answer, draw_row, Ctx, ListPos, Look, Status};
use crate::protocol::types::{ExecutionSnapshot, WorkspaceMode, AGENT_HOME_ID};
use crate::protocol::types::{UseOutcome, UseWorkspace, WorkspaceList};
use crate::protocol::{ApiError, Request, Response};

/// What opening the console in a directory does to the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenBinding {
    /// It already works there (or the directory is its own home).
    Nothing,
    /// It is still in AgentHome: attach the directory and use it.
    Use,
    /// It works elsewhere: say so and offer `/workspace use .`.
    Offer(String),
}

pub fn open_binding(s: &ExecutionSnapshot, here: &Path) -> OpenBinding {
    let inside = |p: &str| !p.is_empty() && here.starts_with(p);
    if inside(&s.execution_root) || inside(&s.workspace_anchor) {
        return OpenBinding::Nothing;
    }
    if s.workspace_id == AGENT_HOME_ID {
        // A directory holding Holon's own data (HOLON_HOME, or `~` above
        // `~/.holon`) is not a project.
        return match Path::new(&s.execution_root).starts_with(here) {
            true => OpenBinding::Nothing,
            false => OpenBinding::Use,
        };
    }
    OpenBinding::Offer(format!(
        "This agent works in {} ({}); the console opened in {}. `/workspace use .` moves it here.",
        s.label(),
        s.execution_root,
        here.display()
    ))
}

/// One row: AgentHome first, then the attached workspaces.
#[derive(Debug, Clone)]
struct Row {
    id: String,
    anchor: String,
    active: bool,
    note: String,
}

#[derive(Debug, Default)]
pub struct Workspaces {
    pub input: Option<Input>,
    list: Option<WorkspaceList>,
    pos: ListPos,
    awaiting: Option<RequestId>,
    acting: Vec<RequestId>,
    status: Status,
}

impl Workspaces {
    pub fn open(ctx: &mut Ctx<'_>) -> Workspaces {
        let mut w = Workspaces::default();
        w.refresh(ctx);
        w
    }

    fn refresh(&mut self, ctx: &mut Ctx<'_>) {
        let request = Request::WorkspaceList {
            agent_id: ctx.agent_id.to_owned(),
        };
        self.awaiting = Some(ctx.call(OverlayKind::Workspaces, request));
    }

    fn rows(&self) -> Vec<Row> {
        let Some(l) = &self.list else {
            return Vec::new();
        };
        let mut rows = vec![Row {
            id: AGENT_HOME_ID.to_owned(),
            anchor: "the agent's own directory".to_owned(),
            active: l.active_workspace_id == AGENT_HOME_ID,
            note: String::new(),
        }];
        for e in &l.attached {
            let mut note = Vec::new();
            if e.active && l.execution.mode == WorkspaceMode::Isolated {
                if let Some(w) = &l.execution.worktree {
                    note.push(format!("isolated on {}", w.worktree_branch));
                }
            }
            if !e.present {
                note.push("missing".to_owned());
            } else if e.active && !l.execution_root_present {
                // A worktree deleted by hand: the agent moves home at the
                // runtime's next start.
                note.push("root gone".to_owned());
            }
            if !e.binding.git {
                note.push("not git".to_owned());
            }
            if !e.direct_users.is_empty() {
                note.push(format!("also used by {}", e.direct_users.join(", ")));
            }
            rows.push(Row {
                id: e.binding.workspace_id.clone(),
                anchor: e.binding.anchor.clone(),
                active: e.active,
                note: note.join(" · "),
            });
        }
        rows
    }

    fn act(&mut self, ctx: &mut Ctx<'_>, request: Request, done: &'static str) {
        let id = ctx.call(OverlayKind::Workspaces, request);
        self.acting.push(id);
        self.status.wait(id, done);
    }

    fn use_selected(&mut self, ctx: &mut Ctx<'_>, mode: WorkspaceMode, done: &'static str) {
        let Some(row) = self.rows().get(self.pos.selected).cloned() else {
            return;
        };
        let request = Request::WorkspaceUse {
            agent_id: ctx.agent_id.to_owned(),
            target: UseWorkspace {
                path: None,
                workspace_id: Some(row.id),
                mode,
            },
        };
        self.act(ctx, request, done);
    }

    pub fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        let rows = self.rows();
        if self.pos.on_action(action, rows.len(), ctx.page) {
            return;
        }
        let selected = rows.get(self.pos.selected);
        match action {
            Action::Select => self.use_selected(ctx, WorkspaceMode::Direct, "Now working there."),
            Action::Isolate => {
                let isolated_now = selected.is_some_and(|r| r.active)
                    && self
                        .list
                        .as_ref()
                        .is_some_and(|l| l.execution.mode == WorkspaceMode::Isolated);
                match isolated_now {
                    true => self.use_selected(ctx, WorkspaceMode::Direct, "Left isolated mode."),
                    false => self.use_selected(
                        ctx,
                        WorkspaceMode::Isolated,
                        "Now working in an isolated worktree.",
                    ),
                }
            }
            Action::AttachWorkspace => {
                self.input = Some(Input::new(
                    "Attach directory (absolute, or relative to the agent's cwd)",
                    Purpose::AttachWorkspace,
                    "",
                ))
            }
            Action::DetachWorkspace => {
                if let Some(r) = selected {
                    let request = Request::WorkspaceDetach {
                        agent_id: ctx.agent_id.to_owned(),
                        workspace_id: r.id.clone(),
                    };
                    self.act(ctx, request, "Detached; nothing on disk was touched.");
                }
            }
            Action::Refresh => self.refresh(ctx),
            _ => {}
        }
    }

    pub fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_>) {
        let path = input.value();
        if path.is_empty() {
            return;
        }
        let request = Request::WorkspaceAttach {
            agent_id: ctx.agent_id.to_owned(),
            path,
        };
        self.act(ctx, request, "Attached; Enter uses it.");
    }

    pub fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        ctx: &mut Ctx<'_>,
    ) {
        if Some(id) == self.awaiting {
            self.awaiting = None;
            match answer::<WorkspaceList>(result) {
                Ok(list) => {
                    let first_load = self.list.is_none();
                    self.list = Some(list.clone());
                    let rows = self.rows();
                    if first_load {
                        // Open on the workspace the agent is in.
                        self.pos.selected = rows.iter().position(|r| r.active).unwrap_or(0);
                    }
                    self.pos.clamp(rows.len());
                }
                Err(e) => self.status.message = Some((e, Tone::Error)),
            }
        } else if let Some(i) = self.acting.iter().position(|r| *r == id) {
            self.acting.remove(i);
            self.status.on_response(id, result);
            let note = answer::<UseOutcome>(result)
                .ok()
                .and_then(|u| u.note.clone());
            if let Some(note) = note {
                self.status.message = Some((note, Tone::Info));
            }
            self.refresh(ctx);
        }
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        let t = look.theme;
        let Some(list) = &self.list else {
            let line = Line::from(Span::styled("Loading workspaces…", t.dim()));
            buf.set_line(area.x + 1, area.y, &line, area.width);
            return;
        };
        let s = &list.execution;
        let head = [
            Line::from(vec![
                Span::styled("root ", t.dim()),
                Span::styled(s.execution_root.clone(), t.text()),
            ]),
            Line::from(vec![
                Span::styled("cwd  ", t.dim()),
                Span::styled(s.cwd.clone(), t.text()),
                // The status line's word for how commands are confined.
                Span::styled(
                    format!("   {} · {}", s.mode.as_str(), s.policy.mark()),
                    t.dim(),
                ),
            ]),
            Line::from(Span::styled(s.policy.confinement_line(), t.dim())),
        ];
        for (i, line) in head.iter().enumerate() {
            buf.set_line(
                area.x + 1,
                area.y + i as u16,
                line,
                area.width.saturating_sub(1),
            );
        }
        let top = area.y + head.len() as u16 + 1;
        let width = usize::from(area.width).saturating_sub(1);
        let rows = self.rows();
        let id_w = rows
            .iter()
            .map(|r| r.id.chars().count())
            .max()
            .unwrap_or(10)
            .clamp(10, 32)
            + 2;
        let status_h = u16::from(self.status.message.is_some());
        let rows_h = (area.y + area.height).saturating_sub(top + status_h);
        let first = self.pos.window(rows.len(), usize::from(rows_h));
        let anchor_w = rows
            .iter()
            .map(|r| r.anchor.chars().count() + 2)
            .max()
            .unwrap_or(0)
            .min(width.saturating_sub(id_w + 2));
        for (n, r) in rows
            .iter()
            .enumerate()
            .skip(first)
            .take(usize::from(rows_h))
        {
            let mut spans = vec![
                Span::styled(if r.active { "● " } else { "  " }, t.accent()),
                Span::styled(
                    fit(&r.id, id_w),
                    if r.active {
                        t.accent().patch(t.bold())
                    } else {
                        t.text()
                    },
                ),
                Span::styled(fit(&r.anchor, anchor_w), t.text()),
            ];
            if !r.note.is_empty() {
                spans.push(Span::styled(format!("  {}", r.note), t.dim()));
            }
            let y = top + (n - first) as u16;
            draw_row(area, buf, y, &Line::from(spans), n == self.pos.selected, t);
        }
        let below = top + rows.len().saturating_sub(first).min(usize::from(rows_h)) as u16;
        for (y, w) in (below..).zip(&list.retained_worktrees) {
            if y + status_h >= area.y + area.height {
                break;
            }
            let line = Line::from(Span::styled(
                format!(
                    "  kept for review: {} ({})",
                    w.worktree_path, w.worktree_branch
                ),
                t.attention(),
            ));
            buf.set_line(area.x + 1, y, &line, area.width.saturating_sub(1));
        }
        self.status.draw_last(area, buf, t);
    }
}

// ---- as an overlay -----------------------------------------------------------

impl super::OverlayView for Workspaces {
    fn kind(&self) -> OverlayKind {
        OverlayKind::Workspaces
    }

    fn title(&self, look: &Look<'_>) -> String {
        format!(" Workspaces · {} ", look.agent_id)
    }

    fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        Workspaces::on_action(self, action, ctx)
    }

    fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        Workspaces::render(self, area, buf, look)
    }

    fn context(&self) -> Option<KeyContext> {
        Some(KeyContext::Workspaces)
    }

    super::input_line!(Workspaces);

    fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        ctx: &mut Ctx<'_>,
    ) {
        Workspaces::on_response(self, id, result, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::workspace::ActiveWorkspace;
    use crate::model::workspace::AgentWorkspaces;
    use crate::model::workspace::ProjectionKind;
    use crate::model::workspace::WorkspaceBinding;
    use crate::runtime::workspace::snapshot;

    fn in_repo() -> ExecutionSnapshot {
        let ws = AgentWorkspaces {
            attached: vec![WorkspaceBinding {
                workspace_id: "ws_repo_1".into(),
                anchor: "/src/repo".into(),
                git: true,
                attached_at: "t".into(),
                pin: None,
            }],
            active: Some(ActiveWorkspace {
                workspace_id: "ws_repo_1".into(),
                execution_root: "/src/repo".into(),
                cwd: "/src/repo".into(),
                projection_kind: ProjectionKind::CanonicalRoot,
                mode: WorkspaceMode::Direct,
                worktree: None,
                adopted_worktree: false,
                root_pin: None,
            }),
            retained_worktrees: vec![],
            policies: Default::default(),
            always: Default::default(),
        };
        snapshot(&ws, Path::new("/d/agents/main"), &Default::default())
    }

    #[test]
    fn opening_in_agent_home_binds_the_directory() {
        let home = snapshot(
            &AgentWorkspaces::default(),
            Path::new("/d/agents/main"),
            &Default::default(),
        );
        assert_eq!(
            open_binding(&home, Path::new("/src/other")),
            OpenBinding::Use
        );
        assert_eq!(
            open_binding(&home, Path::new("/d/agents/main")),
            OpenBinding::Nothing
        );
        // HOLON_HOME itself (or a directory above it) is not a project.
        assert_eq!(open_binding(&home, Path::new("/d")), OpenBinding::Nothing);
    }

    #[test]
    fn opening_inside_the_active_workspace_changes_nothing() {
        assert_eq!(
            open_binding(&in_repo(), Path::new("/src/repo/crates/x")),
            OpenBinding::Nothing
        );
    }

    #[test]
    fn opening_elsewhere_never_moves_a_working_agent() {
        match open_binding(&in_repo(), Path::new("/src/other")) {
            OpenBinding::Offer(text) => {
                assert!(text.contains("/workspace use ."), "{text}");
                assert!(text.contains("/src/repo"), "{text}");
            }
            other => panic!("expected an offer, got {other:?}"),
        }
        // A sibling whose name starts the same is not inside.
        assert!(matches!(
            open_binding(&in_repo(), Path::new("/src/repo2")),
            OpenBinding::Offer(_)
        ));
    }
}
