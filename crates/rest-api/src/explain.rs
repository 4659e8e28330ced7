//! Sluice's `/jobs/:jobid/explain-analyze` (Flink has no such route): a SQL job's optimized
//! physical plan — the `== Optimized Physical Plan ==` section of `EXPLAIN` — with each plan
//! node's live figures, what Flink's static `EXPLAIN PLAN_ADVICE` can only guess. The text
//! rendering ([`ExplainAnalyze::render`]) is shared by the server (its `text` field), the
//! client and the CLI.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `GET /jobs/:jobid/explain-analyze`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ExplainAnalyze {
    /// The job id.
    pub jid: String,
    /// The job's name.
    pub name: String,
    /// When the rates were sampled, ms since the epoch (absent before the first sample).
    #[serde(
        rename = "sample-time",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub sample_time: Option<i64>,
    /// The plan's nodes in pre order (each node before its inputs, tree after tree).
    #[serde(default)]
    pub nodes: Vec<ExplainAnalyzeNode>,
    /// The plan as `EXPLAIN` prints it, each line followed by its figures.
    #[serde(default)]
    pub text: String,
}

/// One plan node of [`ExplainAnalyze`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ExplainAnalyzeNode {
    /// Its position in pre order.
    pub id: u64,
    /// Its depth in its tree (a root is 0).
    pub depth: u64,
    /// Its line as `EXPLAIN` draws it (tree prefix included).
    pub line: String,
    /// Its description alone.
    pub description: String,
    /// The uid of the operator it became.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub uid: Option<String>,
    /// The operator's name in the job graph (`/plan`'s node description).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub operator: Option<String>,
    /// The id of the job vertex that runs the operator.
    #[serde(rename = "vertex-id", default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub vertex_id: Option<String>,
    /// That vertex's name (its chain).
    #[serde(
        rename = "vertex-name",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub vertex_name: Option<String>,
    /// That vertex's parallelism.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub parallelism: Option<u64>,
    /// What to know when reading its figures (no operator of its own, fused in its source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub note: Option<String>,
    /// Its figures (absent for a node that runs no operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub figures: Option<OperatorFigures>,
}

/// The measured figures of one plan node's operator.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct OperatorFigures {
    /// Flink's `busyTimeMsPerSecond` of the vertex running it, mean over its subtasks.
    #[serde(
        rename = "busy-ms-per-second",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub busy: Option<f64>,
    /// Flink's `backPressuredTimeMsPerSecond` of the vertex, mean over its subtasks.
    #[serde(
        rename = "backpressured-ms-per-second",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub backpressured: Option<f64>,
    /// Flink's `idleTimeMsPerSecond` of the vertex, mean over its subtasks.
    #[serde(
        rename = "idle-ms-per-second",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub idle: Option<f64>,
    /// Time in this operator itself (chained successors excluded), ms per second, mean over
    /// the subtasks (sampled; absent without operator timing).
    #[serde(
        rename = "operator-busy-ms-per-second",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub operator_busy: Option<f64>,
    /// Records it received, summed over the subtasks.
    #[serde(rename = "records-in")]
    pub records_in: u64,
    /// `operator` when counted at the operator, `vertex` when it is the vertex's count
    /// (a chain's head, a source: 0).
    #[serde(rename = "records-in-scope")]
    pub records_in_scope: String,
    /// Records it emitted, summed over the subtasks.
    #[serde(rename = "records-out")]
    pub records_out: u64,
    /// `operator` when its chained successor counted them, `vertex` when it is the vertex's
    /// `numRecordsOut` (the chain's last operator).
    #[serde(rename = "records-out-scope")]
    pub records_out_scope: String,
    /// The vertex's `numRecordsIn` (as `/jobs/:jobid/vertices/:vertexid` reports it).
    #[serde(rename = "vertex-records-in")]
    pub vertex_records_in: u64,
    /// The vertex's `numRecordsOut`.
    #[serde(rename = "vertex-records-out")]
    pub vertex_records_out: u64,
    /// Bytes of the vertex's state in the latest completed checkpoint (absent without one).
    #[serde(
        rename = "state-size",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub state_size: Option<u64>,
    /// The checkpoint [`state_size`](Self::state_size) is from.
    #[serde(
        rename = "state-checkpoint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub state_checkpoint: Option<u64>,
    /// The hottest keys of its keyed input (the vertex's hot-key records), hottest first.
    #[serde(rename = "hot-keys", default)]
    pub hot_keys: Vec<PlanHotKey>,
}

/// One hot key of [`OperatorFigures`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct PlanHotKey {
    /// The key as the operator renders it.
    pub key: String,
    /// Its share of the vertex's records, 0..1.
    #[serde(rename = "share-of-vertex")]
    pub share_of_vertex: f64,
}

/// `1234` → `1.2k`, `40000` → `40k`, `1234567` → `1.2M`.
pub fn human_count(n: u64) -> String {
    let x = n as f64;
    let (v, unit) = match n {
        0..=999 => return n.to_string(),
        1_000..=999_999 => (x / 1e3, "k"),
        1_000_000..=999_999_999 => (x / 1e6, "M"),
        _ => (x / 1e9, "G"),
    };
    if v < 9.95 {
        format!("{v:.1}{unit}")
    } else {
        format!("{v:.0}{unit}")
    }
}

/// Bytes in binary units: `512 B`, `12 KiB`, `1.5 MiB`.
pub fn human_bytes(n: u64) -> String {
    let mut v = n as f64;
    let mut unit = "B";
    for u in ["KiB", "MiB", "GiB", "TiB"] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    if unit == "B" {
        format!("{n} B")
    } else if v < 9.95 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.0} {unit}")
    }
}

impl OperatorFigures {
    /// `busy 820 ms/s, backpressured 0, idle 180; in 1.2M, out 40k; state 12 MiB; hot keys:
    /// 42 (31%)`.
    pub fn summary(&self) -> String {
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        let mut s = format!(
            "busy {} ms/s, backpressured {}, idle {}",
            ms(self.busy),
            ms(self.backpressured),
            ms(self.idle)
        );
        if let Some(op) = self.operator_busy {
            s.push_str(&format!(" (operator {op:.0})"));
        }
        let scope = |sc: &str| if sc == "vertex" { " (vertex)" } else { "" };
        s.push_str(&format!(
            "; in {}{}, out {}{}",
            human_count(self.records_in),
            scope(&self.records_in_scope),
            human_count(self.records_out),
            scope(&self.records_out_scope)
        ));
        if let Some(b) = self.state_size {
            s.push_str(&format!("; state {}", human_bytes(b)));
        }
        if !self.hot_keys.is_empty() {
            let keys: Vec<String> = self
                .hot_keys
                .iter()
                .map(|k| format!("{} ({:.0}%)", k.key, 100.0 * k.share_of_vertex))
                .collect();
            s.push_str(&format!("; hot keys: {}", keys.join(", ")));
        }
        s
    }
}

impl ExplainAnalyze {
    /// The plan as `EXPLAIN` prints its physical section, each line followed by its figures in
    /// brackets (or by what it is, for a node that runs no operator).
    pub fn render(&self) -> String {
        let mut out = String::from("== Optimized Physical Plan (EXPLAIN ANALYZE) ==\n");
        for n in &self.nodes {
            if n.depth == 0 && n.id > 0 {
                out.push('\n');
            }
            out.push_str(&n.line);
            match (&n.figures, &n.note) {
                (Some(f), note) => {
                    out.push_str(&format!(" [{}]", f.summary()));
                    if let Some(note) = note {
                        out.push_str(&format!(" ({note})"));
                    }
                }
                (None, Some(note)) => out.push_str(&format!(" [{note}]")),
                (None, None) => {}
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_bytes_read_as_people_write_them() {
        assert_eq!(human_count(0), "0");
        assert_eq!(human_count(999), "999");
        assert_eq!(human_count(1_234), "1.2k");
        assert_eq!(human_count(40_000), "40k");
        assert_eq!(human_count(1_234_567), "1.2M");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(12 * 1024 * 1024), "12 MiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }

    #[test]
    fn each_line_carries_its_figures() {
        let f = OperatorFigures {
            busy: Some(820.4),
            backpressured: Some(0.0),
            idle: Some(179.6),
            records_in: 1_200_000,
            records_in_scope: "operator".into(),
            records_out: 40_000,
            records_out_scope: "vertex".into(),
            state_size: Some(12 * 1024 * 1024),
            hot_keys: vec![PlanHotKey {
                key: "42".into(),
                share_of_vertex: 0.31,
            }],
            ..Default::default()
        };
        let e = ExplainAnalyze {
            nodes: vec![
                ExplainAnalyzeNode {
                    line: "GroupAggregate(x)".into(),
                    figures: Some(f),
                    ..Default::default()
                },
                ExplainAnalyzeNode {
                    id: 1,
                    depth: 1,
                    line: "+- Exchange(distribution=[hash[a]])".into(),
                    note: Some("an exchange".into()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        assert_eq!(
            e.render(),
            "== Optimized Physical Plan (EXPLAIN ANALYZE) ==\n\
             GroupAggregate(x) [busy 820 ms/s, backpressured 0, idle 180; in 1.2M, out 40k (vertex); state 12 MiB; hot keys: 42 (31%)]\n\
             +- Exchange(distribution=[hash[a]]) [an exchange]\n"
        );
    }
}
