//! `stream.lookup(source, key_fn, join_fn)`: the DataStream call.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use sluice_datastream::DataStream;
use sluice_types::Data;

use crate::operator::{JoinFn, KeyFn, LookupOperator};
use crate::{LookupKey, LookupOptions, LookupSource, Row};

/// Lookup joins on a [`DataStream`].
pub trait LookupExt<T: Data + Serialize + DeserializeOwned> {
    /// Enriches every record with the rows `source` holds for `key_fn(record)`, in sync mode
    /// without a cache (the defaults of [`LookupOptions`]); `join_fn(record, Some(row))` per
    /// row, `join_fn(record, None)` when there is none, `None` from it emits nothing. Named
    /// `Lookup Join`; its options are plan options (`lookup.*`), changeable by a plan fix.
    fn lookup<U, K, KF, JF>(&self, source: &LookupSource, key_fn: KF, join_fn: JF) -> DataStream<U>
    where
        U: Data,
        K: Into<LookupKey>,
        KF: Fn(&T) -> K + Send + Sync + 'static,
        JF: Fn(&T, Option<&Row>) -> Option<U> + Send + Sync + 'static,
    {
        self.lookup_with(source, key_fn, join_fn, &LookupOptions::default())
    }

    /// [`lookup`](Self::lookup) with `options` (mode, cache, retries, timeout).
    fn lookup_with<U, K, KF, JF>(
        &self,
        source: &LookupSource,
        key_fn: KF,
        join_fn: JF,
        options: &LookupOptions,
    ) -> DataStream<U>
    where
        U: Data,
        K: Into<LookupKey>,
        KF: Fn(&T) -> K + Send + Sync + 'static,
        JF: Fn(&T, Option<&Row>) -> Option<U> + Send + Sync + 'static,
    {
        let per_record = move |t: &T, rows: &[Row]| -> Vec<U> {
            if rows.is_empty() {
                return join_fn(t, None).into_iter().collect();
            }
            rows.iter().filter_map(|r| join_fn(t, Some(r))).collect()
        };
        self.lookup_rows_with(source, key_fn, per_record, options)
    }

    /// The lookup with a join that sees all rows of a record's key at once (an empty slice
    /// when there are none) and returns the record's outputs: for joins whose output for a
    /// record depends on its rows together (SQL's `LEFT JOIN` with a condition on the looked-up
    /// row pads the record once when no row passes).
    fn lookup_rows_with<U, K, KF, JF>(
        &self,
        source: &LookupSource,
        key_fn: KF,
        join_rows: JF,
        options: &LookupOptions,
    ) -> DataStream<U>
    where
        U: Data,
        K: Into<LookupKey>,
        KF: Fn(&T) -> K + Send + Sync + 'static,
        JF: Fn(&T, &[Row]) -> Vec<U> + Send + Sync + 'static;
}

impl<T: Data + Serialize + DeserializeOwned> LookupExt<T> for DataStream<T> {
    fn lookup_rows_with<U, K, KF, JF>(
        &self,
        source: &LookupSource,
        key_fn: KF,
        join_rows: JF,
        options: &LookupOptions,
    ) -> DataStream<U>
    where
        U: Data,
        K: Into<LookupKey>,
        KF: Fn(&T) -> K + Send + Sync + 'static,
        JF: Fn(&T, &[Row]) -> Vec<U> + Send + Sync + 'static,
    {
        let key_fn: KeyFn<T> = Arc::new(move |t: &T| key_fn(t).into());
        let join_fn: JoinFn<T, U> = Arc::new(join_rows);
        let source = source.clone();
        let mut stream = self.transform("Lookup Join", move |ctx| {
            LookupOperator::new(&source, &key_fn, &join_fn, ctx)
        });
        for (k, v) in options.to_plan_options() {
            stream = stream.option(&k, v);
        }
        stream
    }
}
