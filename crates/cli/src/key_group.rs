//! `sluice key-group`: Flink's key placement as CSV.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use sluice_datastream::partition::{
    default_max_parallelism, key_group_csv_header, key_group_line, KeyType,
};

use crate::args::{KeyGroupArgs, KeyTypeArg};

pub fn key_group(args: KeyGroupArgs) -> anyhow::Result<ExitCode> {
    let kt = match args.key_type {
        KeyTypeArg::I64 => KeyType::I64,
        KeyTypeArg::String => KeyType::String,
    };
    if args.parallelism == 0 {
        anyhow::bail!("-p/--parallelism must be at least 1");
    }
    let maxp = args
        .max_parallelism
        .unwrap_or_else(|| default_max_parallelism(args.parallelism));
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    writeln!(out, "{}", key_group_csv_header())?;
    let mut bad = 0usize;
    let mut one = |key: &str, where_: String, out: &mut dyn Write| -> anyhow::Result<()> {
        match key_group_line(kt, key, args.parallelism, maxp) {
            Ok(line) => writeln!(out, "{line}")?,
            Err(e) => {
                // A bad key is reported and skipped; the other keys are still placed.
                eprintln!("error: {where_}: {e}");
                bad += 1;
            }
        }
        Ok(())
    };
    if args.keys.is_empty() {
        for (n, line) in std::io::stdin().lock().lines().enumerate() {
            let line = line?;
            let key = line.strip_suffix('\r').unwrap_or(&line);
            one(key, format!("stdin line {}", n + 1), &mut out)?;
        }
    } else {
        for (n, k) in args.keys.iter().enumerate() {
            one(k, format!("argument {}", n + 1), &mut out)?;
        }
    }
    out.flush()?;
    Ok(if bad > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
