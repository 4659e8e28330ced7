//! The skew job's `--output`: `key,sum` CSV sorted by key, and the merge of the parts the
//! processes of a split job write (one per process, each key in exactly one).

use std::collections::BTreeMap;
use std::path::Path;

/// Writes `key,sum` CSV sorted by key, with a header line (as [`crate::skew::SkewJob::write_csv`]).
pub fn write_sums_csv(path: &Path, finals: &BTreeMap<i64, i64>) -> std::io::Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(w, "key,sum")?;
    for (k, s) in finals {
        writeln!(w, "{k},{s}")?;
    }
    w.flush()
}

/// Adds a process's `key,sum` part to `all`; a key in two parts is an error (each key is
/// summed by exactly one subtask). Errors name the file and line.
pub fn read_sums_part(part: &Path, all: &mut BTreeMap<i64, i64>) -> Result<(), String> {
    let text =
        std::fs::read_to_string(part).map_err(|e| format!("reading {}: {e}", part.display()))?;
    for (n, line) in text.lines().enumerate().skip(1) {
        let bad = format!("{}:{}: not `key,sum`: {line}", part.display(), n + 1);
        let (k, s) = line.split_once(',').ok_or_else(|| bad.clone())?;
        let k: i64 = k.parse().map_err(|e| format!("{bad}: {e}"))?;
        let s: i64 = s.parse().map_err(|e| format!("{bad}: {e}"))?;
        if all.insert(k, s).is_some() {
            return Err(format!(
                "key {k} was summed by two processes ({})",
                part.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_merge_and_a_key_in_two_parts_is_refused() {
        let dir = std::env::temp_dir().join(format!("sluice-sums-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        write_sums_csv(&a, &BTreeMap::from([(1, 10), (2, 20)])).unwrap();
        write_sums_csv(&b, &BTreeMap::from([(3, 30)])).unwrap();
        let mut all = BTreeMap::new();
        read_sums_part(&a, &mut all).unwrap();
        read_sums_part(&b, &mut all).unwrap();
        assert_eq!(all.len(), 3);
        let e = read_sums_part(&a, &mut all).unwrap_err();
        assert!(e.contains("key 1 was summed by two processes"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
