//! The failure module's own tests: categories from every source, blame and its serde form,
//! messages of any length.

use super::phrases::*;
use super::text::{STACK_MESSAGE, Text};
use super::*;

#[derive(Debug)]
struct Wrapper(io::Error);
impl fmt::Display for Wrapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "search failed")
    }
}
impl std::error::Error for Wrapper {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

#[test]
fn infrastructure_phrases_match_whole_words_only() {
    assert!(contains_word("dns lookup failed", "dns"));
    assert!(contains_word("lookup: dns", "dns"));
    assert!(!contains_word("dnsmasq: bad option", "dns"));
    assert!(!contains_word("ednsx", "dns"));
    assert!(!contains_word("", "dns"));
    assert!(contains_word("écrire: broken pipe ✓", "broken pipe"));
    assert_eq!(
        FailureCategory::from_message("✓ connection refused ✓"),
        FailureCategory::Network
    );
    assert_eq!(
        FailureCategory::from_message("Zeitüberschreitung"),
        FailureCategory::Other
    );
}

#[test]
fn b14_blame_is_kept_serialized_only_when_not_the_tools_and_old_data_reads() {
    let tool = Failure::new("boom");
    assert_eq!(tool.blame(), Blame::Tool);
    assert_eq!(
        serde_json::to_string(&tool).unwrap(),
        r#"{"message":"boom","category":"other"}"#
    );
    let caller = Failure::caller("no such file: /tmp/x.txt");
    assert_eq!(caller.category(), FailureCategory::NotFound);
    let json = serde_json::to_string(&caller).unwrap();
    assert!(json.ends_with(r#""blame":"caller"}"#), "{json}");
    assert_eq!(serde_json::from_str::<Failure>(&json).unwrap(), caller);
    // Written when an unreachable server was a flag of its own.
    let old = r#"{"message":"gone","category":"network","server_unreachable":true}"#;
    let read: Failure = serde_json::from_str(old).unwrap();
    assert!(read.is_server_unreachable());
    assert_eq!(read.blame(), Blame::Dependency);
    // An io error is the tool's whatever its kind: only the tool knows whose path it was.
    let missing = Failure::from(io::Error::from(io::ErrorKind::NotFound));
    assert_eq!(missing.blame(), Blame::Tool);
    assert_eq!(
        Failure::from(io::Error::from(io::ErrorKind::InvalidInput)).category(),
        FailureCategory::InvalidInput
    );
    assert_eq!(
        FailureCategory::from_message("Invalid arguments for tool read_text_file"),
        FailureCategory::InvalidInput
    );
    assert_eq!(
        FailureCategory::from_message("connection refused: invalid argument"),
        FailureCategory::Network
    );
}

#[test]
fn exit_codes_and_http_statuses_never_panic() {
    for code in [i32::MIN, -1, 0, 128, 129, 192, 193, 255, 256, i32::MAX] {
        let _ = FailureCategory::from_exit_code(code);
        let _ = FailureCategory::from_signal(code);
    }
    assert_eq!(
        FailureCategory::from_exit_code(137),
        FailureCategory::Timeout
    );
    assert_eq!(FailureCategory::from_exit_code(139), FailureCategory::Other);
    for status in [0, 99, 404, 599, 600, u16::MAX] {
        let _ = FailureCategory::from_http_status(status);
    }
}

#[test]
fn io_kinds_map_exactly_and_messages_are_the_last_resort() {
    let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
    assert_eq!(Failure::from(&refused).category(), FailureCategory::Network);
    let ro = io::Error::from(io::ErrorKind::ReadOnlyFilesystem);
    assert_eq!(Failure::from(ro).category(), FailureCategory::Filesystem);
    let other = io::Error::other("permission denied by policy");
    assert_eq!(Failure::from(other).category(), FailureCategory::Permission);
    assert_eq!(Failure::new("boom").category(), FailureCategory::Other);
    let wrapped = Wrapper(io::Error::from(io::ErrorKind::TimedOut));
    let failure = Failure::from_error(&wrapped);
    assert_eq!(failure.category(), FailureCategory::Timeout);
    assert_eq!(failure.message(), "search failed");
}

/// The category guess one search per phrase, the simple way, kept as the oracle of the
/// one-pass guess.
fn guessed_phrase_by_phrase(message: &str) -> FailureCategory {
    let m = message.to_ascii_lowercase();
    let word = |phrases: &[&str]| phrases.iter().any(|p| contains_word(&m, p));
    let anywhere = |phrases: &[&str]| phrases.iter().any(|p| m.contains(p));
    if anywhere(NOT_FOUND_PHRASES) {
        FailureCategory::NotFound
    } else if word(NETWORK_PHRASES) {
        FailureCategory::Network
    } else if word(FILESYSTEM_PHRASES) {
        FailureCategory::Filesystem
    } else if word(PERMISSION_PHRASES) {
        FailureCategory::Permission
    } else if anywhere(TIMEOUT_PHRASES) {
        FailureCategory::Timeout
    } else if anywhere(INVALID_INPUT_PHRASES) {
        FailureCategory::InvalidInput
    } else {
        FailureCategory::Other
    }
}

#[test]
fn the_one_pass_guess_agrees_with_the_phrase_by_phrase_guess() {
    let phrases: Vec<&str> = CLASSES.iter().flat_map(|c| c.2.iter().copied()).collect();
    let around = [
        "",
        " ",
        "x",
        "1",
        "-",
        "é",
        "error: ",
        " (os error 111)",
        "DNS",
        "✓",
    ];
    let mut checked = 0;
    for &a in &phrases {
        for &b in phrases.iter().step_by(3) {
            for before in around {
                for after in around {
                    for message in [
                        format!("{before}{a}{after}"),
                        format!("{before}{}{after}", a.to_uppercase()),
                        format!("{before}{a} and {b}{after}"),
                        format!("{b}{before}{a}{after}"),
                    ] {
                        assert_eq!(
                            FailureCategory::from_message(&message),
                            guessed_phrase_by_phrase(&message),
                            "{message:?}"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    let long = format!("{} connection refused", "x".repeat(STACK_MESSAGE));
    assert_eq!(
        FailureCategory::from_message(&long),
        FailureCategory::Network
    );
    assert!(checked > 10_000, "{checked}");
}

#[test]
fn messages_of_any_length_and_failing_displays_are_kept_without_a_panic() {
    struct Long;
    impl fmt::Display for Long {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            for _ in 0..100 {
                f.write_str("connection refused; ")?;
            }
            Ok(())
        }
    }
    struct Broken;
    impl fmt::Display for Broken {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("half a message")?;
            Err(fmt::Error)
        }
    }
    let long = Failure::from_error(&io::Error::other(Long.to_string()));
    assert_eq!(long.message().len(), 2000);
    assert_eq!(long.category(), FailureCategory::Network);
    let exact = Failure::with_category("x".repeat(STACK_MESSAGE), FailureCategory::Other);
    assert_eq!(
        Failure::classified(&FailureCategory::Other).message(),
        "other"
    );
    assert_eq!(exact.message().len(), STACK_MESSAGE);
    assert_eq!(Text::display(&Broken).to_string(), "half a message");
    assert_eq!(Text::display(&Long).len(), 2000);
    let copy = long.clone();
    assert_eq!(copy, long);
    let json = serde_json::to_string(&long).unwrap();
    let back: Failure = serde_json::from_str(&json).unwrap();
    assert_eq!(back, long);
}
