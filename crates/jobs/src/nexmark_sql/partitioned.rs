//! Reading back a query whose sink is a `PARTITIONED BY` filesystem table (q10): the rows of
//! the published files under `k1=v1/k2=v2/` with the partition columns appended from the
//! directory names, as the table's csv text, for the comparison with DuckDB; and the
//! partitions' commit state. Written apart from the connector (its own `%XX` decoding), so
//! the reading checks the writing.

use std::path::Path;

/// What the partitioned output holds.
#[derive(Debug, Default)]
pub struct PartitionedOutput {
    /// Each row as csv text: the file's line, then the partition values.
    pub lines: Vec<String>,
    /// Partition directories holding data.
    pub partitions: usize,
    /// Of those, how many hold the success file.
    pub committed: usize,
    /// In-progress (hidden `.part-…inprogress`) files left.
    pub in_progress: usize,
}

/// `%XX` decoded.
fn decode(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A csv field as Flink's csv writes it (quoted when it holds a separator, quote or line end).
fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

/// Reads the table under `root` partitioned by `keys` (the table's last columns, in order);
/// `success` is the success file's name.
pub fn read(root: &Path, keys: &[String], success: &str) -> Result<PartitionedOutput, String> {
    let mut out = PartitionedOutput::default();
    walk(root, keys, &mut Vec::new(), success, &mut out)?;
    Ok(out)
}

fn walk(
    dir: &Path,
    keys: &[String],
    values: &mut Vec<String>,
    success: &str,
    out: &mut PartitionedOutput,
) -> Result<(), String> {
    let mut entries: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("listing {}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    let mut data = false;
    let mut has_success = false;
    for path in entries {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if path.is_dir() {
            let key = &keys
                .get(values.len())
                .ok_or_else(|| format!("{}: deeper than the partition keys", path.display()))?;
            let value = name
                .strip_prefix(&format!("{key}="))
                .ok_or_else(|| format!("{}: not a '{key}=…' directory", path.display()))?;
            if value.contains(':') {
                return Err(format!(
                    "{}: ':' is not escaped (Flink writes it as %3A)",
                    path.display()
                ));
            }
            values.push(decode(value));
            walk(&path, keys, values, success, out)?;
            values.pop();
        } else if name == success {
            has_success = true;
        } else if name.starts_with('.') && name.ends_with(".inprogress") {
            out.in_progress += 1;
        } else if !(name.starts_with('.') || name.starts_with('_')) {
            if values.len() != keys.len() {
                return Err(format!(
                    "{}: a data file outside a partition",
                    path.display()
                ));
            }
            data = true;
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            let tail: String = values
                .iter()
                .map(|v| format!(",{}", csv_field(v)))
                .collect();
            out.lines.extend(text.lines().map(|l| format!("{l}{tail}")));
        }
    }
    if data {
        out.partitions += 1;
        out.committed += usize::from(has_success);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_flinks_escapes() {
        assert_eq!(decode("12%3A00"), "12:00");
        assert_eq!(decode("a%2Fb"), "a/b");
        assert_eq!(decode("5%"), "5%");
    }
}
