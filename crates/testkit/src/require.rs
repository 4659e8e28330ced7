//! The one rule for a test whose server cannot be started (Kafka, PostgreSQL, Flink, a browser,
//! moto, network namespaces): under CI (`CI=true`) the test fails and names what is missing; only
//! outside CI may it skip, and then it says so on stderr with a line that starts `SKIPPED:`.

use std::fmt::Display;
use std::io::Write;

/// Whether this run is CI: the environment variable `CI` is `true`, `1` or `yes` (any case), as
/// CI services and `.ci/run` set it.
pub fn in_ci() -> bool {
    ci_value(std::env::var("CI").ok().as_deref())
}

fn ci_value(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        let v = v.trim();
        ["true", "1", "yes"]
            .iter()
            .any(|on| v.eq_ignore_ascii_case(on))
    })
}

/// The started server (`Ok`) for the test to use, or `None` when the test should return early
/// because `what` cannot be started here (`Err`, which says why).
///
/// Under CI ([`in_ci`]) an `Err` panics instead, naming `what` and the reason: a server CI is
/// meant to have must never turn a test into a silent pass. Outside CI the skip is printed to
/// stderr as `SKIPPED: <test>: <what> …`.
///
/// ```
/// let pg: Result<u16, String> = Err("no /usr/lib/postgresql/*/bin/postgres".into());
/// // Outside CI this prints a SKIPPED line and gives `None`; under CI=true it panics.
/// # if !sluice_testkit::in_ci() {
/// let Some(_port) = sluice_testkit::require("PostgreSQL", pg) else { return };
/// # }
/// ```
pub fn require<T, E: Display>(what: &str, result: Result<T, E>) -> Option<T> {
    require_in(in_ci(), what, result)
}

/// [`require`] with the CI decision given rather than read from the environment.
///
/// # Panics
/// When `ci` is set and `result` is an `Err`.
pub fn require_in<T, E: Display>(ci: bool, what: &str, result: Result<T, E>) -> Option<T> {
    match result {
        Ok(server) => Some(server),
        Err(why) => {
            let test = std::thread::current()
                .name()
                .unwrap_or("this test")
                .to_string();
            if ci {
                panic!("{test}: CI=true and {what} cannot be started: {why}");
            }
            // Straight to the process's stderr: the test harness captures `eprintln!` of a
            // passing test, and a skip must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: {test}: {what} cannot be started here: {why} (under CI=true this fails)"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_server_is_used_in_and_out_of_ci() {
        assert_eq!(
            require_in(true, "PostgreSQL", Ok::<_, String>(5432)),
            Some(5432)
        );
        assert_eq!(
            require_in(false, "PostgreSQL", Ok::<_, String>(5432)),
            Some(5432)
        );
    }

    #[test]
    fn outside_ci_a_missing_server_skips() {
        assert_eq!(require_in(false, "Flink", Err::<u16, _>("no javac")), None);
    }

    #[test]
    #[should_panic(expected = "CI=true and PostgreSQL cannot be started: no initdb")]
    fn under_ci_a_missing_server_fails_naming_it() {
        require_in(true, "PostgreSQL", Err::<u16, _>("no initdb"));
    }

    /// The scripts' copy of the rule (`scripts/lib/require.sh`) decides the same way.
    #[test]
    fn the_shell_helper_fails_under_ci_and_skips_loudly_elsewhere() {
        let helper = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/lib/require.sh");
        let run = |ci: &str| {
            std::process::Command::new("bash")
                .arg("-c")
                .arg(format!(
                    ". '{helper}'; require_or_skip 'a browser' 'no chromium'; echo ran-on"
                ))
                .env("CI", ci)
                .output()
                .unwrap()
        };
        for (ci, in_ci) in [
            ("true", true),
            ("1", true),
            ("YES", true),
            ("", false),
            ("false", false),
        ] {
            assert_eq!(ci_value(Some(ci)), in_ci, "{ci:?}");
            let out = run(ci);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.stdout.is_empty(),
                "the script must end at the helper: CI={ci:?}"
            );
            if in_ci {
                assert_eq!(out.status.code(), Some(1), "CI={ci:?}: {stderr}");
                assert!(stderr.contains("CI=true and a browser cannot be started: no chromium"));
            } else {
                assert_eq!(out.status.code(), Some(0), "CI={ci:?}: {stderr}");
                assert!(stderr.starts_with("SKIPPED: "), "{stderr}");
            }
        }
    }

    #[test]
    fn ci_is_recognised_the_way_ci_services_set_it() {
        for on in ["true", "TRUE", "1", "yes", " true "] {
            assert!(ci_value(Some(on)), "{on:?}");
        }
        for off in [None, Some(""), Some("false"), Some("0"), Some("no")] {
            assert!(!ci_value(off), "{off:?}");
        }
    }
}
