//! `'connector' = 'datagen'`: Flink's data generator, with its option names —
//! `rows-per-second` (10000, over all subtasks), `number-of-rows` (unbounded when absent), and per
//! field `fields.<f>.kind` (`random` | `sequence`), `.min`, `.max`, `.max-past`, `.length`,
//! `.var-len`, `.start`, `.end`, `.null-rate`.
//!
//! Unlike Flink's, the rows are deterministic: value `f` of row `i` is a pure function of
//! (`sluice.seed`, default 0; `f`; `i`), whatever the parallelism, and random times count back
//! from `sluice.base-time` (ms since the epoch, default 2015-07-15T00:00:00Z), not from the wall
//! clock. A sequence field bounds the table at its length, as in Flink. Random strings are hex
//! digits, as Flink's. ROW, ARRAY and MAP fields are refused for now.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_datastream::{DataStream, OperatorError, StreamEnv};
use sluice_nexmark::DEFAULT_BASE_TIME_MS;
use sluice_runtime::sources::{split_range, SourceContext, SourceFunction, SOURCE_BATCH};
use sluice_sql::{DataType, Decimal, LogicalType, Result, Row, SqlError, Timestamp, Value};
use sluice_types::Collector;

use super::seeded::{draw, unit};
use crate::options::Options;
use crate::schema::PhysicalSchema;

const KNOWN: &[&str] = &[
    "connector",
    "rows-per-second",
    "number-of-rows",
    "scan.parallelism",
    "fields.#.kind",
    "fields.#.min",
    "fields.#.max",
    "fields.#.max-past",
    "fields.#.length",
    "fields.#.var-len",
    "fields.#.start",
    "fields.#.end",
    "fields.#.null-rate",
    "sluice.seed",
    "sluice.base-time",
];

/// How one field is generated.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    /// Uniform in `[min, max]` (numbers), of `length` (strings), up to `max_past` ms back (times).
    Random {
        min: Option<f64>,
        max: Option<f64>,
        length: u64,
        var_len: bool,
        max_past_ms: i64,
    },
    /// `start, start + 1, …, end`.
    Sequence { start: i64, end: i64 },
}

#[derive(Clone, Debug, PartialEq)]
struct Field {
    ty: DataType,
    kind: Kind,
    null_rate: f64,
}

/// A `datagen` table's settings.
#[derive(Clone, Debug)]
pub struct DatagenSpec {
    fields: Arc<[Field]>,
    rows: u64,
    rows_per_second: u64,
    seed: u64,
    base_ms: i64,
}

fn parse_duration_ms(text: &str) -> Option<i64> {
    let t = text.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: i64 = digits.parse().ok()?;
    let factor = match unit.trim() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1,
        "s" | "sec" | "secs" | "second" | "seconds" => 1000,
        "min" | "minute" | "minutes" => 60_000,
        "h" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(factor)
}

impl DatagenSpec {
    /// Reads and checks the options against the table's columns.
    pub fn new(options: &Options, schema: &PhysicalSchema) -> Result<DatagenSpec> {
        options.check_known("datagen", KNOWN)?;
        for named in options.segments_under("fields") {
            if !schema.names.contains(&named) {
                return Err(SqlError::UnknownName {
                    pos: None,
                    kind: "Column",
                    name: format!(
                        "{named} (in option 'fields.{named}.…' of table '{}')",
                        schema.table
                    ),
                    nearest_names: sluice_sql::catalog::nearest(
                        &named,
                        schema.names.iter().map(String::as_str),
                    ),
                });
            }
        }
        let mut bound: Option<u64> = options.parse("number-of-rows", "a whole number")?;
        let mut fields = Vec::with_capacity(schema.len());
        for (name, ty) in schema.names.iter().zip(&schema.types) {
            let key = |k: &str| format!("fields.{name}.{k}");
            let kind = options
                .one_of(&key("kind"), &["random", "sequence"])?
                .unwrap_or("random");
            if matches!(
                ty.logical,
                LogicalType::Row(_) | LogicalType::Array(_) | LogicalType::Map(..)
            ) {
                return Err(SqlError::unsupported(
                    None,
                    format!("datagen field '{name}' of type {ty}: only scalar types are generated"),
                ));
            }
            let kind = if kind == "sequence" {
                let start: i64 = options.parse(&key("start"), "an integer")?.ok_or_else(|| {
                    options.bad(&key("start"), "a sequence needs 'start' and 'end'")
                })?;
                let end: i64 = options.parse(&key("end"), "an integer")?.ok_or_else(|| {
                    options.bad(&key("end"), "a sequence needs 'start' and 'end'")
                })?;
                if end < start {
                    return Err(options.bad(
                        &key("end"),
                        format!("expected at least 'start' ({start}), found {end}"),
                    ));
                }
                if !(ty.is_integer() || ty.is_string() || ty.is_numeric()) {
                    return Err(SqlError::unsupported(
                        None,
                        format!("datagen sequence for field '{name}' of type {ty}"),
                    ));
                }
                let len = (end - start) as u64 + 1;
                bound = Some(bound.map_or(len, |b| b.min(len)));
                Kind::Sequence { start, end }
            } else {
                let max_past_ms = match options.get(&key("max-past")) {
                    None => 0,
                    Some(v) => parse_duration_ms(v).ok_or_else(|| {
                        options.bad(
                            &key("max-past"),
                            format!("expected a duration like '10 s', found '{v}'"),
                        )
                    })?,
                };
                let declared = match ty.logical {
                    LogicalType::Char { length }
                    | LogicalType::Varchar { length }
                    | LogicalType::Binary { length }
                    | LogicalType::Varbinary { length } => u64::from(length),
                    _ => u64::MAX,
                };
                Kind::Random {
                    min: options.parse(&key("min"), "a number")?,
                    max: options.parse(&key("max"), "a number")?,
                    length: options
                        .parse(&key("length"), "a whole number")?
                        .unwrap_or(100)
                        .min(declared),
                    var_len: options.bool(&key("var-len"))?.unwrap_or(false),
                    max_past_ms,
                }
            };
            let null_rate: f64 = options
                .parse(&key("null-rate"), "a number between 0 and 1")?
                .unwrap_or(0.0);
            if !(0.0..=1.0).contains(&null_rate) {
                return Err(options.bad(
                    &key("null-rate"),
                    format!("expected a number between 0 and 1, found {null_rate}"),
                ));
            }
            fields.push(Field {
                ty: ty.clone(),
                kind,
                null_rate,
            });
        }
        let rows_per_second: u64 = options
            .parse("rows-per-second", "a whole number")?
            .unwrap_or(10_000);
        if rows_per_second == 0 {
            return Err(options.bad("rows-per-second", "expected at least 1"));
        }
        Ok(DatagenSpec {
            fields: fields.into(),
            rows: bound.unwrap_or(u64::MAX),
            rows_per_second,
            seed: options.parse("sluice.seed", "a whole number")?.unwrap_or(0),
            base_ms: options
                .parse("sluice.base-time", "milliseconds since the epoch")?
                .unwrap_or(DEFAULT_BASE_TIME_MS),
        })
    }

    /// Row `i` of the table.
    pub fn row(&self, i: u64) -> Row {
        Row(self
            .fields
            .iter()
            .enumerate()
            .map(|(f, field)| self.value(f as u64, field, i))
            .collect())
    }

    fn value(&self, f: u64, field: &Field, i: u64) -> Value {
        let r = |k: u64| draw(self.seed, f, i, k);
        if field.null_rate > 0.0 && unit(r(0)) < field.null_rate {
            return Value::Null;
        }
        let ty = &field.ty.logical;
        match &field.kind {
            Kind::Sequence { start, .. } => {
                let n = start.saturating_add(i as i64);
                match ty {
                    LogicalType::Varchar { .. } | LogicalType::Char { .. } => {
                        Value::str(&n.to_string())
                    }
                    LogicalType::Float => Value::Float(n as f32),
                    LogicalType::Double => Value::Double(n as f64),
                    LogicalType::Decimal { scale, .. } => Decimal {
                        unscaled: i128::from(n),
                        scale: 0,
                    }
                    .rescale(*scale)
                    .map_or(Value::Null, Value::Decimal),
                    _ => Value::Int(n),
                }
            }
            Kind::Random {
                min,
                max,
                length,
                var_len,
                max_past_ms,
            } => random_value(
                ty,
                *min,
                *max,
                *length,
                *var_len,
                *max_past_ms,
                self.base_ms,
                &r,
            ),
        }
    }

    /// The rows: subtask `k` of `p` generates the contiguous share `split_range(rows, k, p)`.
    pub fn stream(&self, env: &StreamEnv) -> DataStream<Row> {
        let spec = self.clone();
        env.add_source("datagen", move |k, p| {
            let range = split_range(spec.rows, k, p);
            Ok(DatagenRows {
                spec: spec.clone(),
                next: range.start,
                end: range.end,
                rate: (spec.rows_per_second / p as u64).max(1),
            })
        })
    }
}

fn int_range(ty: &LogicalType) -> (f64, f64) {
    match ty {
        LogicalType::TinyInt => (i8::MIN as f64, i8::MAX as f64),
        LogicalType::SmallInt => (i16::MIN as f64, i16::MAX as f64),
        LogicalType::Int => (i32::MIN as f64, i32::MAX as f64),
        _ => (i64::MIN as f64, i64::MAX as f64),
    }
}

#[allow(clippy::too_many_arguments)]
fn random_value(
    ty: &LogicalType,
    min: Option<f64>,
    max: Option<f64>,
    length: u64,
    var_len: bool,
    max_past_ms: i64,
    base_ms: i64,
    r: &dyn Fn(u64) -> u64,
) -> Value {
    use LogicalType as L;
    let between = |lo: f64, hi: f64| lo * (1.0 - unit(r(1))) + hi * unit(r(1));
    match ty {
        L::Boolean => Value::Bool(r(1) & 1 == 1),
        L::TinyInt | L::SmallInt | L::Int | L::BigInt => {
            let (lo, hi) = int_range(ty);
            let (lo, hi) = (min.unwrap_or(lo) as i128, max.unwrap_or(hi) as i128);
            let span = (hi - lo + 1).max(1) as u128;
            Value::Int((lo + (u128::from(r(1)) % span) as i128) as i64)
        }
        L::Float => Value::Float(between(
            min.unwrap_or(f32::MIN as f64),
            max.unwrap_or(f32::MAX as f64),
        ) as f32),
        L::Double => Value::Double(between(min.unwrap_or(f64::MIN), max.unwrap_or(f64::MAX))),
        L::Decimal { precision, scale } => {
            let limit = 10f64.powi(i32::from(*precision) - i32::from(*scale)) - 1.0;
            let x = between(min.unwrap_or(-limit), max.unwrap_or(limit));
            let unscaled = (x * 10f64.powi(i32::from(*scale))).round() as i128;
            Value::Decimal(Decimal {
                unscaled,
                scale: *scale,
            })
        }
        L::Char { .. } | L::Varchar { .. } => {
            let len = if var_len {
                1 + r(2) % length.max(1)
            } else {
                length
            };
            let s: String = (0..len)
                .map(|k| char::from_digit((r(3 + k) % 16) as u32, 16).unwrap_or('0'))
                .collect();
            Value::str(&s)
        }
        L::Binary { .. } | L::Varbinary { .. } => {
            let len = if var_len {
                1 + r(2) % length.max(1)
            } else {
                length
            };
            Value::Bytes((0..len).map(|k| r(3 + k) as u8).collect())
        }
        L::Timestamp { .. } | L::TimestampLtz { .. } | L::Date | L::Time { .. } => {
            let back = if max_past_ms > 0 {
                (r(1) % max_past_ms as u64) as i64
            } else {
                0
            };
            let ms = base_ms - back;
            match ty {
                L::Date => Value::Date(ms.div_euclid(86_400_000) as i32),
                L::Time { .. } => Value::Time(ms.rem_euclid(86_400_000) * 1_000_000),
                _ => Value::Timestamp(Timestamp::from_millis(ms)),
            }
        }
        _ => Value::Null,
    }
}

/// One subtask's share of the rows, paced at its share of `rows-per-second`. Its checkpoint
/// position is the next row index (a restore at the same parallelism resumes there).
struct DatagenRows {
    spec: DatagenSpec,
    next: u64,
    end: u64,
    rate: u64,
}

impl SourceFunction<Row> for DatagenRows {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        let started = Instant::now();
        let first = self.next;
        while self.next < self.end {
            if ctx.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            let next = self.next;
            ctx.checkpoint_if_due(out, || sluice_runtime::state::layout::encode(&next))?;
            let batch_end = self
                .end
                .min(self.next.saturating_add(SOURCE_BATCH.min(self.rate)));
            for i in self.next..batch_end {
                out.collect(self.spec.row(i))?;
            }
            ctx.add_emitted(batch_end - self.next);
            self.next = batch_end;
            // Pace: row n of this subtask is due at n / rate seconds after the start.
            let due = Duration::from_secs_f64((self.next - first) as f64 / self.rate as f64);
            let elapsed = started.elapsed();
            if due > elapsed && self.next < self.end {
                std::thread::sleep(due - elapsed);
            }
        }
        let next = self.next;
        ctx.await_final_checkpoint(out, || sluice_runtime::state::layout::encode(&next))
    }

    fn restore_position(
        &mut self,
        parts: &[(usize, Vec<u8>)],
        op: &sluice_types::OperatorContext,
    ) -> Result<(), OperatorError> {
        if parts.len() != op.parallelism {
            return Err(OperatorError::failed(format!(
                "the datagen source was checkpointed at parallelism {} and cannot resume at {}",
                parts.len(),
                op.parallelism
            )));
        }
        for (i, bytes) in parts {
            if *i == op.subtask_index {
                self.next = sluice_runtime::state::layout::decode(bytes)?;
            }
        }
        Ok(())
    }
}
