use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::PathBuf;

use sluice_types::{Collector, OperatorError};

use super::{RangeCursor, SourceContext, SourceFunction, SOURCE_BATCH};

/// The byte range `[start, end)` of a file of `len` bytes that subtask `index` of `parallelism`
/// is responsible for. A line belongs to the subtask whose range contains its first byte.
pub fn byte_split(len: u64, index: usize, parallelism: usize) -> (u64, u64) {
    let r = super::split_range(len, index, parallelism);
    (r.start, r.end)
}

/// Lines of a text file (without the line terminator; a trailing `\r` is removed too). The file is
/// split into byte ranges, one per subtask, aligned to line starts. A line that is not valid UTF-8
/// goes to the dead-letter output with its byte offset; the other lines are unaffected.
///
/// Checkpoints record the byte ranges left to read (the current one from the next line's start);
/// a restore at another parallelism splits the remaining bytes evenly, and the same line-start
/// rule (a line belongs to the range holding its first byte) keeps every line read once.
pub struct TextFileSource {
    path: PathBuf,
    index: usize,
    parallelism: usize,
    /// The ranges left to read, once known (restored, or computed at start).
    ranges: Option<RangeCursor>,
}

impl TextFileSource {
    /// The source of subtask `index` of `parallelism` over the file at `path` (opened when it runs).
    pub fn new(path: PathBuf, index: usize, parallelism: usize) -> Self {
        TextFileSource {
            path,
            index,
            parallelism,
            ranges: None,
        }
    }
}

impl SourceFunction<String> for TextFileSource {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<String>,
    ) -> Result<(), OperatorError> {
        let shown = self.path.display().to_string();
        let io = |e| OperatorError::io(format!("reading {shown}"), e);
        let mut file = File::open(&self.path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut ranges = match self.ranges.take() {
            Some(r) => r,
            None => {
                let (start, end) = byte_split(len, self.index, self.parallelism);
                RangeCursor::new(start..end)
            }
        };
        let mut n = 0u64;
        while let Some(range) = ranges.next_batch(u64::MAX) {
            let (start, end) = (range.start, range.end);
            let mut at_line_start = true;
            if start > 0 {
                // `start` is a line start only if the byte before it ends a line.
                file.seek(SeekFrom::Start(start - 1)).map_err(io)?;
                let mut b = [0u8; 1];
                file.read_exact(&mut b).map_err(io)?;
                at_line_start = b[0] == b'\n';
            } else {
                file.seek(SeekFrom::Start(0)).map_err(io)?;
            }
            let mut pos = start;
            let mut reader = BufReader::with_capacity(64 * 1024, &mut file);
            if !at_line_start {
                // The line under `start` began in the previous range: it is theirs.
                let mut skipped = Vec::new();
                pos += reader.read_until(b'\n', &mut skipped).map_err(io)? as u64;
            }
            let mut line = Vec::with_capacity(256);
            while pos < end {
                if ctx.barrier_pending() {
                    // Position: from this line's start, then the ranges not begun.
                    let (p, e, rest) = (pos, end, &ranges);
                    ctx.checkpoint_if_due(out, || rest.position_within(p, e))?;
                }
                line.clear();
                let read = reader.read_until(b'\n', &mut line).map_err(io)?;
                if read == 0 {
                    break;
                }
                let line_start = pos;
                pos += read as u64;
                if line.last() == Some(&b'\n') {
                    line.pop();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                }
                match std::str::from_utf8(&line) {
                    Ok(s) => out.collect(s.to_owned())?,
                    Err(e) => ctx.dead_letter(
                        format!("{shown} at byte {line_start}"),
                        format!("line is not valid UTF-8 ({e})"),
                    ),
                }
                n += 1;
                if n == SOURCE_BATCH {
                    ctx.add_emitted(n);
                    n = 0;
                    if ctx.should_stop() {
                        return Err(OperatorError::Cancelled);
                    }
                }
            }
        }
        ctx.add_emitted(n);
        ctx.await_final_checkpoint(out, || ranges.position())
    }

    fn restore_position(
        &mut self,
        parts: &[(usize, Vec<u8>)],
        op: &sluice_types::OperatorContext,
    ) -> Result<(), OperatorError> {
        self.ranges = Some(RangeCursor::restore(
            parts,
            op.subtask_index,
            op.parallelism,
        )?);
        Ok(())
    }
}
