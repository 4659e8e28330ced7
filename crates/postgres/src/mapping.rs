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
}

impl<T> Clone for RowMapping<T> {
    fn clone(&self) -> Self {
        RowMapping {
            columns: self.columns.clone(),
            extract: self.extract.clone(),
        }
    }
}

impl<T> Default for RowMapping<T> {
    fn default() -> Self {
        RowMapping {
            columns: Vec::new(),
            extract: Vec::new(),
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

    /// The mapped columns, in order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The row of `record`, appended to `out`.
    pub(crate) fn row_into(&self, record: &T, out: &mut Vec<Value>) {
        out.extend(self.extract.iter().map(|f| f(record)));
    }
}
