//! How a turn ended (`Ending`), and what that comes to before it is
//! written down (`end.rs` writes it): the terminal kind, the message's
//! queue status, the brief's kind, text and visibility. Pure.

use crate::model::decision::TurnTerminalKind;
use crate::model::message::QueueEntryStatus;
use crate::model::usage::ProviderAttemptTimeline;
use crate::protocol::events::{BriefKind, BriefVisibility};
use crate::protocol::payloads::CancelReason;
use crate::runtime::provider::ProviderFailure;

/// How the turn ended, before it is written down.
pub(super) enum Ending {
    Completed {
        text: String,
        rounds: u32,
        completed_work_item: Option<String>,
        /// The provider's stop reason when the answer was cut off by the
        /// output limit (`length`, `max_tokens`, `incomplete:...`).
        truncated: Option<String>,
    },
    Failed {
        failure: Box<ProviderFailure>,
        timeline: Box<ProviderAttemptTimeline>,
        rounds: u32,
    },
    /// The turn's fixed part alone exceeds the prompt budget: nothing is
    /// sent (`TurnBaselineOverBudget`).
    OverBudget { report: String, rounds: u32 },
    Aborted {
        reason: CancelReason,
        rounds: u32,
        /// The provider request that was in flight when the turn was
        /// cancelled, recorded as a cancelled attempt.
        timeline: Option<Box<ProviderAttemptTimeline>>,
        /// What the model had streamed of its answer when it was cut off.
        partial: Option<String>,
    },
}

/// What an ending comes to before it is written down.
pub(super) struct Outcome {
    pub(super) terminal: TurnTerminalKind,
    /// The message's final queue status.
    pub(super) queue_status: QueueEntryStatus,
    pub(super) brief_kind: BriefKind,
    /// The brief's text.
    pub(super) text: String,
    /// The model's last words (empty when the turn did not complete).
    pub(super) last_assistant: String,
    pub(super) rounds: u32,
    pub(super) failure: Option<ProviderFailure>,
}

pub(super) fn outcome(ending: &Ending) -> Outcome {
    let (terminal, queue_status, brief_kind, text, last_assistant, rounds, failure) = match ending {
        Ending::Completed {
            text,
            rounds,
            truncated: None,
            ..
        } => (
            TurnTerminalKind::Completed,
            QueueEntryStatus::Processed,
            BriefKind::Result,
            text.clone(),
            text.clone(),
            *rounds,
            None,
        ),
        Ending::Completed {
            text,
            rounds,
            truncated: Some(why),
            ..
        } => {
            let note = format!("{text}\n\n[The answer was cut off by the model's output limit (stop reason `{why}`).]");
            (
                TurnTerminalKind::Completed,
                QueueEntryStatus::Processed,
                BriefKind::Result,
                note,
                text.clone(),
                *rounds,
                None,
            )
        }
        Ending::Failed {
            failure, rounds, ..
        } => (
            TurnTerminalKind::Aborted,
            QueueEntryStatus::Processed,
            BriefKind::Failure,
            failure.artifact.summary.clone(),
            String::new(),
            *rounds,
            Some((**failure).clone()),
        ),
        Ending::OverBudget { report, rounds } => (
            TurnTerminalKind::BaselineOverBudget,
            QueueEntryStatus::Processed,
            BriefKind::Failure,
            report.clone(),
            String::new(),
            *rounds,
            None,
        ),
        Ending::Aborted { reason, rounds, .. } => (
            TurnTerminalKind::Aborted,
            QueueEntryStatus::Aborted,
            BriefKind::Failure,
            format!("Turn {}.", reason.describe()),
            String::new(),
            *rounds,
            None,
        ),
    };
    Outcome {
        terminal,
        queue_status,
        brief_kind,
        text,
        last_assistant,
        rounds,
        failure,
    }
}

/// The brief's kind and visibility. A completed turn that handed its work
/// off to tasks still running is an acknowledgement (the result follows
/// when they rejoin). Waiting for the operator is action_required; a
/// completed work item with its report is work_done; else turn_result.
pub(super) fn brief_class(
    kind: BriefKind,
    handed_off: bool,
    completed_work_item: bool,
    needs_input: bool,
) -> (BriefKind, BriefVisibility) {
    let kind = match kind == BriefKind::Result && handed_off && !completed_work_item {
        true => BriefKind::Ack,
        false => kind,
    };
    let visibility = if needs_input && kind != BriefKind::Failure {
        BriefVisibility::ActionRequired
    } else if completed_work_item && kind == BriefKind::Result {
        BriefVisibility::WorkDone
    } else {
        BriefVisibility::TurnResult
    };
    (kind, visibility)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_brief_is_classed_by_what_the_turn_left() {
        use BriefKind::{Ack, Failure, Result as Done};
        use BriefVisibility::{ActionRequired, TurnResult, WorkDone};
        // (kind, handed off, completed a work item, needs input) -> class
        let cases = [
            ((Done, false, false, false), (Done, TurnResult)),
            // Work handed to tasks still running: an acknowledgement.
            ((Done, true, false, false), (Ack, TurnResult)),
            // A completed work item reports, handed off or not.
            ((Done, true, true, false), (Done, WorkDone)),
            ((Done, false, true, false), (Done, WorkDone)),
            // Waiting for the operator comes first, but never for a failure.
            ((Done, false, true, true), (Done, ActionRequired)),
            ((Ack, true, false, true), (Ack, ActionRequired)),
            ((Failure, true, true, true), (Failure, TurnResult)),
        ];
        for ((kind, handed, completed, input), want) in cases {
            assert_eq!(
                brief_class(kind, handed, completed, input),
                want,
                "{kind:?} handed off {handed}, completed {completed}, needs input {input}"
            );
        }
    }

    #[test]
    fn a_cut_off_answer_says_so_in_its_brief_but_not_in_the_last_words() {
        let ending = Ending::Completed {
            text: "half an answer".into(),
            rounds: 2,
            completed_work_item: None,
            truncated: Some("max_tokens".into()),
        };
        let o = outcome(&ending);
        assert_eq!(o.last_assistant, "half an answer");
        assert!(o
            .text
            .starts_with("half an answer\n\n[The answer was cut off"));
        assert!(o.text.contains("`max_tokens`"));
        assert_eq!((o.terminal, o.rounds), (TurnTerminalKind::Completed, 2));
    }
}
