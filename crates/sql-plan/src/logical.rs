//! The relational plan the binder builds: a tree of [`Rel`] nodes, each with its output
//! columns. It says *what* the query computes (Flink's logical plan after its rewrites to
//! stream-specific nodes); [`super::physical`] says how it runs.

use crate::expr::Expr;
use crate::types::DataType;

use super::agg_call::AggCall;
use super::schema::{Field, WindowPropertyKind};
use super::window::WindowSpec;

/// Where a scanned column comes from.
#[derive(Clone, Debug)]
pub enum ScanColumnSource {
    /// Read from the connector: its index among the scan's physical fields.
    Physical(usize),
    /// A connector's metadata (`METADATA [FROM 'key']`), also read by the connector.
    Metadata {
        /// Its index among the scan's physical fields.
        index: usize,
        /// The metadata key.
        key: String,
    },
    /// `name AS expr`, computed over the physical fields (column indexes are physical indexes).
    Computed(Expr),
}

/// The event-time watermark of a scanned table (`WATERMARK FOR col AS expr`).
#[derive(Clone, Debug)]
pub struct WatermarkSpec {
    /// The rowtime column: its index in the table's columns.
    pub rowtime: usize,
    /// Its name.
    pub rowtime_name: String,
    /// The watermark expression, over the table's columns.
    pub expr: Expr,
}

/// A catalog table read as a stream.
#[derive(Clone, Debug)]
pub struct TableScan {
    /// `[default_catalog, default_database, name]`.
    pub path: Vec<String>,
    /// The fields the connector produces (physical and metadata columns, in declaration order).
    pub physical: Vec<Field>,
    /// Every column of the table in declaration order, with where it comes from.
    pub columns: Vec<(Field, ScanColumnSource)>,
    /// The watermark, if the table declares one.
    pub watermark: Option<WatermarkSpec>,
    /// The `WITH` options (the runtime picks the connector by them).
    pub options: Vec<(String, String)>,
}

impl TableScan {
    /// `default_catalog.default_database.name`.
    pub fn full_name(&self) -> String {
        self.path.join(".")
    }
}

/// A projection with an optional filter (Flink's `Calc`): `condition` is read over the input,
/// then each projection over the same input row.
#[derive(Clone, Debug)]
pub struct Calc {
    /// The output columns: expression and name.
    pub projection: Vec<(Expr, String)>,
    /// Rows that fail it (false or NULL) are dropped.
    pub condition: Option<Expr>,
}

/// A window aggregate (`GROUP BY window_start, window_end, keys` over a window table function,
/// or the legacy `GROUP BY TUMBLE(…)`): output = keys, aggregates, then the window properties.
#[derive(Clone, Debug)]
pub struct WindowAggregate {
    /// The grouping key columns (indexes into the input).
    pub group: Vec<usize>,
    /// The aggregate calls.
    pub aggs: Vec<AggCall>,
    /// The window.
    pub window: WindowSpec,
    /// The window properties output after the aggregates, in order.
    pub properties: Vec<WindowPropertyKind>,
}

/// An unbounded aggregate (`GROUP BY` without a window, `SELECT DISTINCT`, or an aggregate over
/// the whole stream): output = keys, then aggregates. It updates the row of a key each time
/// the key's aggregates change (Flink's `GroupAggregate`), so its output is a changelog.
#[derive(Clone, Debug)]
pub struct GroupAggregate {
    /// The grouping key columns (indexes into the input), in output order.
    pub group: Vec<usize>,
    /// The aggregate calls.
    pub aggs: Vec<AggCall>,
    /// The `STATE_TTL` hint's time to live, in ms (else `table.exec.state.ttl` applies).
    pub state_ttl_ms: Option<i64>,
}

/// One `ORDER BY` key of a rank: the input column, the direction, where NULLs go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortKey {
    /// The input column.
    pub column: usize,
    /// `DESC`.
    pub descending: bool,
    /// NULLs before the other values (Flink's default: first when ascending, last when
    /// descending: NULL is the smallest value).
    pub nulls_first: bool,
}

/// `ROW_NUMBER() OVER (PARTITION BY … ORDER BY …)` with a filter on the number (Flink's `Rank`:
/// a Top-N per partition, kept up to date): output = the input columns, then the number when
/// `output_rank`.
#[derive(Clone, Debug)]
pub struct Rank {
    /// The partition columns.
    pub partition: Vec<usize>,
    /// The order.
    pub order: Vec<SortKey>,
    /// The first rank kept (from 1).
    pub start: i64,
    /// The last rank kept; `None` until a filter on the number bounds it (the planner refuses
    /// an unbounded rank).
    pub end: Option<i64>,
    /// Whether the number is an output column (the last one).
    pub output_rank: bool,
}

/// Which join algorithm an inner join of append-only inputs uses.
#[derive(Clone, Debug)]
pub enum JoinKind {
    /// A regular join: both sides kept in state.
    Regular,
    /// Both inputs are windowed by the same window and joined on window start and end
    /// (Flink's `WindowJoin`): state is dropped when the window closes.
    Window {
        /// The left input's window.
        left: WindowSpec,
        /// The right input's window.
        right: WindowSpec,
        /// The window start and end columns of the left input (indexes).
        left_bounds: (usize, usize),
        /// The window start and end columns of the right input (indexes).
        right_bounds: (usize, usize),
    },
    /// An event-time interval join: `left.rt BETWEEN right.rt - a AND right.rt + b`.
    Interval {
        /// The left rowtime column (index into the left input).
        left_time: usize,
        /// The right rowtime column (index into the right input).
        right_time: usize,
        /// `left.rt >= right.rt + lower_ms`.
        lower_ms: i64,
        /// `left.rt <= right.rt + upper_ms`.
        upper_ms: i64,
    },
    /// `JOIN dim FOR SYSTEM_TIME AS OF left.proctime`: each left row looks its keys up in the
    /// right table (the right input is that table's scan).
    Lookup {
        /// `(right column, left column)` key pairs.
        keys: Vec<(usize, usize)>,
        /// `LEFT JOIN`: a left row no right row matches is emitted once, padded with NULLs
        /// (append-only, as Flink's lookup join: nothing is retracted later).
        left_outer: bool,
    },
}

/// An inner join; the output is the left columns then the right columns.
#[derive(Clone, Debug)]
pub struct Join {
    /// The algorithm.
    pub kind: JoinKind,
    /// Equality keys: `(left column, right column)`.
    pub equi: Vec<(usize, usize)>,
    /// What else must hold, over the joined row (left columns then right columns).
    pub condition: Option<Expr>,
}

/// Writing into a catalog table.
#[derive(Clone, Debug, PartialEq)]
pub struct Sink {
    /// `[default_catalog, default_database, name]`.
    pub path: Vec<String>,
    /// The table's written columns (name, type).
    pub columns: Vec<(String, DataType)>,
    /// The `WITH` options.
    pub options: Vec<(String, String)>,
    /// The table's `PRIMARY KEY` columns (empty without one).
    pub primary_key: Vec<String>,
}

impl Sink {
    /// `default_catalog.default_database.name`.
    pub fn full_name(&self) -> String {
        self.path.join(".")
    }
}

/// What a relational node does.
#[derive(Clone, Debug)]
pub enum RelNode {
    /// Reads a table (no input).
    TableScan(TableScan),
    /// Projection and filter (one input).
    Calc(Calc),
    /// `TABLE(TUMBLE(TABLE t, DESCRIPTOR(col), …))`: adds window_start, window_end, window_time.
    WindowTableFunction(WindowSpec),
    /// Aggregation per window of a window table function (or of a windowed input).
    WindowAggregate(WindowAggregate),
    /// The legacy group window aggregation (`GROUP BY TUMBLE(ts, INTERVAL …)`); its properties
    /// are `w$start`, `w$end`, `w$rowtime` (event time only, as in Flink), `w$proctime`.
    GroupWindowAggregate(WindowAggregate),
    /// An unbounded aggregate (one input): a changelog.
    GroupAggregate(GroupAggregate),
    /// A Top-N per partition (one input): a changelog.
    Rank(Rank),
    /// An inner join (two inputs).
    Join(Join),
    /// `UNION ALL` (two or more inputs of the same column types).
    Union,
    /// Writes its input into a table (one input, no output columns).
    Sink(Sink),
}

/// A relational plan node: what it does, its inputs and its output columns.
#[derive(Clone, Debug)]
pub struct Rel {
    /// What the node does.
    pub node: RelNode,
    /// Its inputs.
    pub inputs: Vec<Rel>,
    /// Its output columns.
    pub schema: Vec<Field>,
}

impl Rel {
    /// The output column names.
    pub fn names(&self) -> Vec<String> {
        self.schema.iter().map(|f| f.name.clone()).collect()
    }

    /// Whether the node emits only inserts (no updating node under it).
    pub fn is_append_only(&self) -> bool {
        !matches!(self.node, RelNode::GroupAggregate(_) | RelNode::Rank(_))
            && self.inputs.iter().all(Rel::is_append_only)
    }
}
