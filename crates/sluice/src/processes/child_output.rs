//! The output of the processes of `--processes N`, forwarded by their launcher a whole line at
//! a time; the lines of process I > 0 prefixed `[process I] `. Process 0, the job master,
//! speaks as a one-process run does (`REST API: …` first on its line, for scripts).
//!
//! Why: N processes writing to one inherited stderr interleave mid-line, since a process's
//! `eprintln!` is several `write`s (its stderr is unbuffered); lines such as
//! `process 1 of 2: its final sums …` came out torn into pieces of both processes' text.
//! Each child's stdout and stderr are pipes here; a thread per pipe reads a line and writes it
//! with one `write_all` under the launcher's stream lock, so lines never mix.

use std::io::{BufRead, BufReader, Read, Write};
use std::thread::JoinHandle;

/// Where a forwarded line goes: the launcher's own stdout or stderr.
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    /// The launcher's stdout.
    Stdout,
    /// The launcher's stderr.
    Stderr,
}

/// Starts a thread that copies `from` line by line to the launcher's `to`, each line as
/// `[process I] line` (as it is for process 0); it ends at the pipe's end (the process exited or was killed). A line
/// cut off by the process's end is written with a newline; bytes that are not UTF-8 pass as
/// they are.
pub fn forward(from: impl Read + Send + 'static, process: usize, to: Stream) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let prefix = match process {
            0 => String::new(),
            i => format!("[process {i}] "),
        };
        let mut reader = BufReader::new(from);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line.last() != Some(&b'\n') {
                line.push(b'\n');
            }
            let mut whole = Vec::with_capacity(prefix.len() + line.len());
            whole.extend_from_slice(prefix.as_bytes());
            whole.extend_from_slice(&line);
            // A launcher whose own output is gone (a closed pipe) still drains the child's,
            // so the child never blocks on a full pipe.
            let _ = match to {
                Stream::Stdout => std::io::stdout().lock().write_all(&whole),
                Stream::Stderr => std::io::stderr().lock().write_all(&whole),
            };
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forwarder_ends_with_its_pipe_and_keeps_a_cut_last_line() {
        // Ends at EOF (the writer side is a byte slice here); no panic on a last line without
        // a newline.
        let h = forward(&b"one\ntwo"[..], 3, Stream::Stderr);
        h.join().expect("the forwarder ends");
    }
}
