//! Metric endpoints: `/jobs/:id/vertices/:vid/metrics`, `…/subtasks/:n/metrics` and
//! `…/subtasks/metrics` (names, `?get=` values, aggregates over a `subtasks` filter).

use std::collections::BTreeSet;

use sluice_rest_api::lenient::Scalar;
use sluice_rest_api::{AggregatedMetric, MetricId, MetricValue};
use sluice_runtime::telemetry::data_skew_percent;

use super::{ok_shape, subtask_index, vertex_index, ApiError, ApiResult, Ctx};
use crate::http::shorten;
use crate::metrics::JobData;

fn id_list(names: impl IntoIterator<Item = String>) -> Vec<MetricId> {
    names.into_iter().map(|id| MetricId { id }).collect()
}

fn not_found_metrics(requested: &[String]) -> ApiError {
    ApiError::not_found(format!(
        "Metric(s) not found: {}",
        shorten(&requested.join(", "))
    ))
}

/// `{id, value}` pairs for the requested names that exist; 404 when none does.
fn values_json(
    requested: &[String],
    lookup: impl Fn(&str) -> Option<crate::metrics::Value>,
) -> ApiResult {
    let found: Vec<MetricValue> = requested
        .iter()
        .filter_map(|n| {
            lookup(n).map(|v| MetricValue {
                id: n.clone(),
                value: Some(Scalar::Str(v.to_flink_string())),
            })
        })
        .collect();
    if found.is_empty() {
        return Err(not_found_metrics(requested));
    }
    ok_shape(&found)
}

/// `/jobs/:id/vertices/:vid/metrics`: ids `<subtask>.<name>`.
pub fn vertex_metrics(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let d = JobData::new(&m);
    match ctx.list_param("get") {
        None => {
            let names = d.metric_names(vi);
            let ids = (0..d.parallelism(vi))
                .flat_map(|i| names.iter().map(move |n| format!("{i}.{n}")))
                .collect::<Vec<_>>();
            ok_shape(&id_list(ids))
        }
        Some(req) => values_json(&req, |id| {
            let (idx, name) = id.split_once('.')?;
            if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            d.value(vi, idx.parse().ok()?, name)
        }),
    }
}

/// `/jobs/:id/vertices/:vid/subtasks/:n/metrics`.
pub fn subtask_metrics(ctx: &Ctx, jid: &str, vid: &str, idx: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let i = subtask_index(&m, vi, idx)?;
    let d = JobData::new(&m);
    match ctx.list_param("get") {
        None => ok_shape(&id_list(d.metric_names(vi))),
        Some(req) => values_json(&req, |name| d.value(vi, i, name)),
    }
}

/// Aggregations of `subtasks/metrics`, in Flink's output order.
pub const AGGREGATIONS: [&str; 5] = ["min", "max", "avg", "sum", "skew"];

fn parse_aggs(ctx: &Ctx) -> Result<[bool; 5], ApiError> {
    let Some(list) = ctx.list_param("agg") else {
        return Ok([true; 5]);
    };
    let mut on = [false; 5];
    for a in &list {
        let i = AGGREGATIONS
            .iter()
            .position(|x| x.eq_ignore_ascii_case(a))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "Bad request: invalid aggregation '{}' (expected min, max, avg, sum or skew).",
                    shorten(a)
                ))
            })?;
        on[i] = true;
    }
    Ok(on)
}

/// Parses `subtasks=0,2-4` against a vertex's parallelism.
pub fn parse_subtask_filter(
    raw: &[String],
    parallelism: usize,
) -> Result<BTreeSet<usize>, ApiError> {
    let mut set = BTreeSet::new();
    let bad = |part: &str, why: &str| {
        ApiError::bad_request(format!(
            "Bad request: invalid subtasks '{}': {why}.",
            shorten(part)
        ))
    };
    let missing = |part: &str| {
        ApiError::not_found(format!(
            "Subtasks '{}' not found: the vertex has subtasks 0 to {}.",
            shorten(part),
            parallelism.saturating_sub(1)
        ))
    };
    // Syntax first (400), then existence (404).
    let num = |s: &str, part: &str| -> Result<Option<usize>, ApiError> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(part, "expected an index or a range like 2-4"));
        }
        Ok(s.parse::<usize>().ok())
    };
    for part in raw {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a, part)?, num(b, part)?),
            None => {
                let n = num(part, part)?;
                (n, n)
            }
        };
        let (Some(a), Some(b)) = (a, b) else {
            return Err(missing(part));
        };
        if a.max(b) >= parallelism {
            return Err(missing(part));
        }
        if a > b {
            return Err(bad(part, "the range is empty (start after end)"));
        }
        set.extend(a..=b);
    }
    Ok(set)
}

/// `/jobs/:id/vertices/:vid/subtasks/metrics`: names, or `?get=` aggregated over subtasks.
pub fn subtasks_metrics(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let d = JobData::new(&m);
    let p = d.parallelism(vi);
    let aggs = parse_aggs(ctx)?;
    let subtasks: BTreeSet<usize> = match ctx.list_param("subtasks") {
        Some(raw) => parse_subtask_filter(&raw, p)?,
        None => (0..p).collect(),
    };
    let Some(req) = ctx.list_param("get") else {
        return ok_shape(&id_list(d.metric_names(vi)));
    };
    let known = d.metric_names(vi);
    let mut out = Vec::new();
    let mut any_known = false;
    for name in &req {
        if !known.iter().any(|k| k == name) {
            continue;
        }
        any_known = true;
        let values: Vec<f64> = subtasks
            .iter()
            .filter_map(|&i| d.value(vi, i, name).and_then(|v| v.as_number()))
            .collect();
        if values.is_empty() {
            continue;
        }
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = values.iter().sum();
        let avg = sum / values.len() as f64;
        let skew = data_skew_percent(&values);
        // Only the aggregations asked for, in Flink's order (`AGGREGATIONS`).
        let pick = |i: usize, v: f64| aggs[i].then_some(v);
        out.push(AggregatedMetric {
            id: name.clone(),
            min: pick(0, min),
            max: pick(1, max),
            avg: pick(2, avg),
            sum: pick(3, sum),
            skew: pick(4, skew),
        });
    }
    if !any_known {
        return Err(not_found_metrics(&req));
    }
    ok_shape(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtask_filters_parse_ranges_and_reject_nonsense() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let set = parse_subtask_filter(&v(&["0", "2-4"]), 5).unwrap();
        assert_eq!(set.into_iter().collect::<Vec<_>>(), vec![0, 2, 3, 4]);
        for bad in [&["x"][..], &["4-2"], &["-1"], &["1-"], &["1-2-3"], &["a-1"]] {
            let e = parse_subtask_filter(&v(bad), 5).unwrap_err();
            assert_eq!(e.status, 400, "{bad:?}");
        }
        for missing in [&["5"][..], &["0-9"], &["99999999999999999999999"]] {
            let e = parse_subtask_filter(&v(missing), 5).unwrap_err();
            assert_eq!(e.status, 404, "{missing:?}");
        }
    }
}
