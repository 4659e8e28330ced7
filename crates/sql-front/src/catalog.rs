//! The [`Catalog`]: the tables, views and functions a script has created, with Flink's name
//! resolution and Flink's rules for duplicates.
//!
//! * Names are case-sensitive, as in Flink's default (`Bid` is not `bid`); function names are
//!   not (Flink normalizes them to lower case).
//! * Everything lives in Flink's one default namespace: a name may be written qualified as
//!   `default_database.t` or `default_catalog.default_database.t`; any other catalog or
//!   database is refused as unsupported.
//! * Tables and views share one namespace. A `TEMPORARY` object shadows a permanent one of the
//!   same name (and may be created while the permanent one exists); creating an object whose
//!   name is taken in its own kind (permanent or temporary) is an error unless the statement
//!   says `IF NOT EXISTS`, in which case the statement does nothing.
//! * An unknown name is refused with the nearest known names ([`nearest`]).

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use sqlparser::ast::Query;

use crate::ddl::TableDef;
use crate::error::{Position, Result, SqlError};

/// Flink's default catalog, the only one Sluice has.
pub const DEFAULT_CATALOG: &str = "default_catalog";
/// Flink's default database, the only one Sluice has.
pub const DEFAULT_DATABASE: &str = "default_database";

/// The identifier of the Nexmark suite's `count_char` function (its q14 writes
/// `CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar'`): a Rust function
/// of the expression layer stands in for the Java class.
pub const NEXMARK_COUNT_CHAR: &str = "com.github.nexmark.flink.udf.CountChar";

/// A name as written, maybe qualified (`t`, `default_database.t`, `cat.db.t`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectPath {
    /// The parts, case kept, quotes removed.
    pub parts: Vec<String>,
    /// Where the name starts.
    pub pos: Position,
}

impl ObjectPath {
    /// The last part: the object's own name.
    pub fn object_name(&self) -> &str {
        self.parts.last().map(String::as_str).unwrap_or_default()
    }

    /// The object's name in Sluice's one namespace: the last part, once any qualifier is known
    /// to be Flink's default catalog and database.
    pub fn resolve(&self) -> Result<String> {
        let n = self.parts.len();
        let database = n.checked_sub(2).map(|i| self.parts[i].as_str());
        let catalog = n.checked_sub(3).map(|i| self.parts[i].as_str());
        if n > 3 {
            return Err(SqlError::Syntax {
                pos: self.pos,
                message: format!(
                    "'{self}' has too many parts: a name is [catalog.][database.]object"
                ),
            });
        }
        if let Some(c) = catalog.filter(|c| *c != DEFAULT_CATALOG) {
            return Err(SqlError::unsupported(
                Some(self.pos),
                format!("catalog '{c}' in '{self}': Sluice has only Flink's '{DEFAULT_CATALOG}'"),
            ));
        }
        if let Some(d) = database.filter(|d| *d != DEFAULT_DATABASE) {
            return Err(SqlError::unsupported(
                Some(self.pos),
                format!("database '{d}' in '{self}': Sluice has only Flink's '{DEFAULT_DATABASE}'"),
            ));
        }
        Ok(self.object_name().to_string())
    }
}

impl fmt::Display for ObjectPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.parts.join("."))
    }
}

/// `CREATE [TEMPORARY] VIEW [IF NOT EXISTS] name [(columns)] AS query`.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewDef {
    /// The view's name as written.
    pub name: ObjectPath,
    /// The column names the statement gives, if it gives them.
    pub columns: Vec<String>,
    /// The query, as sqlparser reads it.
    pub query: Box<Query>,
    /// The query's text (after variable substitution), as written.
    pub text: String,
    /// `COMMENT '…'`, if given.
    pub comment: Option<String>,
    /// `TEMPORARY`.
    pub temporary: bool,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// Where the statement starts.
    pub pos: Position,
}

/// The language a `CREATE FUNCTION` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionLanguage {
    /// `LANGUAGE JAVA` (the default).
    Java,
    /// `LANGUAGE SCALA`.
    Scala,
    /// `LANGUAGE PYTHON` (refused: Sluice runs no Python).
    Python,
}

/// Where a function lives (Flink's three kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionScope {
    /// `CREATE FUNCTION`: in the catalog.
    Catalog,
    /// `CREATE TEMPORARY FUNCTION`: for this session, shadowing the catalog's.
    Temporary,
    /// `CREATE TEMPORARY SYSTEM FUNCTION`: for this session, shadowing built-in functions.
    TemporarySystem,
}

/// `CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS] name AS 'identifier' [LANGUAGE …]`.
///
/// Flink loads a JVM class by the identifier; Sluice runs a Rust scalar function registered
/// under that identifier instead (see [`Catalog::register_udf`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionDef {
    /// The function's name as written.
    pub name: ObjectPath,
    /// The identifier after `AS` (a Java class name in Flink).
    pub identifier: String,
    /// `LANGUAGE …`.
    pub language: FunctionLanguage,
    /// Catalog, temporary or temporary system.
    pub scope: FunctionScope,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// Where the statement starts.
    pub pos: Position,
}

/// A table or a view.
// A script holds a handful of these, each read once: boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum CatalogTable {
    /// A table `CREATE TABLE` made.
    Table(TableDef),
    /// A view `CREATE VIEW` made.
    View(ViewDef),
}

impl CatalogTable {
    /// Whether this is a temporary object.
    pub fn is_temporary(&self) -> bool {
        match self {
            CatalogTable::Table(t) => t.temporary,
            CatalogTable::View(v) => v.temporary,
        }
    }
}

/// What a `DROP` statement drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropKind {
    /// `DROP [TEMPORARY] TABLE`.
    Table,
    /// `DROP [TEMPORARY] VIEW`.
    View,
    /// `DROP [TEMPORARY [SYSTEM]] FUNCTION`.
    Function,
}

/// `DROP [TEMPORARY [SYSTEM]] TABLE|VIEW|FUNCTION [IF EXISTS] name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropDef {
    /// Table, view or function.
    pub kind: DropKind,
    /// The name as written.
    pub name: ObjectPath,
    /// `TEMPORARY`.
    pub temporary: bool,
    /// `IF EXISTS`.
    pub if_exists: bool,
}

/// A function's implementation a program registered under an identifier (Flink's instance
/// given to `createTemporaryFunction`, or a class on its classpath). It is the expression
/// layer's scalar function, which this layer (below expressions) cannot name: the planner
/// downcasts it.
#[derive(Clone)]
pub struct FunctionImpl(pub Arc<dyn Any + Send + Sync>);

impl fmt::Debug for FunctionImpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FunctionImpl")
    }
}

/// The tables, views and functions of a session.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    tables: BTreeMap<String, CatalogTable>,
    temporary_tables: BTreeMap<String, CatalogTable>,
    /// Keyed by the lower-cased name (Flink's function names ignore case).
    functions: BTreeMap<String, FunctionDef>,
    temporary_functions: BTreeMap<String, FunctionDef>,
    udf_identifiers: BTreeSet<String>,
    /// Implementations registered by a program, by identifier (the others are the expression
    /// layer's ready-made ones).
    udf_impls: BTreeMap<String, FunctionImpl>,
}

impl Catalog {
    /// An empty catalog that knows the Rust stand-in for Nexmark's `count_char`
    /// ([`NEXMARK_COUNT_CHAR`]).
    pub fn new() -> Catalog {
        let mut c = Catalog::default();
        c.register_udf(NEXMARK_COUNT_CHAR);
        c
    }

    /// Lets `CREATE FUNCTION … AS 'identifier'` name a Rust scalar function the expression layer
    /// registers under `identifier`; any other identifier is refused.
    pub fn register_udf(&mut self, identifier: &str) {
        self.udf_identifiers.insert(identifier.to_string());
    }

    /// Lets `CREATE FUNCTION … AS 'identifier'` name `implementation`, a function a program
    /// registered (replacing what the identifier named before).
    pub fn register_udf_impl(&mut self, identifier: &str, implementation: FunctionImpl) {
        self.register_udf(identifier);
        self.udf_impls
            .insert(identifier.to_string(), implementation);
    }

    /// The implementation a program registered under `identifier`, if any.
    pub fn udf_impl(&self, identifier: &str) -> Option<&FunctionImpl> {
        self.udf_impls.get(identifier)
    }

    /// Adds a table (`CREATE TABLE`).
    pub fn create_table(&mut self, def: TableDef) -> Result<()> {
        let (path, temporary, if_not_exists) = (def.name.clone(), def.temporary, def.if_not_exists);
        self.create(&path, temporary, if_not_exists, CatalogTable::Table(def))
    }

    /// Adds a view (`CREATE VIEW`).
    pub fn create_view(&mut self, def: ViewDef) -> Result<()> {
        let (path, temporary, if_not_exists) = (def.name.clone(), def.temporary, def.if_not_exists);
        self.create(&path, temporary, if_not_exists, CatalogTable::View(def))
    }

    fn create(
        &mut self,
        path: &ObjectPath,
        temporary: bool,
        if_not_exists: bool,
        object: CatalogTable,
    ) -> Result<()> {
        let name = path.resolve()?;
        let map = if temporary {
            &mut self.temporary_tables
        } else {
            &mut self.tables
        };
        if map.contains_key(&name) {
            if if_not_exists {
                return Ok(());
            }
            let message = if temporary {
                format!("Temporary table '`{DEFAULT_CATALOG}`.`{DEFAULT_DATABASE}`.`{name}`' already exists")
            } else {
                format!("Table (or view) {DEFAULT_DATABASE}.{name} already exists in Catalog {DEFAULT_CATALOG}.")
            };
            return Err(SqlError::validation(Some(path.pos), message));
        }
        map.insert(name, object);
        Ok(())
    }

    /// Adds a function (`CREATE FUNCTION`).
    pub fn create_function(&mut self, def: FunctionDef) -> Result<()> {
        if def.language == FunctionLanguage::Python {
            return Err(SqlError::unsupported(
                Some(def.pos),
                format!(
                    "LANGUAGE PYTHON (function '{}'): Sluice runs Rust functions only",
                    def.name
                ),
            ));
        }
        if !self.udf_identifiers.contains(&def.identifier) {
            return Err(SqlError::UnknownName {
                pos: Some(def.pos),
                kind: "Function implementation",
                name: def.identifier.clone(),
                nearest_names: nearest(
                    &def.identifier,
                    self.udf_identifiers.iter().map(String::as_str),
                ),
            });
        }
        let name = def.name.resolve()?.to_lowercase();
        let map = match def.scope {
            FunctionScope::Catalog => &mut self.functions,
            FunctionScope::Temporary | FunctionScope::TemporarySystem => {
                &mut self.temporary_functions
            }
        };
        if map.contains_key(&name) {
            if def.if_not_exists {
                return Ok(());
            }
            let message = match def.scope {
                FunctionScope::Catalog => format!(
                    "Function {DEFAULT_DATABASE}.{name} already exists in Catalog {DEFAULT_CATALOG}."
                ),
                FunctionScope::Temporary => format!(
                    "Temporary catalog function `{DEFAULT_CATALOG}`.`{DEFAULT_DATABASE}`.`{name}` is already defined"
                ),
                FunctionScope::TemporarySystem => {
                    format!("Could not register temporary system function. A function named '{name}' does already exist.")
                }
            };
            return Err(SqlError::validation(Some(def.name.pos), message));
        }
        map.insert(name, def);
        Ok(())
    }

    /// Removes a table, view or function (`DROP`).
    pub fn drop(&mut self, drop: &DropDef) -> Result<()> {
        let name = drop.name.resolve()?;
        let missing = |what: &str| {
            SqlError::validation(
                Some(drop.name.pos),
                format!("{what} with identifier '{DEFAULT_CATALOG}.{DEFAULT_DATABASE}.{name}' does not exist."),
            )
        };
        if drop.kind == DropKind::Function {
            let map = if drop.temporary {
                &mut self.temporary_functions
            } else {
                &mut self.functions
            };
            return match map.remove(&name.to_lowercase()) {
                Some(_) => Ok(()),
                None if drop.if_exists => Ok(()),
                None => Err(missing("Function")),
            };
        }
        let map = if drop.temporary {
            &mut self.temporary_tables
        } else {
            &mut self.tables
        };
        let what = if drop.kind == DropKind::View {
            "View"
        } else {
            "Table"
        };
        match map.get(&name) {
            None if drop.if_exists => Ok(()),
            None => Err(missing(what)),
            Some(CatalogTable::View(_)) if drop.kind == DropKind::Table => {
                Err(SqlError::validation(
                    Some(drop.name.pos),
                    format!("Table or view with identifier '{name}' is a view: use DROP VIEW"),
                ))
            }
            Some(CatalogTable::Table(_)) if drop.kind == DropKind::View => {
                Err(SqlError::validation(
                    Some(drop.name.pos),
                    format!("View with identifier '{name}' is a table: use DROP TABLE"),
                ))
            }
            Some(_) => {
                map.remove(&name);
                Ok(())
            }
        }
    }

    /// The table or view a name means (a temporary one first), or `None`.
    pub fn get(&self, name: &str) -> Option<&CatalogTable> {
        self.temporary_tables
            .get(name)
            .or_else(|| self.tables.get(name))
    }

    /// The table or view a written name means, or an error naming the nearest known ones.
    pub fn lookup(&self, path: &ObjectPath) -> Result<&CatalogTable> {
        let name = path.resolve()?;
        self.get(&name).ok_or_else(|| SqlError::UnknownName {
            pos: Some(path.pos),
            kind: "Table",
            name: path.to_string(),
            nearest_names: nearest(&name, self.table_names().iter().map(String::as_str)),
        })
    }

    /// The function a name means (temporary first; the name's case does not matter).
    pub fn function(&self, name: &str) -> Option<&FunctionDef> {
        let key = name.to_lowercase();
        self.temporary_functions
            .get(&key)
            .or_else(|| self.functions.get(&key))
    }

    /// Every table and view name, sorted, each once.
    pub fn table_names(&self) -> Vec<String> {
        let names: BTreeSet<&String> = self
            .tables
            .keys()
            .chain(self.temporary_tables.keys())
            .collect();
        names.into_iter().cloned().collect()
    }

    /// Every function name (lower case), sorted, each once.
    pub fn function_names(&self) -> Vec<String> {
        let names: BTreeSet<&String> = self
            .functions
            .keys()
            .chain(self.temporary_functions.keys())
            .collect();
        names.into_iter().cloned().collect()
    }
}

/// Levenshtein distance between two strings, by characters.
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The known names closest to `name`: those within a case-insensitive edit distance of 2, or that
/// start with it (or it with them), best first (fewest edits, then prefixes, then by name), at
/// most 3.
pub fn nearest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let lower = name.to_lowercase();
    let mut scored: Vec<(usize, String, String)> = known
        .into_iter()
        .filter_map(|k| {
            let kl = k.to_lowercase();
            let d = levenshtein(&lower, &kl);
            let prefix = !lower.is_empty() && (kl.starts_with(&lower) || lower.starts_with(&kl));
            if d <= 2 {
                Some((d, kl, k.to_string()))
            } else if prefix {
                Some((3, kl, k.to_string()))
            } else {
                None
            }
        })
        .collect();
    scored.sort();
    scored.dedup();
    scored.into_iter().take(3).map(|(_, _, k)| k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_names_are_close_or_prefixed_and_best_first() {
        let known = ["bid", "bidder", "auction", "person", "Bids"];
        assert_eq!(nearest("bdi", known), vec!["bid", "Bids"]);
        assert_eq!(nearest("auc", known), vec!["auction"]);
        assert!(nearest("zzzzzz", known).is_empty());
    }

    #[test]
    fn qualified_names_accept_only_the_defaults() {
        let p = |parts: &[&str]| ObjectPath {
            parts: parts.iter().map(|s| s.to_string()).collect(),
            pos: Position { line: 1, column: 1 },
        };
        assert_eq!(
            p(&["default_catalog", "default_database", "t"])
                .resolve()
                .unwrap(),
            "t"
        );
        assert_eq!(p(&["default_database", "t"]).resolve().unwrap(), "t");
        let e = p(&["hive", "db", "t"]).resolve().unwrap_err();
        assert!(matches!(e, SqlError::Unsupported { .. }), "{e}");
    }
}
