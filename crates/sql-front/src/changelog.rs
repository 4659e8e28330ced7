//! Flink's changelogs: what a row does to the table it belongs to ([`RowKind`]), a row with its
//! kind ([`Change`]), and which kinds a stream may carry ([`ChangelogMode`]).
//!
//! An append-only stream carries plain [`Row`]s (every one an insertion). A stream that updates
//! rows it emitted earlier — an unbounded `GROUP BY`, a Top-N, a join of such streams — carries
//! [`Change`]s instead; the two are different Rust types, so an operator or sink that only takes
//! insertions cannot be handed a changelog by mistake.

use serde::{Deserialize, Serialize};

use crate::value::Row;

/// Flink's `RowKind`: what one row of a changelog does. Its short strings (`+I`, `-U`, `+U`,
/// `-D`) are what Flink's `print` connector and SQL client show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RowKind {
    /// `+I`: a new row.
    Insert,
    /// `-U`: the previous content of an updated row (a retraction; followed by its `+U`).
    UpdateBefore,
    /// `+U`: the new content of an updated row.
    UpdateAfter,
    /// `-D`: a row removed.
    Delete,
}

impl RowKind {
    /// All four, in Flink's byte-value order.
    pub const ALL: [RowKind; 4] = [
        RowKind::Insert,
        RowKind::UpdateBefore,
        RowKind::UpdateAfter,
        RowKind::Delete,
    ];

    /// Flink's short string: `+I`, `-U`, `+U` or `-D`.
    pub fn short_string(self) -> &'static str {
        match self {
            RowKind::Insert => "+I",
            RowKind::UpdateBefore => "-U",
            RowKind::UpdateAfter => "+U",
            RowKind::Delete => "-D",
        }
    }

    /// Flink's enum constant name (`INSERT`, `UPDATE_BEFORE`, …), as the SQL Gateway's result
    /// rows name their kind.
    pub fn name(self) -> &'static str {
        match self {
            RowKind::Insert => "INSERT",
            RowKind::UpdateBefore => "UPDATE_BEFORE",
            RowKind::UpdateAfter => "UPDATE_AFTER",
            RowKind::Delete => "DELETE",
        }
    }

    /// Flink's byte value (0 to 3, the order of [`RowKind::ALL`]).
    pub fn to_byte(self) -> u8 {
        self as u8
    }

    /// Whether the row is added to the table (`+I`, `+U`) rather than taken out of it (`-U`,
    /// `-D`): Flink's accumulate versus retract message.
    pub fn is_addition(self) -> bool {
        matches!(self, RowKind::Insert | RowKind::UpdateAfter)
    }

    /// The kind by its short string or name, as written in a `changelog-json` or a test.
    pub fn parse(s: &str) -> Option<RowKind> {
        RowKind::ALL
            .into_iter()
            .find(|k| k.short_string() == s || k.name() == s)
    }
}

impl std::fmt::Display for RowKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.short_string())
    }
}

/// One row of a changelog: the row and what it does.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Change {
    /// What the row does.
    pub kind: RowKind,
    /// Its values, in the plan's column order.
    pub row: Row,
}

impl Change {
    /// An insertion of `row`.
    pub fn insert(row: Row) -> Change {
        Change {
            kind: RowKind::Insert,
            row,
        }
    }

    /// `row` with kind `kind`.
    pub fn new(kind: RowKind, row: Row) -> Change {
        Change { kind, row }
    }
}

/// Which row kinds a stream carries: Flink's `ChangelogMode`, printed as `EXPLAIN
/// CHANGELOG_MODE` prints it (`[I]`, `[I,UB,UA]`, `[I,UA,D]`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ChangelogMode {
    /// `+U` rows.
    pub update_after: bool,
    /// `-U` rows (retractions of the previous content).
    pub update_before: bool,
    /// `-D` rows.
    pub delete: bool,
}

impl ChangelogMode {
    /// Insertions only.
    pub const INSERT_ONLY: ChangelogMode = ChangelogMode {
        update_after: false,
        update_before: false,
        delete: false,
    };
    /// Every kind: updates as retraction and new row (`[I,UB,UA,D]`).
    pub const RETRACT: ChangelogMode = ChangelogMode {
        update_after: true,
        update_before: true,
        delete: true,
    };
    /// Updates by key without retractions (`[I,UA,D]`).
    pub const UPSERT: ChangelogMode = ChangelogMode {
        update_after: true,
        update_before: false,
        delete: true,
    };

    /// Whether only insertions flow.
    pub fn is_insert_only(self) -> bool {
        !self.update_after && !self.update_before && !self.delete
    }

    /// Whether the mode carries rows of `kind`.
    pub fn contains(self, kind: RowKind) -> bool {
        match kind {
            RowKind::Insert => true,
            RowKind::UpdateBefore => self.update_before,
            RowKind::UpdateAfter => self.update_after,
            RowKind::Delete => self.delete,
        }
    }
}

impl std::fmt::Display for ChangelogMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut kinds = vec!["I"];
        if self.update_before {
            kinds.push("UB");
        }
        if self.update_after {
            kinds.push("UA");
        }
        if self.delete {
            kinds.push("D");
        }
        write!(f, "[{}]", kinds.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_print_and_parse_as_flink_names_them() {
        let shorts: Vec<_> = RowKind::ALL.iter().map(|k| k.short_string()).collect();
        assert_eq!(shorts, ["+I", "-U", "+U", "-D"]);
        for k in RowKind::ALL {
            assert_eq!(RowKind::parse(k.short_string()), Some(k));
            assert_eq!(RowKind::parse(k.name()), Some(k));
        }
        assert_eq!(RowKind::UpdateAfter.to_byte(), 2);
        assert_eq!(RowKind::parse("+X"), None);
    }

    #[test]
    fn modes_print_as_explain_changelog_mode() {
        assert_eq!(ChangelogMode::INSERT_ONLY.to_string(), "[I]");
        assert_eq!(ChangelogMode::RETRACT.to_string(), "[I,UB,UA,D]");
        assert_eq!(ChangelogMode::UPSERT.to_string(), "[I,UA,D]");
    }
}
