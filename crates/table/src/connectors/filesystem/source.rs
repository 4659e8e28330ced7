//! The filesystem source: subtask `k` of `p` reads the files `i ≡ k (mod p)` of the sorted
//! listing, record by record; a record that does not parse is a dead letter with its file and
//! byte offset. Its checkpoint position is (file of its share, byte offset of the next record);
//! a restore at the same parallelism resumes there.
//!
//! A partitioned table's rows get their partition columns from the file's directories
//! (`k=v`, unescaped); a file outside a complete set of partition directories is skipped, as
//! Flink lists only partition directories.
//!
//! A file whose name ends in `.gz` is decompressed as it is read, as Flink's file source picks
//! its decompression by the file's extension; its offsets count decompressed bytes, and a
//! restore decompresses again up to its offset (gzip cannot seek).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use sluice_datastream::{DataStream, OperatorError, StreamEnv};
use sluice_runtime::sources::{SourceContext, SourceFunction, SOURCE_BATCH};
use sluice_sql::Row;
use sluice_types::Collector;

use super::super::format::Format;
use super::FilesystemSpec;

/// Whether a file is data (not hidden, not in progress).
fn is_data(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    !(name.starts_with('.') || name.starts_with('_') || name.ends_with(".pending"))
}

/// The data files under `path` (itself if a file), sorted, recursively.
fn list(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if path.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for e in entries {
        if !is_data(&e) {
            continue;
        }
        if e.is_dir() {
            list(&e, out)?;
        } else {
            out.push(e);
        }
    }
    Ok(())
}

/// Whether `path` is read through gzip (by its extension, as Flink's file source decides).
fn is_gzip(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

/// `path`'s content from (decompressed) byte `offset` on.
fn open_at(path: &Path, offset: u64) -> std::io::Result<Box<dyn BufRead>> {
    let mut file = File::open(path)?;
    if !is_gzip(path) {
        file.seek(SeekFrom::Start(offset))?;
        return Ok(Box::new(BufReader::with_capacity(64 * 1024, file)));
    }
    // Concatenated gzip members are one stream, as `gzip -d` reads them.
    let inflated = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(64 * 1024, file));
    let mut reader = BufReader::with_capacity(64 * 1024, inflated);
    let skipped = std::io::copy(&mut (&mut reader).take(offset), &mut std::io::sink())?;
    if skipped < offset {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("the checkpointed offset {offset} is past the end ({skipped} bytes)"),
        ));
    }
    Ok(Box::new(reader))
}

pub(super) fn stream(spec: FilesystemSpec, env: &StreamEnv) -> DataStream<Row> {
    env.add_source("filesystem", move |k, p| {
        Ok(FileRows {
            spec: spec.clone(),
            subtask: k,
            parallelism: p,
            position: (0, 0),
        })
    })
}

struct FileRows {
    spec: FilesystemSpec,
    subtask: usize,
    parallelism: usize,
    /// (index in this subtask's share of the files, byte offset of the next record).
    position: (usize, u64),
}

impl FileRows {
    fn encode(position: (usize, u64)) -> Result<Vec<u8>, OperatorError> {
        sluice_runtime::state::layout::encode(&(position.0 as u64, position.1))
    }
}

impl SourceFunction<Row> for FileRows {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        let root = self.spec.path.clone();
        let mut files = Vec::new();
        list(&root, &mut files)
            .map_err(|e| OperatorError::io(format!("listing {}", root.display()), e))?;
        let mine: Vec<PathBuf> = files
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % self.parallelism == self.subtask)
            .map(|(_, f)| f)
            .collect();
        let csv = matches!(self.spec.format.format, Format::Csv(_));
        let mut n = 0u64;
        while self.position.0 < mine.len() {
            let path = &mine[self.position.0];
            let shown = path.display().to_string();
            let io = |e| OperatorError::io(format!("reading {shown}"), e);
            // A partitioned table's partition values, from the file's directories.
            let partition = match &self.spec.partitioning {
                None => None,
                Some(p) => {
                    let rel = path.strip_prefix(&root).unwrap_or(path);
                    let rel = rel.parent().map(|d| d.to_string_lossy().replace('\\', "/"));
                    let rel = rel.as_deref().unwrap_or("");
                    if p.values_of(rel).is_err() {
                        // Not a partition's file (Flink lists partition directories only).
                        self.position = (self.position.0 + 1, 0);
                        continue;
                    }
                    match p.typed_values(rel) {
                        Ok(v) => Some(v),
                        Err(reason) => {
                            ctx.dead_letter(shown.clone(), reason);
                            self.position = (self.position.0 + 1, 0);
                            continue;
                        }
                    }
                }
            };
            let mut reader = open_at(path, self.position.1).map_err(io)?;
            let mut record = String::new();
            let mut bytes = Vec::with_capacity(256);
            loop {
                if ctx.barrier_pending() {
                    let at = self.position;
                    ctx.checkpoint_if_due(out, || Self::encode(at))?;
                }
                let start = self.position.1;
                record.clear();
                // A csv record goes on past a line end inside quotes.
                loop {
                    bytes.clear();
                    let read = reader.read_until(b'\n', &mut bytes).map_err(io)?;
                    if read == 0 {
                        break;
                    }
                    self.position.1 += read as u64;
                    match std::str::from_utf8(&bytes) {
                        Ok(s) => record.push_str(s),
                        Err(e) => {
                            record.clear();
                            ctx.dead_letter(
                                format!("{shown} at byte {start}"),
                                format!("not valid UTF-8 ({e})"),
                            );
                            break;
                        }
                    }
                    if !(csv && super::csv::open_quote(&record)) {
                        break;
                    }
                }
                if self.position.1 == start {
                    break;
                }
                let text = record.strip_suffix('\n').unwrap_or(&record);
                let text = text.strip_suffix('\r').unwrap_or(text);
                if text.trim().is_empty() {
                    continue;
                }
                match self.spec.parse_record(text) {
                    Ok(row) => match (&self.spec.partitioning, &partition) {
                        (Some(p), Some(values)) => out.collect(p.full_row(row, values))?,
                        _ => out.collect(row)?,
                    },
                    Err(reason) => ctx.dead_letter(format!("{shown} at byte {start}"), reason),
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
            self.position = (self.position.0 + 1, 0);
        }
        ctx.add_emitted(n);
        let at = self.position;
        ctx.await_final_checkpoint(out, || Self::encode(at))
    }

    fn restore_position(
        &mut self,
        parts: &[(usize, Vec<u8>)],
        op: &sluice_types::OperatorContext,
    ) -> Result<(), OperatorError> {
        if parts.len() != op.parallelism {
            return Err(OperatorError::failed(format!(
                "the filesystem source was checkpointed at parallelism {} and cannot resume at {}",
                parts.len(),
                op.parallelism
            )));
        }
        for (i, bytes) in parts {
            if *i == op.subtask_index {
                let (file, offset): (u64, u64) = sluice_runtime::state::layout::decode(bytes)?;
                self.position = (file as usize, offset);
            }
        }
        Ok(())
    }
}
