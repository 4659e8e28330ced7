//! `sluice profile`: a vertex's flame graph from a Flink-compatible REST API (Sluice's or an
//! Apache Flink cluster's `GET /jobs/:jid/vertices/:vid/flamegraph`), written as Brendan Gregg's
//! folded stacks or as an SVG drawn by `inferno`. The server samples (the first request answers
//! `endTimestamp: -3`, "sampling"); this command asks again until the graph is there.
//!
//! The fetching is the doctor's ([`fetch_flame_graph`], which `sluice doctor` uses for the
//! bottleneck's graphs); this module is flags, folding and drawing.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use sluice_client::LiveSource;
use sluice_doctor::examine::{fetch_flame_graph, FlameType as DoctorFlameType};
use sluice_doctor::{FlameTree, RestSource};

use crate::top::pick_job;

/// Flink's flame graph types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FlameType {
    /// On- and off-CPU samples together.
    Full,
    /// Threads running on a CPU.
    #[value(name = "on_cpu")]
    OnCpu,
    /// Threads waiting (for input, for credit, in a call).
    #[value(name = "off_cpu")]
    OffCpu,
}

impl FlameType {
    /// The doctor's name for it.
    pub fn doctor(self) -> DoctorFlameType {
        match self {
            FlameType::Full => DoctorFlameType::Full,
            FlameType::OnCpu => DoctorFlameType::OnCpu,
            FlameType::OffCpu => DoctorFlameType::OffCpu,
        }
    }

    /// The name in Flink's `?type=` query.
    pub fn as_str(self) -> &'static str {
        self.doctor().as_str()
    }
}

/// Arguments of `sluice profile`.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("out").required(true).multiple(true).args(["svg", "folded"])))]
pub struct ProfileArgs {
    /// REST API of the job: Sluice's, or an Apache Flink JobManager's (with
    /// rest.flamegraph.enabled: true).
    #[arg(long, default_value = "http://127.0.0.1:8081")]
    pub url: String,
    #[command(flatten)]
    pub client: sluice_client::ClientArgs,
    /// Job id; default: the first RUNNING job, else the most recently started one.
    #[arg(long)]
    pub job: Option<String>,
    /// The vertex: its full name, or a part of it that only one vertex's name contains.
    #[arg(long, value_name = "NAME")]
    pub vertex: String,
    /// Which samples: full, on_cpu (running) or off_cpu (waiting).
    #[arg(long = "type", value_enum, default_value = "full")]
    pub flame_type: FlameType,
    /// Only this subtask (0-based).
    #[arg(long, value_name = "N")]
    pub subtask: Option<usize>,
    /// Wait at most this long for the server's sampling run (Flink's and Sluice's take ~5 s).
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub seconds: u64,
    /// Write an SVG flame graph (inferno) to F.
    #[arg(long, value_name = "F")]
    pub svg: Option<PathBuf>,
    /// Write folded stacks (`frame;frame;frame count` per line) to F.
    #[arg(long, value_name = "F")]
    pub folded: Option<PathBuf>,
}

/// The id of the vertex whose name is `wanted` or, failing that, the only one containing it.
pub fn find_vertex(job: &Value, wanted: &str) -> anyhow::Result<(String, String)> {
    let vertices: Vec<(String, String)> = job
        .get("vertices")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .map(|v| {
                    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    (s("id"), s("name"))
                })
                .collect()
        })
        .unwrap_or_default();
    if let Some(v) = vertices.iter().find(|(_, n)| n == wanted) {
        return Ok(v.clone());
    }
    let matching: Vec<&(String, String)> = vertices
        .iter()
        .filter(|(_, n)| n.contains(wanted))
        .collect();
    let names = || {
        vertices
            .iter()
            .map(|(_, n)| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        [] => anyhow::bail!(
            "no vertex named like `{wanted}`; the job's vertices: {}",
            names()
        ),
        _ => anyhow::bail!(
            "`{wanted}` names several vertices ({}); give more of the name",
            matching
                .iter()
                .map(|(_, n)| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Brendan Gregg's folded format of a tree: one `a;b;c self-count` line per frame with self
/// samples (the root left out; `;` in a frame name becomes `:`).
pub fn folded(tree: &FlameTree) -> String {
    fn walk<'a>(n: &'a FlameTree, path: &mut Vec<&'a str>, out: &mut String) {
        path.push(&n.name);
        let own = n
            .value
            .saturating_sub(n.children.iter().map(|c| c.value).sum());
        if own > 0 {
            let frames: Vec<String> = path.iter().map(|f| f.replace(';', ":")).collect();
            out.push_str(&format!("{} {own}\n", frames.join(";")));
        }
        for c in &n.children {
            walk(c, path, out);
        }
        path.pop();
    }
    let mut out = String::new();
    for c in &tree.children {
        walk(c, &mut Vec::new(), &mut out);
    }
    out
}

/// An SVG flame graph of folded stacks, titled `title`.
pub fn svg(folded: &str, title: &str, ty: FlameType) -> anyhow::Result<Vec<u8>> {
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "samples".to_string();
    if ty == FlameType::OffCpu {
        opts.colors =
            inferno::flamegraph::Palette::Basic(inferno::flamegraph::color::BasicPalette::Io);
    }
    let mut out = Vec::new();
    if folded.is_empty() {
        // inferno refuses an empty input; an empty graph is still an answer.
        inferno::flamegraph::from_lines(&mut opts, ["[no samples] 1"], &mut out)
    } else {
        inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut out)
    }
    .context("cannot draw the flame graph")?;
    Ok(out)
}

pub fn profile(args: ProfileArgs) -> anyhow::Result<ExitCode> {
    let src = LiveSource::with(&args.url, &args.client)?;
    let overview = src
        .get("/jobs/overview")?
        .ok_or_else(|| anyhow::anyhow!("{}: no /jobs/overview", src.describe()))?;
    let jid = pick_job(&overview, args.job.as_deref(), &src.describe())?;
    let job = src
        .get(&format!("/jobs/{jid}"))?
        .ok_or_else(|| anyhow::anyhow!("job {jid} not found"))?;
    let (vid, name) = find_vertex(&job, &args.vertex)?;
    let (tree, end) = fetch_flame_graph(
        &src,
        &jid,
        &vid,
        args.flame_type.doctor(),
        args.subtask,
        Duration::from_secs(args.seconds),
    )?;
    let folded = folded(&tree);
    if let Some(f) = &args.folded {
        std::fs::write(f, &folded).with_context(|| format!("cannot write {}", f.display()))?;
    }
    if let Some(f) = &args.svg {
        let mut title = format!("{name}: {}", args.flame_type.as_str());
        if let Some(i) = args.subtask {
            title.push_str(&format!(", subtask {i}"));
        }
        let bytes = svg(&folded, &title, args.flame_type)?;
        std::fs::write(f, bytes).with_context(|| format!("cannot write {}", f.display()))?;
    }
    eprintln!(
        "{name}: {} samples ({}), sampled until {end} ms",
        tree.value,
        args.flame_type.as_str()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(p: &str) -> Value {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/flink/flink-rest"
        );
        sluice_client::parse_json(&std::fs::read(format!("{dir}/{p}")).unwrap()).unwrap()
    }

    #[test]
    fn flinks_graph_folds_and_draws() {
        let g = fixture("skew/v1-sum-per-key-counting-sink-writer-flamegraph-call2.json");
        let tree = FlameTree::from_answer(&g).unwrap();
        let f = folded(&tree);
        let total: u64 = f
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, tree.value);
        assert!(
            f.lines()
                .any(|l| l.contains("SumReduce.reduce:190;bench.Common.work:153 91")),
            "{f}"
        );
        let svg = String::from_utf8(svg(&f, "sum-per-key", FlameType::Full).unwrap()).unwrap();
        assert!(
            svg.starts_with("<?xml") && svg.contains("bench.Common.work"),
            "{}",
            &svg[..200]
        );
        assert!(svg.contains("sum-per-key"));
        assert!(String::from_utf8(svg_empty())
            .unwrap()
            .contains("no samples"));
    }

    fn svg_empty() -> Vec<u8> {
        svg("", "empty", FlameType::OffCpu).unwrap()
    }

    #[test]
    fn vertices_are_found_by_name_or_unique_part() {
        let job = fixture("skew/job.json");
        let (_, n) = find_vertex(&job, "sum-per-key").unwrap();
        assert!(n.starts_with("sum-per-key"), "{n}");
        let e = find_vertex(&job, "nope").unwrap_err().to_string();
        assert!(
            e.contains("no vertex") && e.contains("Source: generator"),
            "{e}"
        );
        let e = find_vertex(&job, "-").unwrap_err().to_string();
        assert!(e.contains("several"), "{e}");
    }
}
