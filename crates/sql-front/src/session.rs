//! [`Session`]: a script read whole ([`parse_script`]), then run statement by statement against
//! the session's [`Catalog`] and [`SessionConfig`], as Flink's SQL client runs a file.
//!
//! `SET`, `RESET`, `CREATE` and `DROP` change the session; what needs the planner (INSERTs,
//! queries, `EXPLAIN`, statement sets, and `SHOW TABLES` / `DESCRIBE` / `SET` to show) comes
//! back as [`PlannedStatement`]s in script order, still as sqlparser's AST with its place.

use std::collections::BTreeMap;

use crate::catalog::{Catalog, CatalogTable, ObjectPath};
use crate::config::SessionConfig;
use crate::error::{Position, Result, SqlError};
use crate::script::{split_statements, substitute};
use crate::statement::{
    parse_piece, ExplainStatement, Explained, InsertStatement, Piece, QueryStatement, SetOpener,
    Statement, StatementSet,
};

/// Reads a script: splits it, substitutes its `${VAR}` variables from `vars`, reads every
/// statement and groups statement sets. Nothing is run; the first error stops the reading.
pub fn parse_script(script: &str, vars: &BTreeMap<String, String>) -> Result<Vec<Statement>> {
    let mut out = Vec::new();
    // The open statement set: how it was opened, its INSERTs so far, where it opened.
    let mut open: Option<(SetOpener, Vec<InsertStatement>, Position)> = None;
    for raw in split_statements(script) {
        let src = substitute(&raw, vars)?;
        match parse_piece(&src)? {
            Piece::OpenSet { opener, first, pos } => {
                if let Some((_, _, at)) = &open {
                    return Err(SqlError::Syntax {
                        pos,
                        message: format!("a statement set is already open (since {at}); close it with END first"),
                    });
                }
                open = Some((opener, first.into_iter().collect(), pos));
            }
            Piece::End { pos } => {
                let Some((opener, inserts, at)) = open.take() else {
                    return Err(SqlError::Syntax {
                        pos,
                        message: "No Statement Set to submit. 'END' statement should be used after 'BEGIN STATEMENT SET'.".into(),
                    });
                };
                if inserts.is_empty() {
                    return Err(SqlError::validation(Some(at), "the statement set holds no INSERT"));
                }
                let set = StatementSet { inserts, pos: at };
                out.push(match opener {
                    SetOpener::Begin | SetOpener::Execute => Statement::StatementSet(set),
                    SetOpener::Explain(details) => Statement::Explain(ExplainStatement {
                        details,
                        target: Box::new(Explained::StatementSet(set)),
                        pos: at,
                    }),
                });
            }
            Piece::Whole(stmt) => match (&mut open, stmt) {
                (Some((_, inserts, _)), Statement::Insert(insert)) => inserts.push(insert),
                (Some(_), other) => {
                    return Err(SqlError::Syntax {
                        pos: other.pos(),
                        message: "Only INSERT statements are allowed in a statement set; use 'END' to close it".into(),
                    })
                }
                (None, stmt) => out.push(stmt),
            },
        }
    }
    if let Some((_, _, at)) = open {
        return Err(SqlError::Syntax {
            pos: at,
            message: "the statement set is not closed: END is missing".into(),
        });
    }
    Ok(out)
}

/// A statement for the planner (not planned yet): what a script asks to run or show.
#[derive(Clone, Debug, PartialEq)]
pub enum PlannedStatement {
    /// `INSERT INTO … query`: a job.
    Insert(InsertStatement),
    /// A query on its own: a job whose rows are shown.
    Query(QueryStatement),
    /// `EXPLAIN …`: print the plan.
    Explain(ExplainStatement),
    /// INSERTs run together as one job.
    StatementSet(StatementSet),
    /// `SHOW TABLES`: the catalog's table and view names.
    ShowTables {
        /// Where the statement starts.
        pos: Position,
    },
    /// `DESCRIBE name`: the table's (or view's) schema; the name is known to exist.
    Describe {
        /// The name, as written.
        name: ObjectPath,
    },
    /// `SET` alone: show the configuration.
    ShowConfig {
        /// Where the statement starts.
        pos: Position,
    },
}

/// A SQL session: its catalog and its configuration.
#[derive(Clone, Debug)]
pub struct Session {
    /// The tables, views and functions created so far.
    pub catalog: Catalog,
    /// What `SET` has set.
    pub config: SessionConfig,
}

impl Default for Session {
    fn default() -> Session {
        Session::new()
    }
}

impl Session {
    /// A session with an empty catalog (see [`Catalog::new`]) and configuration.
    pub fn new() -> Session {
        Session {
            catalog: Catalog::new(),
            config: SessionConfig::new(),
        }
    }

    /// Reads a whole script ([`parse_script`]: a syntax error anywhere changes nothing), then
    /// runs its statements in order; the first refusal stops it, with what ran before it kept
    /// (as Flink's SQL client does). Returns what is left for the planner, in order.
    pub fn execute_script(
        &mut self,
        script: &str,
        vars: &BTreeMap<String, String>,
    ) -> Result<Vec<PlannedStatement>> {
        let statements = parse_script(script, vars)?;
        let mut out = Vec::new();
        for stmt in statements {
            if let Some(p) = self.execute(stmt)? {
                out.push(p);
            }
        }
        Ok(out)
    }

    /// Runs one statement: changes the session, or hands it on for the planner.
    pub fn execute(&mut self, stmt: Statement) -> Result<Option<PlannedStatement>> {
        Ok(match stmt {
            Statement::Set { key, value, pos } => {
                self.config.set(&key, &value, pos)?;
                None
            }
            Statement::Reset { key, .. } => {
                self.config.reset(key.as_deref());
                None
            }
            Statement::CreateTable(t) => {
                self.catalog.create_table(t)?;
                None
            }
            Statement::CreateView(v) => {
                self.catalog.create_view(v)?;
                None
            }
            Statement::CreateFunction(f) => {
                self.catalog.create_function(f)?;
                None
            }
            Statement::Drop(d) => {
                self.catalog.drop(&d)?;
                None
            }
            Statement::ShowConfig { pos } => Some(PlannedStatement::ShowConfig { pos }),
            Statement::ShowTables { pos } => Some(PlannedStatement::ShowTables { pos }),
            Statement::Describe { name } => {
                self.catalog.lookup(&name)?;
                Some(PlannedStatement::Describe { name })
            }
            Statement::Insert(i) => {
                self.check_target(&i)?;
                Some(PlannedStatement::Insert(i))
            }
            Statement::Query(q) => Some(PlannedStatement::Query(q)),
            Statement::Explain(e) => {
                match e.target.as_ref() {
                    Explained::Insert(i) => self.check_target(i)?,
                    Explained::StatementSet(s) => {
                        s.inserts.iter().try_for_each(|i| self.check_target(i))?
                    }
                    Explained::Query(_) => {}
                }
                Some(PlannedStatement::Explain(e))
            }
            Statement::StatementSet(s) => {
                s.inserts.iter().try_for_each(|i| self.check_target(i))?;
                Some(PlannedStatement::StatementSet(s))
            }
        })
    }

    /// An INSERT's target must be a known table (not a view).
    fn check_target(&self, insert: &InsertStatement) -> Result<()> {
        match self.catalog.lookup(&insert.target)? {
            CatalogTable::Table(_) => Ok(()),
            CatalogTable::View(_) => Err(SqlError::validation(
                Some(insert.target.pos),
                format!(
                    "View '{}' cannot be the target of an INSERT: insert into a table",
                    insert.target
                ),
            )),
        }
    }
}
