//! Output rows as canonical CSV lines (the text the DuckDB oracle prints for the same row).

use std::collections::BTreeMap;

/// A query's output row.
pub trait Row: sluice_datastream::Data {
    /// Appends the row as one CSV line, without the line end.
    fn write_csv(&self, out: &mut String);

    /// The row as one CSV line, without the line end.
    fn csv(&self) -> String {
        let mut s = String::new();
        self.write_csv(&mut s);
        s
    }
}

/// One CSV field.
pub trait Field {
    fn write_field(&self, out: &mut String);
}

impl Field for i64 {
    fn write_field(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(out, "{self}");
    }
}

impl Field for u64 {
    fn write_field(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(out, "{self}");
    }
}

/// Text, under Sluice's one CSV rule ([`sluice_csv`]; the oracle prints the same).
impl Field for String {
    fn write_field(&self, out: &mut String) {
        write_text(self, out)
    }
}

impl Field for sluice_nexmark::Text {
    fn write_field(&self, out: &mut String) {
        write_text(self, out)
    }
}

impl Field for &str {
    fn write_field(&self, out: &mut String) {
        write_text(self, out)
    }
}

/// NULL (`None`) as an empty unquoted field, as the oracle prints it.
impl<T: Field> Field for Option<T> {
    fn write_field(&self, out: &mut String) {
        match self {
            Some(v) => v.write_field(out),
            None => sluice_csv::push_null(out),
        }
    }
}

fn write_text(s: &str, out: &mut String) {
    sluice_csv::push_field(out, s)
}

/// An exact DECIMAL with three fractional digits, held as thousandths (`0.908 * price`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Milli(pub i64);

impl Field for Milli {
    fn write_field(&self, out: &mut String) {
        use std::fmt::Write;
        let sign = if self.0 < 0 { "-" } else { "" };
        let a = self.0.unsigned_abs();
        let _ = write!(out, "{sign}{}.{:03}", a / 1000, a % 1000);
    }
}

macro_rules! tuple_row {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: Field + Clone + Send + 'static),+> Row for ($($name,)+) {
            fn write_csv(&self, out: &mut String) {
                let mut first = true;
                $(
                    if !first { out.push(','); }
                    first = false;
                    self.$idx.write_field(out);
                )+
                let _ = first;
            }
        }
    };
}

tuple_row!(A 0, B 1);
tuple_row!(A 0, B 1, C 2);
tuple_row!(A 0, B 1, C 2, D 3);
tuple_row!(A 0, B 1, C 2, D 3, E 4);
tuple_row!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_row!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);

/// Replays a changelog of upserts: the last line per key (the first `key_columns` CSV columns)
/// wins. Returns the final table's lines, sorted.
pub fn final_rows(changelog: &[String], key_columns: usize) -> Vec<String> {
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    for line in changelog {
        let key: Vec<&str> = line
            .splitn(key_columns + 1, ',')
            .take(key_columns)
            .collect();
        last.insert(key.join(","), line.clone());
    }
    last.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_print_like_the_oracle() {
        assert_eq!((1i64, Milli(90_800)).csv(), "1,90.800");
        assert_eq!((Milli(-5), "a,b".to_string()).csv(), "-0.005,\"a,b\"");
        assert_eq!((2u64, "say \"hi\"").csv(), "2,\"say \"\"hi\"\"\"");
    }

    #[test]
    fn the_last_upsert_per_key_wins() {
        let log: Vec<String> = ["10,5", "11,7", "10,6"].map(String::from).to_vec();
        assert_eq!(final_rows(&log, 1), vec!["10,6", "11,7"]);
    }
}
