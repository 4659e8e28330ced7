#!/usr/bin/env python3
"""The dependency-graph invariants of ARCHITECTURE.md's code map, checked on `cargo metadata`.

Each rule names a crate and what it must not depend on (normal dependencies unless the rule says
dev-dependencies count too). Run from anywhere in the workspace: `scripts/check-deps.py`;
exits 1 naming every broken rule. scripts/test.sh runs it.
"""
import json
import subprocess
import sys

ENGINE = {"sluice-channel", "sluice-net", "sluice-metrics", "sluice-state", "sluice-checkpoint",
          "sluice-operators", "sluice-profiler", "sluice-runtime", "sluice-datastream"}
REST = {"sluice-rest", "sluice-rest-tests"}
SQL_IMPURE = ENGINE | REST | {"sluice-plan", "sluice-doctor", "sluice-jobs", "sluice", "sluice-table",
                              "sluice-table-stateful"}

# (crate, forbidden crates, include dev-dependencies, why)
RULES = [
    ("sluice-types", "ANY-SLUICE", False, "the shared vocabulary depends on no other crate of ours"),
    ("sluice-csv", "ANY", False, "the CSV writer has no dependencies"),
    ("sluice-plan", ENGINE, False, "planning is pure: no runtime types"),
    ("sluice-channel", ENGINE - {"sluice-channel"}, False, "the exchange knows no engine crate"),
    ("sluice-net", ENGINE - {"sluice-channel", "sluice-net"}, False, "the network exchange is below the runtime"),
    ("sluice-metrics", {"sluice-state", "sluice-checkpoint", "sluice-operators", "sluice-runtime",
                        "sluice-profiler"}, False, "counters sit below what counts into them"),
    ("sluice-state", ENGINE - {"sluice-metrics", "sluice-state"} | REST, False,
     "state knows no channels, checkpoints, tasks or operators"),
    ("sluice-checkpoint", {"sluice-operators", "sluice-runtime", "sluice-datastream"} | REST, False,
     "checkpointing runs no tasks and knows no operators"),
    ("sluice-operators", {"sluice-runtime", "sluice-datastream", "sluice-doctor"} | REST, False,
     "operators spawn no task threads and know no API or REST"),
    ("sluice-runtime", {"sluice-datastream", "sluice-doctor", "sluice-autopilot"} | REST, False,
     "the runtime never decides placement and serves no REST"),
    ("sluice-datastream", REST | {"sluice-doctor"}, True, "the DataStream API depends on no REST crate"),
    ("sluice-rest", {"sluice-datastream", "sluice-jobs", "sluice"}, True,
     "the REST server depends on no DataStream API crate, dev-dependencies included"),
    ("sluice-rest-api", "ANY-SLUICE", False, "REST shapes only: no crate of ours"),
    ("sluice-client", ENGINE, False, "the REST client has no engine crate"),
    ("sluice-doctor", ENGINE | REST | {"sluice-client"}, False, "the doctor is pure: no engine, no I/O crate"),
    ("sluice-autopilot", ENGINE | REST, False, "the autopilot drives jobs through REST only"),
    ("sluice-sql", SQL_IMPURE, False, "SQL planning is pure: no engine, no REST, no jobs"),
    ("sluice-sql-front", SQL_IMPURE | {"sluice-sql-expr", "sluice-sql-plan"}, False,
     "the statement layer sits below expressions and the planner"),
    ("sluice-sql-expr", SQL_IMPURE | {"sluice-sql-plan"}, False, "expressions sit below the planner"),
    ("sluice-sql-plan", SQL_IMPURE, False, "the planner is pure: plans are data"),
    ("sluice-nexmark", ENGINE | {"sluice-types", "sluice-plan"}, False, "the generator depends only on sluice-csv"),
    ("sluice-table", REST | {"sluice", "sluice-doctor", "sluice-autopilot", "sluice-jobs"}, False,
     "the SQL runtime is built on the DataStream API alone, below the user's crate"),
    ("sluice-table-stateful", REST | {"sluice", "sluice-doctor", "sluice-autopilot", "sluice-jobs",
                                      "sluice-table", "sluice-kafka", "sluice-postgres",
                                      "sluice-lookup", "sluice-nexmark"}, False,
     "SQL's stateful operators know no connector and no planner's caller"),
]

# Crates no engine, REST or doctor crate may depend on (normal dependencies).
LEAVES = {
    "sluice-jobs": "the built-in jobs are a library of jobs, never part of the engine",
    "sluice-testkit": "the test servers are a dev-dependency only",
    "sluice-cli": "the binary is a leaf",
    "sluice-table": "SQL runs on the engine, never inside it",
    "sluice-table-stateful": "SQL runs on the engine, never inside it",
}
# Only the binary (and tests, examples) may use anyhow.
ANYHOW_OK = {"sluice-cli", "sluice-examples", "sluice-example-kafka-to-postgres"}


def main():
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"],
                                     check=True, capture_output=True, text=True).stdout)
    pkgs = {p["name"]: p for p in meta["packages"]}
    broken = []

    def deps(name, dev):
        return {d["name"] for d in pkgs[name]["dependencies"]
                if d["kind"] in (None, "build") or (dev and d["kind"] == "dev")}

    for crate, forbidden, dev, why in RULES:
        if crate not in pkgs:
            broken.append(f"{crate}: no such crate (the rule '{why}' checks nothing)")
            continue
        have = deps(crate, dev) - {crate}
        if forbidden == "ANY":
            bad = have
        elif forbidden == "ANY-SLUICE":
            bad = {d for d in have if d.startswith("sluice")}
        else:
            bad = have & forbidden
        if bad:
            broken.append(f"{crate} depends on {sorted(bad)}: {why}")
    for name in pkgs:
        normal = deps(name, False)
        for leaf, why in LEAVES.items():
            if leaf in normal and (name in ENGINE | REST or name in {"sluice-doctor", "sluice-plan", "sluice-types"}):
                broken.append(f"{name} depends on {leaf}: {why}")
        if "sluice-testkit" in normal:
            broken.append(f"{name} depends on sluice-testkit outside dev-dependencies: {LEAVES['sluice-testkit']}")
        if "anyhow" in normal and name not in ANYHOW_OK:
            broken.append(f"{name} depends on anyhow: libraries return their own error enum")
    for b in broken:
        print("check-deps:", b, file=sys.stderr)
    print(f"check-deps: {len(RULES)} crate rules, {len(pkgs)} crates: "
          + ("ok" if not broken else f"{len(broken)} broken"))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
