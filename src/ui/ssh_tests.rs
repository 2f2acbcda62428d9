//! Tests of `ssh.rs`: addresses, refusals and what is said.

use super::*;

#[test]
fn addresses_parse_into_what_ssh_is_given() {
    let t = SshTarget::parse("ssh://ana@build.lan:2222/~/holon").unwrap();
    assert_eq!(t.user.as_deref(), Some("ana"));
    assert_eq!(t.host, "build.lan");
    assert_eq!(t.port, Some(2222));
    assert_eq!(t.home.as_deref(), Some("~/holon"));
    assert_eq!(t.describe(), "ssh://ana@build.lan:2222/~/holon");
    assert_eq!(t.remote_command(), "holon attach --stdio --home ~/'holon'");
    let v6 = SshTarget::parse("ssh://[::1]:22/srv/its here/").unwrap();
    assert_eq!(v6.host, "::1");
    assert_eq!(v6.describe(), "ssh://[::1]:22/srv/its here");
    assert_eq!(
        v6.remote_command(),
        "holon attach --stdio --home '/srv/its here'"
    );
    let bare = SshTarget::parse("ssh://box").unwrap();
    assert_eq!((bare.port, &bare.home, &bare.user), (None, &None, &None));
    assert_eq!(bare.remote_command(), "holon attach --stdio");
}

#[test]
fn an_address_that_would_be_an_option_or_worse_is_refused() {
    for bad in [
        "ssh://-oProxyCommand=touch%20x",
        "ssh://-x@host",
        "ssh://host:0",
        "ssh://host:99999",
        "ssh://",
        "ssh://a b",
        "ssh://host/\nrm",
        "ssh://host/x\\'; touch pwned; #",
        "ssh://host/$(id)",
        "ssh://host/a'b",
        "ssh://[::1",
        "http://host",
    ] {
        assert!(SshTarget::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn failures_are_explained_in_the_operators_terms() {
    let t = SshTarget::parse("ssh://box").unwrap();
    let changed = "@@@@@@@@\nWARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!\nHost key verification failed.\n";
    assert!(explain(&t, Some(255), changed, "").contains("host key is not the one"));
    let old = "error: unexpected argument '--stdio' found\n";
    assert!(explain(&t, Some(2), old, "").contains("older than this one"));
    let none = "bash: line 1: holon: command not found\n";
    assert!(explain(&t, Some(127), none, "").contains("no `holon` on the PATH"));
    let down = "holon: error: no Holon runtime answers on /h/run/holon.sock\n";
    assert!(explain(&t, Some(1), down, "").starts_with("on box: no Holon runtime answers"));
    let gone = "ssh: connect to host box port 22: Connection refused\n";
    assert!(explain(&t, Some(255), gone, "").contains("could not reach box"));
}
