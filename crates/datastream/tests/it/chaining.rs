//! Operator chaining, ship-strategy resolution and the stream-graph execution plan
//! (docs/src/reference/flink-formats.md#chaining, #ship-strategies, #execution-plan), checked
//! through the public API: `env.job_graph()` and
//! `env.execution_plan()`.

use sluice_datastream::{
    ChainingStrategy, DataStream, GraphError, JobGraph, ShipStrategy, StreamEnv,
};

// ---------------------------------------------------------------------------------------------
// helpers

fn env(p: usize) -> StreamEnv {
    let env = StreamEnv::new();
    env.set_parallelism(p);
    env
}

fn numbers(env: &StreamEnv) -> DataStream<u64> {
    env.generate(10, |i| i)
}

fn vertex_names(g: &JobGraph) -> Vec<String> {
    let mut v: Vec<String> = g.vertices.iter().map(|v| v.name.clone()).collect();
    v.sort();
    v
}

/// `(from vertex name, to vertex name, strategy)` of every network edge, sorted.
fn edges(g: &JobGraph) -> Vec<(String, String, ShipStrategy)> {
    let mut e: Vec<_> = g
        .edges
        .iter()
        .map(|e| {
            (
                g.vertices[e.from_vertex].name.clone(),
                g.vertices[e.to_vertex].name.clone(),
                e.strategy,
            )
        })
        .collect();
    e.sort_by(|a, b| (&a.0, &a.1, a.2.as_str()).cmp(&(&b.0, &b.1, b.2.as_str())));
    e
}

fn s(x: &str) -> String {
    x.to_string()
}

/// A minimal JSON reader, enough for execution plans (objects, arrays, strings, integers).
#[derive(Clone, Debug, PartialEq)]
enum J {
    Obj(Vec<(String, J)>),
    Arr(Vec<J>),
    Str(String),
    Num(i64),
    Bool(bool),
    Null,
}

impl J {
    fn get(&self, k: &str) -> Option<&J> {
        match self {
            J::Obj(f) => f.iter().find(|(n, _)| n == k).map(|(_, v)| v),
            _ => None,
        }
    }
    fn keys(&self) -> Vec<&str> {
        match self {
            J::Obj(f) => f.iter().map(|(k, _)| k.as_str()).collect(),
            _ => vec![],
        }
    }
    fn arr(&self) -> &[J] {
        match self {
            J::Arr(a) => a,
            other => panic!("not an array: {other:?}"),
        }
    }
    fn num(&self) -> i64 {
        match self {
            J::Num(n) => *n,
            other => panic!("not a number: {other:?}"),
        }
    }
    fn str(&self) -> &str {
        match self {
            J::Str(s) => s,
            other => panic!("not a string: {other:?}"),
        }
    }
}

fn parse_json(text: &str) -> J {
    struct P<'a> {
        b: &'a [u8],
        i: usize,
    }
    impl P<'_> {
        fn ws(&mut self) {
            while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
        }
        fn eat(&mut self, c: u8) {
            self.ws();
            assert_eq!(self.b[self.i] as char, c as char, "at byte {}", self.i);
            self.i += 1;
        }
        fn string(&mut self) -> String {
            self.eat(b'"');
            let mut out = String::new();
            loop {
                let c = self.b[self.i];
                self.i += 1;
                match c {
                    b'"' => return out,
                    b'\\' => {
                        let e = self.b[self.i];
                        self.i += 1;
                        out.push(match e {
                            b'n' => '\n',
                            b't' => '\t',
                            b'r' => '\r',
                            other => other as char,
                        });
                    }
                    _ => {
                        // Copy a whole UTF-8 sequence.
                        let start = self.i - 1;
                        let mut end = self.i;
                        while end < self.b.len() && (self.b[end] & 0xC0) == 0x80 {
                            end += 1;
                        }
                        out.push_str(std::str::from_utf8(&self.b[start..end]).unwrap());
                        self.i = end;
                    }
                }
            }
        }
        fn value(&mut self) -> J {
            self.ws();
            match self.b[self.i] {
                b'{' => {
                    self.i += 1;
                    let mut f = Vec::new();
                    self.ws();
                    if self.b[self.i] == b'}' {
                        self.i += 1;
                        return J::Obj(f);
                    }
                    loop {
                        let k = self.string();
                        self.eat(b':');
                        f.push((k, self.value()));
                        self.ws();
                        let c = self.b[self.i];
                        self.i += 1;
                        if c == b'}' {
                            return J::Obj(f);
                        }
                        assert_eq!(c, b',');
                    }
                }
                b'[' => {
                    self.i += 1;
                    let mut a = Vec::new();
                    self.ws();
                    if self.b[self.i] == b']' {
                        self.i += 1;
                        return J::Arr(a);
                    }
                    loop {
                        a.push(self.value());
                        self.ws();
                        let c = self.b[self.i];
                        self.i += 1;
                        if c == b']' {
                            return J::Arr(a);
                        }
                        assert_eq!(c, b',');
                    }
                }
                b'"' => J::Str(self.string()),
                b't' => {
                    self.i += 4;
                    J::Bool(true)
                }
                b'f' => {
                    self.i += 5;
                    J::Bool(false)
                }
                b'n' => {
                    self.i += 4;
                    J::Null
                }
                _ => {
                    let start = self.i;
                    while self.i < self.b.len()
                        && (self.b[self.i] == b'-' || self.b[self.i].is_ascii_digit())
                    {
                        self.i += 1;
                    }
                    J::Num(
                        std::str::from_utf8(&self.b[start..self.i])
                            .unwrap()
                            .parse()
                            .unwrap(),
                    )
                }
            }
        }
    }
    let mut p = P {
        b: text.as_bytes(),
        i: 0,
    };
    let v = p.value();
    p.ws();
    assert_eq!(p.i, text.len(), "trailing characters in {text}");
    v
}

fn plan(env: &StreamEnv) -> Vec<J> {
    let text = env.execution_plan().expect("execution plan");
    let j = parse_json(&text);
    assert_eq!(j.keys(), vec!["nodes"]);
    j.get("nodes").unwrap().arr().to_vec()
}

fn plan_ids(nodes: &[J]) -> Vec<i64> {
    nodes.iter().map(|n| n.get("id").unwrap().num()).collect()
}

/// `(predecessor id, ship strategy)` of the plan node with id `id`.
fn preds(nodes: &[J], id: i64) -> Vec<(i64, String)> {
    let n = nodes
        .iter()
        .find(|n| n.get("id").unwrap().num() == id)
        .unwrap_or_else(|| panic!("no plan node {id}"));
    match n.get("predecessors") {
        None => vec![],
        Some(p) => p
            .arr()
            .iter()
            .map(|e| {
                (
                    e.get("id").unwrap().num(),
                    e.get("ship_strategy").unwrap().str().to_string(),
                )
            })
            .collect(),
    }
}

// ---------------------------------------------------------------------------------------------
// chaining

#[test]
fn map_and_filter_at_equal_parallelism_form_one_vertex_named_a_arrow_b() {
    let env = env(2);
    let src = numbers(&env).set_parallelism(1);
    let a = src.map(|x| x + 1).name("a");
    let b = a.filter(|x| x % 2 == 0).name("b");
    b.discard().set_parallelism(1);
    let g = env.job_graph().unwrap();

    assert_eq!(
        vertex_names(&g),
        vec![
            s("Sink: Discard"),
            s("Source: Generator Source"),
            s("a -> b")
        ]
    );
    let ab = g.vertex_of(a.node_id().unwrap()).unwrap();
    assert_eq!(ab.name, "a -> b");
    assert_eq!(ab.parallelism, 2);
    assert_eq!(ab.nodes, vec![a.node_id().unwrap(), b.node_id().unwrap()]);
    assert_eq!(ab.head, a.node_id().unwrap());
    assert!(g
        .chained
        .contains(&(a.node_id().unwrap(), b.node_id().unwrap())));
    // Both parallelism changes are default edges, hence REBALANCE network edges.
    assert_eq!(
        edges(&g),
        vec![
            (
                s("Source: Generator Source"),
                s("a -> b"),
                ShipStrategy::Rebalance
            ),
            (s("a -> b"), s("Sink: Discard"), ShipStrategy::Rebalance),
        ]
    );
}

#[test]
fn a_source_chains_with_its_operators_and_sink_at_equal_parallelism() {
    let env = env(3);
    numbers(&env).map(|x| x * 2).filter(|x| *x > 3).discard();
    let g = env.job_graph().unwrap();
    assert_eq!(
        vertex_names(&g),
        vec![s(
            "Source: Generator Source -> Map -> Filter -> Sink: Discard"
        )]
    );
    assert!(g.edges.is_empty());
    assert_eq!(g.vertices[0].parallelism, 3);
    assert_eq!(g.chained.len(), 3);
}

#[test]
fn no_chain_across_a_parallelism_change_and_the_default_edge_is_rebalance() {
    let env = env(2);
    let m = numbers(&env).map(|x| x + 1).set_parallelism(2);
    let f = m.filter(|_| true).set_parallelism(3);
    let f2 = f.map(|x| x).name("Same").set_parallelism(3);
    f2.discard().set_parallelism(3);
    let g = env.job_graph().unwrap();
    assert_eq!(
        edges(&g),
        vec![(
            s("Source: Generator Source -> Map"),
            s("Filter -> Same -> Sink: Discard"),
            ShipStrategy::Rebalance
        )]
    );
    let resolved = &g.nodes[&f.node_id().unwrap()];
    assert_eq!(
        resolved.inputs,
        vec![(m.node_id().unwrap(), ShipStrategy::Rebalance)]
    );
    // Same parallelism on both sides of a default edge: FORWARD (and chained).
    assert_eq!(
        g.nodes[&f2.node_id().unwrap()].inputs,
        vec![(f.node_id().unwrap(), ShipStrategy::Forward)]
    );
}

#[test]
fn key_by_is_never_chained_and_ships_hash() {
    let env = env(2);
    let summed = numbers(&env)
        .map(|x| (x % 3, 1u64))
        .key_by(|r: &(u64, u64)| r.0 as i64)
        .sum(|r: &mut (u64, u64)| &mut r.1);
    summed.discard();
    let g = env.job_graph().unwrap();
    assert_eq!(
        edges(&g),
        vec![(
            s("Source: Generator Source -> Map"),
            s("Keyed Aggregation -> Sink: Discard"),
            ShipStrategy::Hash
        )]
    );
}

#[test]
fn explicit_partitioners_at_equal_parallelism_are_not_chained_but_forward_is() {
    for (which, want) in [
        ("rebalance", Some(ShipStrategy::Rebalance)),
        ("rescale", Some(ShipStrategy::Rescale)),
        ("shuffle", Some(ShipStrategy::Shuffle)),
        ("broadcast", Some(ShipStrategy::Broadcast)),
        ("global", Some(ShipStrategy::Global)),
        ("forward", None),
    ] {
        let env = env(2);
        let src = numbers(&env);
        let part = match which {
            "rebalance" => src.rebalance(),
            "rescale" => src.rescale(),
            "shuffle" => src.shuffle(),
            "broadcast" => src.broadcast(),
            "global" => src.global(),
            _ => src.forward(),
        };
        part.map(|x| x).discard();
        let g = env.job_graph().unwrap();
        match want {
            Some(strategy) => assert_eq!(
                edges(&g),
                vec![(
                    s("Source: Generator Source"),
                    s("Map -> Sink: Discard"),
                    strategy
                )],
                "{which}"
            ),
            None => {
                assert!(g.edges.is_empty(), "{which}: {:?}", edges(&g));
                assert_eq!(
                    vertex_names(&g),
                    vec![s("Source: Generator Source -> Map -> Sink: Discard")]
                );
            }
        }
    }
}

#[test]
fn disable_chaining_is_never_the_operator_chains_with_neither_side() {
    let env = env(2);
    let m = numbers(&env).map(|x| x).disable_chaining();
    m.filter(|_| true).discard();
    let g = env.job_graph().unwrap();
    assert_eq!(
        g.nodes[&m.node_id().unwrap()].chaining,
        ChainingStrategy::Never
    );
    assert_eq!(
        vertex_names(&g),
        vec![
            s("Filter -> Sink: Discard"),
            s("Map"),
            s("Source: Generator Source")
        ]
    );
    assert_eq!(
        edges(&g),
        vec![
            (
                s("Map"),
                s("Filter -> Sink: Discard"),
                ShipStrategy::Forward
            ),
            (
                s("Source: Generator Source"),
                s("Map"),
                ShipStrategy::Forward
            ),
        ]
    );
}

#[test]
fn start_new_chain_is_head_the_operator_still_chains_its_successors() {
    let env = env(2);
    let m = numbers(&env).map(|x| x).start_new_chain();
    m.filter(|_| true).discard();
    let g = env.job_graph().unwrap();
    assert_eq!(
        g.nodes[&m.node_id().unwrap()].chaining,
        ChainingStrategy::Head
    );
    assert_eq!(
        vertex_names(&g),
        vec![
            s("Map -> Filter -> Sink: Discard"),
            s("Source: Generator Source")
        ]
    );
    assert_eq!(
        edges(&g),
        vec![(
            s("Source: Generator Source"),
            s("Map -> Filter -> Sink: Discard"),
            ShipStrategy::Forward
        )]
    );
}

#[test]
fn chaining_settings_on_sinks() {
    let env = env(2);
    let m = numbers(&env).map(|x| x);
    m.discard().name("never").disable_chaining();
    m.discard().name("head").start_new_chain();
    m.discard().name("always");
    let g = env.job_graph().unwrap();
    assert_eq!(
        vertex_names(&g),
        vec![
            s("Sink: head"),
            s("Sink: never"),
            s("Source: Generator Source -> Map -> Sink: always")
        ]
    );
}

#[test]
fn disable_operator_chaining_gives_every_operator_its_own_vertex() {
    let env = env(2);
    env.disable_operator_chaining();
    numbers(&env).map(|x| x).filter(|_| true).discard();
    let g = env.job_graph().unwrap();
    assert!(g.chained.is_empty());
    assert_eq!(g.vertices.len(), 4);
    assert_eq!(
        vertex_names(&g),
        vec![
            s("Filter"),
            s("Map"),
            s("Sink: Discard"),
            s("Source: Generator Source")
        ]
    );
    assert_eq!(g.edges.len(), 3);
    assert!(g.edges.iter().all(|e| e.strategy == ShipStrategy::Forward));
}

#[test]
fn fan_out_is_named_with_parenthesised_comma_separated_branches() {
    let env = env(2);
    let a = numbers(&env).map(|x| x).name("a");
    let b = a.map(|x| x + 1).name("b");
    let c = a.map(|x| x + 2).name("c");
    b.discard().name("x");
    c.filter(|_| true).name("d").discard().name("y");
    let g = env.job_graph().unwrap();
    assert_eq!(
        vertex_names(&g),
        vec![s(
            "Source: Generator Source -> a -> (b -> Sink: x, c -> d -> Sink: y)"
        )]
    );
    assert!(g.edges.is_empty());

    // Fan-out directly below a chain head without a prefix: the head's name comes first.
    let env = env_with_fanout_at_head();
    let g = env.job_graph().unwrap();
    assert_eq!(
        vertex_names(&g),
        vec![
            s("Source: Generator Source"),
            s("m -> (Sink: one, Sink: two)")
        ]
    );
}

fn env_with_fanout_at_head() -> StreamEnv {
    let env = env(2);
    let m = numbers(&env).rebalance().map(|x| x).name("m");
    m.discard().name("one");
    m.discard().name("two");
    env
}

#[test]
fn a_union_input_is_not_chained() {
    let env = env(2);
    let s1 = numbers(&env).name("s1");
    let s2 = numbers(&env).name("s2");
    let m = s1.union(&[&s2]).map(|x| x);
    m.discard();
    let g = env.job_graph().unwrap();
    assert_eq!(
        vertex_names(&g),
        vec![s("Map -> Sink: Discard"), s("Source: s1"), s("Source: s2")]
    );
    assert_eq!(
        edges(&g),
        vec![
            (
                s("Source: s1"),
                s("Map -> Sink: Discard"),
                ShipStrategy::Forward
            ),
            (
                s("Source: s2"),
                s("Map -> Sink: Discard"),
                ShipStrategy::Forward
            ),
        ]
    );
    let mut inputs: Vec<usize> = g.edges.iter().map(|e| e.input).collect();
    inputs.sort();
    assert_eq!(inputs, vec![0, 1]);
    assert!(g.edges.iter().all(|e| e.to_node == m.node_id().unwrap()));
}

#[test]
fn explicit_forward_across_different_parallelisms_is_rejected_naming_both_operators() {
    let env = env(2);
    let up = numbers(&env).map(|x| x).name("up-op").set_parallelism(1);
    up.forward()
        .map(|x| x)
        .name("down-op")
        .set_parallelism(3)
        .discard();
    let err = env.job_graph().unwrap_err();
    match &err {
        GraphError::Plan(sluice_plan::PlanError::ForwardParallelismMismatch {
            upstream,
            upstream_parallelism,
            downstream,
            downstream_parallelism,
        }) => {
            assert_eq!(upstream, "up-op");
            assert_eq!(*upstream_parallelism, 1);
            assert_eq!(downstream, "down-op");
            assert_eq!(*downstream_parallelism, 3);
        }
        other => panic!("expected ForwardParallelismMismatch, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("up-op") && msg.contains("down-op"), "{msg}");
    assert!(
        msg.contains("Forward partitioning does not allow change of parallelism"),
        "{msg}"
    );
    // Every way of using the job reports it.
    assert!(matches!(
        env.execution_plan(),
        Err(GraphError::Plan(
            sluice_plan::PlanError::ForwardParallelismMismatch { .. }
        ))
    ));
    assert!(matches!(
        env.execute(),
        Err(GraphError::Plan(
            sluice_plan::PlanError::ForwardParallelismMismatch { .. }
        ))
    ));
}

#[test]
fn a_setting_on_a_partitioned_stream_is_an_invalid_job() {
    let env = env(2);
    numbers(&env)
        .rebalance()
        .set_parallelism(3)
        .map(|x| x)
        .discard();
    assert!(matches!(
        env.job_graph(),
        Err(GraphError::Plan(sluice_plan::PlanError::InvalidJob(_)))
    ));
}

#[test]
fn an_operator_without_a_sink_is_an_invalid_job() {
    let env = env(2);
    numbers(&env).map(|x| x).name("dangling");
    let msg = env.job_graph().unwrap_err().to_string();
    assert!(msg.contains("dangling"), "{msg}");
}

// ---------------------------------------------------------------------------------------------
// ids and the execution plan

#[test]
fn virtual_transformations_consume_ids_and_predecessors_skip_them() {
    let env = env(2);
    let s1 = numbers(&env); // 1
    let s2 = numbers(&env); // 2
    let u = s1.union(&[&s2]); // 3 (virtual)
    let m = u.map(|x| x + 1); // 4
    let k = m.key_by(|x: &u64| *x as i64); // 5 (virtual)
    let r = k.reduce(|a, b| a + b); // 6
    let rb = r.rebalance(); // 7 (virtual)
    let f = rb.filter(|_| true); // 8
    let sink = f.discard(); // 9
    assert_eq!(m.node_id(), Some(4));
    assert_eq!(r.node_id(), Some(6));
    assert_eq!(f.node_id(), Some(8));
    assert_eq!(sink.node_id(), 9);

    let nodes = plan(&env);
    assert_eq!(plan_ids(&nodes), vec![1, 2, 4, 6, 8, 9]);
    assert_eq!(preds(&nodes, 1), vec![]);
    assert_eq!(preds(&nodes, 4), vec![(1, s("FORWARD")), (2, s("FORWARD"))]);
    assert_eq!(preds(&nodes, 6), vec![(4, s("HASH"))]);
    assert_eq!(preds(&nodes, 8), vec![(6, s("REBALANCE"))]);
    assert_eq!(preds(&nodes, 9), vec![(8, s("FORWARD"))]);
    // Sources carry no predecessors key at all.
    assert!(nodes[0].get("predecessors").is_none());
}

#[test]
fn plan_nodes_have_flink_fields_in_order_and_sinks_come_last() {
    let env = env(2);
    let src = numbers(&env); // 1
    src.discard().name("early"); // 2
    let m = src.map(|x| x).set_parallelism(3); // 3
    m.collect(); // 4
    m.filter(|_| true)
        .set_parallelism(3)
        .print()
        .set_parallelism(3); // 5, 6
    let nodes = plan(&env);
    assert_eq!(plan_ids(&nodes), vec![1, 3, 5, 2, 4, 6]);
    let kinds: Vec<&str> = nodes.iter().map(|n| n.get("pact").unwrap().str()).collect();
    assert_eq!(
        kinds,
        vec![
            "Data Source",
            "Operator",
            "Operator",
            "Data Sink",
            "Data Sink",
            "Data Sink"
        ]
    );
    assert_eq!(
        nodes[0].keys(),
        vec!["id", "type", "pact", "contents", "parallelism"]
    );
    assert_eq!(
        nodes[1].keys(),
        vec![
            "id",
            "type",
            "pact",
            "contents",
            "parallelism",
            "predecessors"
        ]
    );
    let by_id = |id: i64| {
        nodes
            .iter()
            .find(|n| n.get("id").unwrap().num() == id)
            .unwrap()
    };
    assert_eq!(
        by_id(1).get("type").unwrap().str(),
        "Source: Generator Source"
    );
    assert_eq!(by_id(2).get("contents").unwrap().str(), "Sink: early");
    assert_eq!(by_id(3).get("parallelism").unwrap().num(), 3);
    assert_eq!(
        by_id(6).get("type").unwrap().str(),
        "Sink: Print to Std. Out"
    );
    assert_eq!(preds(&nodes, 3), vec![(1, s("REBALANCE"))]);
    assert_eq!(preds(&nodes, 6), vec![(5, s("FORWARD"))]);
}

#[test]
fn predecessor_side_is_always_second() {
    let env = env(2);
    let s1 = numbers(&env);
    let s2 = numbers(&env).set_parallelism(1);
    let s3 = numbers(&env);
    let u = s1.union(&[&s2, &s3.broadcast()]);
    u.map(|x| x).discard();
    let nodes = plan(&env);
    let mut edges_seen = 0;
    for n in &nodes {
        if let Some(p) = n.get("predecessors") {
            for e in p.arr() {
                assert_eq!(e.keys(), vec!["id", "ship_strategy", "side"]);
                assert_eq!(e.get("side").unwrap().str(), "second");
                edges_seen += 1;
            }
        }
    }
    assert_eq!(edges_seen, 4);
    let map_id = nodes
        .iter()
        .find(|n| n.get("type").unwrap().str() == "Map")
        .unwrap()
        .get("id")
        .unwrap()
        .num();
    assert_eq!(
        preds(&nodes, map_id),
        vec![(1, s("FORWARD")), (2, s("REBALANCE")), (3, s("BROADCAST"))]
    );
}
