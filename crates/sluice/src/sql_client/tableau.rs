//! Flink's SQL client's tableau mode: results as a boxed table. A query's table has the `op`
//! column (`+I`, `-U`, `+U`, `-D`) and column widths inferred from the types, so rows print as
//! they arrive; other results (`SHOW TABLES`, `DESCRIBE`…) are sized to their content.

use sluice_rest_api::{ColumnInfo, FieldValue, RowDataInfo};
use sluice_sql::RowKind;

/// The widest a column is drawn; longer values end in `...` (Flink's client does the same).
pub const MAX_COLUMN_WIDTH: usize = 30;

/// A value as the client shows it (`<NULL>` for SQL NULL).
pub fn show(v: &FieldValue) -> String {
    match v {
        FieldValue::Null => "<NULL>".into(),
        FieldValue::Bool(b) => (if *b { "TRUE" } else { "FALSE" }).into(),
        FieldValue::Int(i) => i.to_string(),
        FieldValue::Number(n) => n.to_string(),
        FieldValue::Text(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// The short form of a row kind's name (`INSERT` → `+I`).
pub fn op(kind: &str) -> &'static str {
    [
        RowKind::Insert,
        RowKind::UpdateBefore,
        RowKind::UpdateAfter,
        RowKind::Delete,
    ]
    .into_iter()
    .find(|k| k.name() == kind)
    .map_or("??", RowKind::short_string)
}

/// The width a column of this type takes (its name's length at least).
pub fn type_width(c: &ColumnInfo) -> usize {
    let t = &c.logical_type;
    let by_type = match t.type_root.as_str() {
        "BOOLEAN" => 6,
        "TINYINT" => 4,
        "SMALLINT" => 6,
        "INTEGER" => 11,
        "BIGINT" => 20,
        "FLOAT" | "DOUBLE" | "DECIMAL" => 20,
        "DATE" => 10,
        "TIME_WITHOUT_TIME_ZONE" => 12,
        "TIMESTAMP_WITHOUT_TIME_ZONE" | "TIMESTAMP_WITH_LOCAL_TIME_ZONE" => 29,
        "CHAR" | "VARCHAR" | "BINARY" | "VARBINARY" => {
            t.length.map_or(MAX_COLUMN_WIDTH, |l| l as usize)
        }
        _ => MAX_COLUMN_WIDTH,
    };
    by_type.max(c.name.len()).clamp(6, MAX_COLUMN_WIDTH)
}

/// A table's lines: its border, header, rows, in the widths given.
pub struct Table {
    widths: Vec<usize>,
}

fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return format!("{s:>width$}");
    }
    let cut: String = s.chars().take(width.saturating_sub(3)).collect();
    format!("{cut}...")
}

impl Table {
    /// A table of these column widths.
    pub fn new(widths: Vec<usize>) -> Table {
        Table { widths }
    }

    /// `+----+-----+`.
    pub fn border(&self) -> String {
        let mut s = String::from("+");
        for w in &self.widths {
            s.push_str(&"-".repeat(w + 2));
            s.push('+');
        }
        s
    }

    /// `| a  |   b |` (right-aligned, as Flink's client aligns).
    pub fn line(&self, cells: &[String]) -> String {
        let mut s = String::from("|");
        for (c, w) in cells.iter().zip(&self.widths) {
            s.push(' ');
            s.push_str(&fit(c, *w));
            s.push_str(" |");
        }
        s
    }
}

/// A query's table: `op` first, then the columns at their type widths.
pub fn query_table(columns: &[ColumnInfo]) -> (Table, Vec<String>) {
    let mut widths = vec![2];
    widths.extend(columns.iter().map(type_width));
    let mut names = vec!["op".to_string()];
    names.extend(columns.iter().map(|c| c.name.clone()));
    (Table::new(widths), names)
}

/// A query row's cells (`op` first).
pub fn query_row(row: &RowDataInfo) -> Vec<String> {
    let mut cells = vec![op(&row.kind).to_string()];
    cells.extend(row.fields.iter().map(show));
    cells
}

/// A whole result sized to its content (no `op` column), or `Empty set`.
pub fn content_table(columns: &[ColumnInfo], rows: &[RowDataInfo]) -> Vec<String> {
    if rows.is_empty() {
        return vec!["Empty set".into()];
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.fields.iter().map(show).collect())
        .collect();
    let widths = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .filter_map(|r| r.get(i))
                .flat_map(|v| v.lines().map(|l| l.chars().count()))
                .chain([c.name.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let t = Table::new(widths);
    let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    let mut out = vec![t.border(), t.line(&names), t.border()];
    for r in &cells {
        // A multi-line value (an EXPLAIN) keeps its lines, one table line each.
        let height = r
            .iter()
            .map(|v| v.lines().count())
            .max()
            .unwrap_or(1)
            .max(1);
        for k in 0..height {
            let line: Vec<String> = r
                .iter()
                .map(|v| v.lines().nth(k).unwrap_or("").to_string())
                .collect();
            out.push(t.line(&line));
        }
    }
    out.push(t.border());
    out.push(format!(
        "{} row{} in set",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_fit_their_width() {
        let t = Table::new(vec![2, 6]);
        assert_eq!(t.border(), "+----+--------+");
        assert_eq!(
            t.line(&["+I".into(), "abcdefghij".into()]),
            "| +I | abc... |"
        );
        assert_eq!(t.line(&["+I".into(), "ab".into()]), "| +I |     ab |");
        assert_eq!(op("UPDATE_BEFORE"), "-U");
    }
}
