//! For the few tests that need the process to themselves: they count its threads or set its
//! environment. All of the crate's integration tests share one binary (`it`) and run on
//! parallel threads, so such a test runs again in a child process of this binary, alone there
//! (`--exact`), with one such child at a time; the parent's copy only waits for it.

use std::process::Command;
use std::sync::Mutex;

/// Set in the child process: there the test runs its body.
const CHILD_ENV: &str = "SLUICE_TEST_OWN_PROCESS";

/// Runs `test` (its path in this binary, `module::name`) in a child process of its own and
/// fails if it failed there. `true` in the parent once the child passed (the caller returns),
/// `false` in the child (the caller goes on with the test).
pub fn rerun_in_own_process(test: &str) -> bool {
    if std::env::var_os(CHILD_ENV).is_some() {
        return false;
    }
    // One child at a time, as when these tests had binaries of their own: none shares the
    // machine with another of its kind.
    static ONE_CHILD: Mutex<()> = Mutex::new(());
    let _one = ONE_CHILD.lock().unwrap_or_else(|p| p.into_inner());
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains(" 1 passed"),
        "{test} in a process of its own:\n{text}"
    );
    true
}

/// `in_own_process!(name)` first in test `name`: see [`rerun_in_own_process`].
macro_rules! in_own_process {
    ($test:ident) => {
        let path = format!(
            "{}::{}",
            module_path!().trim_start_matches("it::"),
            stringify!($test)
        );
        if $crate::own_process::rerun_in_own_process(&path) {
            return;
        }
    };
}
pub(crate) use in_own_process;
