//! The join rules and the classification of queued messages (`join.rs`).

use super::*;

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn a_turn_joins_once_every_answer_is_in_and_waits_before() {
    let awaited = ids(&["apr_1", "apr_2"]);
    assert_eq!(hold(&[], &awaited), Hold::Wait);
    let one = [Queued::Answer("apr_1".into())];
    assert_eq!(hold(&one, &awaited), Hold::Wait);
    let both = [
        Queued::Answer("apr_2".into()),
        Queued::Answer("apr_1".into()),
    ];
    assert_eq!(hold(&both, &awaited), Hold::Join);
    // Another run's answer is no answer to this one.
    let other = [Queued::Answer("apr_9".into())];
    assert_eq!(hold(&other, &ids(&["apr_1"])), Hold::Wait);
}

#[test]
fn an_interjection_joins_at_once_and_other_input_ends_the_wait() {
    let awaited = ids(&["apr_1"]);
    assert_eq!(hold(&[Queued::Interjection], &awaited), Hold::Join);
    let with_other = [Queued::Answer("apr_1".into()), Queued::Other];
    assert_eq!(hold(&with_other, &awaited), Hold::Release);
    assert_eq!(hold(&[Queued::Other], &awaited), Hold::Release);
}

fn followup(approval_id: &str, subsystem: &str, context: AdmissionContext) -> MessageEnvelope {
    use crate::model::message::{AdmissionRequest, DeliverySurface, MessageBody};
    let req = AdmissionRequest {
        agent_id: "main".into(),
        kind: MessageKind::InternalFollowup,
        origin: MessageOrigin::System {
            subsystem: subsystem.into(),
        },
        priority: Priority::Next,
        body: MessageBody::Text {
            text: "approved; it ran".into(),
        },
        delivery_surface: DeliverySurface::RuntimeSystem,
        admission_context: context,
        work_item_id: None,
        task_id: None,
        source_refs: [("approval_id".to_owned(), approval_id.to_owned())].into(),
        metadata: None,
        correlation_id: None,
        causation_id: None,
    };
    crate::model::message::normalize(req, "msg_answer".into(), "2026-11-30T00:00:00Z".into())
}

fn record(run_id: &str, answered_by: Option<&str>) -> ApprovalRecord {
    ApprovalRecord {
        id: "apr_1".into(),
        agent_id: "main".into(),
        status: Default::default(),
        tool_name: "ExecCommand".into(),
        call_id: "call_1".into(),
        arguments: serde_json::Value::Null,
        summary: "touch a".into(),
        why: "it may write".into(),
        workspace_id: "agent_home".into(),
        execution_root: "/tmp".into(),
        run_id: run_id.into(),
        message_id: "msg_turn".into(),
        work_item_id: None,
        requested_at: String::new(),
        answered_at: None,
        note: None,
        always: false,
        result_message_id: answered_by.map(str::to_owned),
        review: None,
    }
}

#[test]
fn only_the_message_the_approval_names_is_its_answer() {
    let env = followup("apr_1", "approvals", AdmissionContext::RuntimeOwned);
    let next = Priority::Next;
    let answer = |rec: ApprovalRecord| classify(next, &env, "run_1", |_| Some(rec));
    assert_eq!(
        answer(record("run_1", Some("msg_answer"))),
        Queued::Answer("apr_1".into())
    );
    // Another run's approval, an answer not yet admitted, another message.
    assert_eq!(answer(record("run_0", Some("msg_answer"))), Queued::Other);
    assert_eq!(answer(record("run_1", None)), Queued::Other);
    assert_eq!(answer(record("run_1", Some("msg_other"))), Queued::Other);
    assert_eq!(classify(next, &env, "run_1", |_| None), Queued::Other);
    // A message dressed as one, from anywhere but the approvals.
    for env in [
        followup("apr_1", "triggers", AdmissionContext::RuntimeOwned),
        followup(
            "apr_1",
            "approvals",
            AdmissionContext::PublicUnauthenticated,
        ),
    ] {
        let rec = record("run_1", Some("msg_answer"));
        assert_eq!(classify(next, &env, "run_1", |_| Some(rec)), Queued::Other);
    }
}

#[test]
fn an_operator_prompt_joins_only_with_interject_priority_and_trust() {
    use crate::model::message::{AdmissionRequest, DeliverySurface};
    let req = AdmissionRequest::operator_prompt(
        "main",
        "look at the tests too",
        Priority::Interject,
        DeliverySurface::CliPrompt,
    );
    let mut env = crate::model::message::normalize(req, "msg_p".into(), String::new());
    assert_eq!(env.trust, TrustLevel::TrustedOperator);
    let none = |_: &str| None;
    assert_eq!(
        classify(Priority::Interject, &env, "run_1", none),
        Queued::Interjection
    );
    assert_eq!(
        classify(Priority::Normal, &env, "run_1", none),
        Queued::Other
    );
    env.trust = TrustLevel::UntrustedExternal;
    assert_eq!(
        classify(Priority::Interject, &env, "run_1", none),
        Queued::Other
    );
}
