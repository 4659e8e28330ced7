//! The row mapping: how a record of type `T` becomes the typed values of one table row.

use std::sync::Arc;

use crate::value::{ColumnType, PgValue, Value};

/// One mapped column: its name in the table, its type, whether the mapping can produce NULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The column's name in the table.
    pub name: String,
    /// The PostgreSQL type the values are written as.
    pub ty: ColumnType,
    /// Whether the mapping may produce NULL.
    pub nullable: bool,
}

type Extract<T> = Arc<dyn Fn(&T) -> Value + Send + Sync>;
type Predicate<T> = Arc<dyn Fn(&T) -> bool + Send + Sync>;

/// Maps a record to a row, column by column, in the order the columns are written:
///
/// ```
/// use sluice_postgres::RowMapping;
/// let m = RowMapping::<(u64, i64)>::new()
///     .column("key", |r: &(u64, i64)| r.0 as i64)
///     .column("total", |r: &(u64, i64)| Some(r.1)); // an Option is a nullable column
/// assert_eq!(m.columns().len(), 2);
/// ```
pub struct RowMapping<T> {
    columns: Vec<Column>,
    extract: Vec<Extract<T>>,
    deletes: Option<Predicate<T>>,
}

impl<T> Clone for RowMapping<T> {
    fn clone(&self) -> Self {
        RowMapping {
            columns: self.columns.clone(),
            extract: self.extract.clone(),
            deletes: self.deletes.clone(),
        }
    }
}

impl<T> Default for RowMapping<T> {
    fn default() -> Self {
        RowMapping {
            columns: Vec::new(),
            extract: Vec::new(),
            deletes: None,
        }
    }
}

impl<T> RowMapping<T> {
    /// A mapping with no columns yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A column whose type follows from `f`'s result ([`PgValue`]: `i32`, `i64`, `f64`,
    /// `String`, `&str`, `bool`, `SystemTime`, or an `Option` of one for a nullable column).
    pub fn column<V: PgValue>(
        self,
        name: &str,
        f: impl Fn(&T) -> V + Send + Sync + 'static,
    ) -> Self {
        self.column_value(name, V::TYPE, V::NULLABLE, move |r| f(r).into_value())
    }

    /// A column whose values are built at run time (for mappings chosen by configuration).
    /// A value that does not fit `ty` fails the write, naming the column.
    pub fn column_value(
        mut self,
        name: &str,
        ty: ColumnType,
        nullable: bool,
        f: impl Fn(&T) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.columns.push(Column {
            name: name.to_string(),
            ty,
            nullable,
        });
        self.extract.push(Arc::new(f));
        self
    }

    /// Records for which `f` holds delete their key's row instead of upserting it (a
    /// changelog's `-D`): the table's row with the record's key columns is removed. Upsert mode
    /// only (an append has no key to delete by; refused when the sink is built).
    pub fn deleted_when(mut self, f: impl Fn(&T) -> bool + Send + Sync + 'static) -> Self {
        self.deletes = Some(Arc::new(f));
        self
    }

    /// Whether the mapping can delete rows ([`deleted_when`](Self::deleted_when)).
    pub fn deletes(&self) -> bool {
        self.deletes.is_some()
    }

    /// Whether `record` deletes its key's row.
    pub(crate) fn is_delete(&self, record: &T) -> bool {
        self.deletes.as_ref().is_some_and(|f| f(record))
    }

    /// The mapped columns, in order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The row of `record`, appended to `out`.
    pub(crate) fn row_into(&self, record: &T, out: &mut Vec<Value>) {
        out.extend(self.extract.iter().map(|f| f(record)));
    }
}
