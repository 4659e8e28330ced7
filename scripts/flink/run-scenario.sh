#!/usr/bin/env bash
# Sluice's own Apache Flink harness: compiles the scenario runner (src/, Java 17) against the Flink
# 2.3 jars that the PyPI package apache-flink-libraries==2.3.0 ships, then runs one scenario job on
# a MiniCluster with Flink's REST API on 127.0.0.1:PORT until STOP_FILE exists or MAX_SECONDS pass.
#
#   run-scenario.sh SCENARIO PORT STOP_FILE [MAX_SECONDS] [--scheduler adaptive] [--parallelism N] ...
#   run-scenario.sh --check      # exit 0 if a JDK and the Flink jars are here, else say what is missing
#
# Scenarios (src/sluice/harness/ScenarioRunner.java says more):
#   underprov  generator(p=1) -FORWARD-> heavy-map(p=1) -HASH-> sum-per-key(p=2) -> sink
#   skew       generator(p=2) -> map -HASH-> sum-per-key (80% of records on key 0) -> sink
#   chained    generator -> heavy-map chained (p=1) -HASH-> sum-per-key -> sink
#   blocking-sink  generator -> map -> db-sink (sleeps per write) chained (p=1)
#   kryo       generator -> to-event -HASH-> latest-per-key -> sink over a non-POJO type (Kryo)
# A MiniCluster's TaskManagers share one JVM and report no JVM metrics of their own: cluster.sh
# starts a standalone session cluster (JobManager and TaskManager processes) for those.
# Needs: javac/java 17 (Debian: openjdk-17-jdk-headless) and python3 with apache-flink-libraries
# (.ci/run installs both). The classes go to target/flink-harness/<hash of the sources>/ (or
# $SLUICE_FLINK_BUILD), built once and shared by concurrent runs.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

missing() { echo "run-scenario.sh: $*" >&2; exit 1; }

# The pyflink folder (apache-flink-libraries installs pyflink as a namespace package, whose
# __file__ is None: take its __path__).
flink_home() {
  if [ -n "${PYFLINK_DIR:-}" ]; then echo "$PYFLINK_DIR"; return; fi
  python3 - <<'PY' 2>/dev/null
import pyflink
print(list(pyflink.__path__)[0])
PY
}

command -v javac >/dev/null || missing "no JDK: javac not found (apt-get install openjdk-17-jdk-headless)"
command -v java >/dev/null || missing "no JDK: java not found (apt-get install openjdk-17-jdk-headless)"
command -v python3 >/dev/null || missing "python3 not found (it locates the Flink jars of apache-flink-libraries)"
pyflink="$(flink_home || true)"
dist=$(ls "$pyflink"/lib/flink-dist-*.jar 2>/dev/null | head -1 || true)
[ -n "$pyflink" ] && [ -n "$dist" ] ||
  missing "no Flink jars: python3 cannot import pyflink with lib/flink-dist-*.jar (pip install apache-flink-libraries==2.3.0)"
classpath="$dist"
for jar in "$pyflink"/lib/log4j-*.jar; do classpath="$classpath:$jar"; done

if [ "${1:-}" = "--check" ]; then
  echo "Flink jars: $pyflink/lib; $(javac -version 2>&1)"
  exit 0
fi
[ $# -ge 3 ] || missing "usage: run-scenario.sh SCENARIO PORT STOP_FILE [MAX_SECONDS] [job flags]"
scenario=$1 port=$2 stop=$3
max=${4:-300}
shift 3
[ $# -gt 0 ] && shift

# Build once per version of the sources and jars; a concurrent run builds its own copy and the
# first rename wins.
stamp=$( (cat "$here"/src/sluice/harness/*.java "$here/log4j2.properties"; echo "$classpath") | sha256sum | cut -c1-16)
build="${SLUICE_FLINK_BUILD:-$repo/target/flink-harness}/$stamp"
if [ ! -f "$build/classes/log4j2.properties" ]; then
  mkdir -p "$(dirname "$build")"
  fresh=$(mktemp -d "$build.XXXXXX")
  javac -nowarn --release 17 -d "$fresh/classes" -cp "$classpath" "$here"/src/sluice/harness/*.java ||
    { rm -rf "$fresh"; missing "the scenario runner does not compile"; }
  cp "$here/log4j2.properties" "$fresh/classes/"
  mv -T "$fresh" "$build" 2>/dev/null || rm -rf "$fresh"
fi

# Java 17 hides JDK internals that Flink (Kryo, Netty, its closure cleaner) reaches into; these
# are the module openings Flink's own launch scripts pass.
opens=()
for pkg in java.lang java.lang.reflect java.io java.net java.nio sun.nio.ch java.text java.time \
  java.util java.util.concurrent java.util.concurrent.atomic java.util.concurrent.locks; do
  opens+=("--add-opens=java.base/$pkg=ALL-UNNAMED")
done
opens+=(--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED
  --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED)

exec java -Xmx1g "${opens[@]}" -Dlog4j.configurationFile="$build/classes/log4j2.properties" \
  -cp "$build/classes:$classpath" sluice.harness.ScenarioRunner \
  --scenario "$scenario" --rest-port "$port" --stop-file "$stop" --max-seconds "$max" "$@"
