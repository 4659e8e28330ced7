//! Bad connector options are refused naming the key and the nearest known keys; connectors that
//! come later are refused naming them.

use sluice_sql::SqlError;
use sluice_table::connectors::{SinkConnector, SourceConnector};

use crate::support::create;

fn source_error(with: &str) -> SqlError {
    let def = create(&format!(
        "CREATE TABLE t (a BIGINT, b STRING) WITH ({with})"
    ));
    SourceConnector::for_table(&def).unwrap_err()
}

#[test]
fn an_unknown_option_names_the_nearest_known_ones() {
    let e = source_error("'connector' = 'filesystem', 'pth' = '/tmp', 'format' = 'csv'");
    assert_eq!(
        e.to_string(),
        "Invalid option 'pth' of table 't': Unsupported option for connector 'filesystem'. Did you mean 'path'?"
    );
    let e = source_error("'connector' = 'nexmark', 'events.nun' = '10'");
    assert!(e.to_string().contains("Did you mean 'events.num'"), "{e}");
}

#[test]
fn a_missing_required_option_is_named() {
    let e = source_error("'connector' = 'filesystem', 'format' = 'csv'");
    assert!(
        matches!(&e, SqlError::BadOption { key, .. } if key == "path"),
        "{e}"
    );
    let e = source_error("'connectr' = 'datagen'");
    assert!(
        e.to_string()
            .contains("Missing required option 'connector'")
            && e.to_string().contains("'connectr'"),
        "{e}"
    );
}

#[test]
fn a_malformed_value_says_what_was_expected() {
    let e = source_error("'connector' = 'datagen', 'rows-per-second' = 'fast'");
    assert_eq!(
        e.to_string(),
        "Invalid option 'rows-per-second' of table 't': expected a whole number, found 'fast'"
    );
    let e = source_error("'connector' = 'filesystem', 'path' = '/tmp', 'format' = 'avro'");
    assert!(
        e.to_string()
            .contains("expected one of 'csv', 'json', found 'avro'"),
        "{e}"
    );
    let e = source_error("'connector' = 'datagen', 'fields.c.kind' = 'random'");
    assert!(e.to_string().contains("Column 'c (in option"), "{e}");
}

#[test]
fn unknown_and_later_connectors() {
    let e = source_error("'connector' = 'filesystm'");
    assert!(e.to_string().contains("Did you mean 'filesystem'"), "{e}");
    let e = source_error("'connector' = 'upsert-kafka', 'topic' = 'x'");
    assert!(
        matches!(&e, SqlError::Unsupported { what, .. } if what.contains("'upsert-kafka'")),
        "{e}"
    );
    // jdbc runs now: without its url it is refused naming the option.
    let def = create("CREATE TABLE s (a BIGINT) WITH ('connector' = 'jdbc')");
    assert!(SinkConnector::for_table(&def)
        .unwrap_err()
        .to_string()
        .contains("Missing required option 'url'"));
}

#[test]
fn legacy_keys_are_read_as_their_current_names() {
    let def = create(
        "CREATE TABLE side_input (key BIGINT, `value` VARCHAR) WITH ('connector.type' = 'filesystem', \
         'connector.path' = 'file:///tmp/side_input.txt', 'format.type' = 'csv')",
    );
    let SourceConnector::Filesystem(spec) = SourceConnector::for_table(&def).unwrap() else {
        panic!()
    };
    assert_eq!(spec.path, std::path::PathBuf::from("/tmp/side_input.txt"));
}

#[test]
fn datagen_is_deterministic_and_bounded_by_its_sequence() {
    let def = create(
        "CREATE TABLE g (id BIGINT, s STRING, n INT) WITH ('connector' = 'datagen', \
         'rows-per-second' = '1000000', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1', \
         'fields.id.end' = '100', 'fields.s.length' = '5', 'fields.n.min' = '0', 'fields.n.max' = '9', \
         'fields.n.null-rate' = '0.5', 'sluice.seed' = '7')",
    );
    let SourceConnector::Datagen(spec) = SourceConnector::for_table(&def).unwrap() else {
        panic!()
    };
    let run = |p: usize| {
        let env = sluice_datastream::StreamEnv::new();
        env.set_parallelism(p);
        let out = spec.stream(&env).collect();
        env.execute().unwrap();
        let mut rows = out.handle.take();
        rows.sort();
        rows
    };
    let one = run(1);
    assert_eq!(one.len(), 100);
    assert_eq!(one, run(3), "the same rows at any parallelism");
    assert!(one
        .iter()
        .all(|r| r.get(1).as_str().is_some_and(|s| s.len() == 5)));
    let nulls = one.iter().filter(|r| r.get(2).is_null()).count();
    assert!((20..80).contains(&nulls), "{nulls}");
}
