use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use sluice_types::{Collector, ControlEvent, OperatorError};

/// Where subtask `index` of a file sink with `parallelism` subtasks writes: the path itself at
/// parallelism 1, otherwise `path/part-<index>` (the path is a directory, created if missing).
pub fn part_path(path: &Path, index: usize, parallelism: usize) -> PathBuf {
    if parallelism <= 1 {
        path.to_path_buf()
    } else {
        path.join(format!("part-{index}"))
    }
}

/// Writes one line per record, formatted by a closure (`write_text`, `write_csv`).
pub struct TextFileSink<F> {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    header: Option<String>,
    format: F,
    line: String,
}

impl<F> TextFileSink<F> {
    /// A sink writing to `path` (created, with its directory, on the first record), with
    /// `header` as its first line if given.
    pub fn new(path: PathBuf, header: Option<String>, format: F) -> Self {
        TextFileSink {
            path,
            out: None,
            header,
            format,
            line: String::new(),
        }
    }

    fn writer(&mut self) -> Result<&mut BufWriter<File>, OperatorError> {
        if let Some(w) = self.out.take() {
            return Ok(self.out.insert(w));
        }
        let shown = self.path.display().to_string();
        if let Some(dir) = self.path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| OperatorError::io(format!("creating directory for {shown}"), e))?;
            }
        }
        let f = File::create(&self.path)
            .map_err(|e| OperatorError::io(format!("creating {shown}"), e))?;
        let mut w = BufWriter::with_capacity(256 * 1024, f);
        if let Some(h) = &self.header {
            writeln!(w, "{h}").map_err(|e| OperatorError::io(format!("writing {shown}"), e))?;
        }
        Ok(self.out.insert(w))
    }
}

impl<T, F> Collector<T> for TextFileSink<F>
where
    F: FnMut(&T, &mut String) + Send,
{
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        (self.format)(&record, &mut line);
        line.push('\n');
        let res = self.writer()?.write_all(line.as_bytes());
        self.line = line;
        res.map_err(|e| OperatorError::io(format!("writing {}", self.path.display()), e))
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            // An empty share still produces its (possibly header-only) file, so readers find
            // every part.
            ControlEvent::EndOfInput => self
                .writer()?
                .flush()
                .map_err(|e| OperatorError::io(format!("writing {}", self.path.display()), e)),
            // Lines stay in the write buffer until it fills or the input ends (the file is read
            // after the job); not transactional, so a barrier has nothing to snapshot (that is
            // the transactional file sink's job); time does not matter to a file.
            ControlEvent::Flush
            | ControlEvent::Barrier(_)
            | ControlEvent::Watermark(_)
            | ControlEvent::Idleness(_)
            | ControlEvent::CheckpointComplete(_) => Ok(()),
        }
    }
}
