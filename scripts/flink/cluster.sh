#!/usr/bin/env bash
# Sluice's standalone Apache Flink 2.3 session cluster: one JobManager process
# (StandaloneSessionClusterEntrypoint) and TaskManager processes (TaskManagerRunner), each a
# plain `java` from the Flink jars that the PyPI package apache-flink-libraries==2.3.0 ships,
# configured by a config.yaml this script writes per process (Flink 2.x reads config.yaml), every
# listener on 127.0.0.1. Unlike run-scenario.sh's MiniCluster (one JVM), each TaskManager is its own
# JVM with its own heap, so Flink reports per-TaskManager JVM metrics (GC, heap, CPU) on
# /taskmanagers/:tmid/metrics: what the doctor's GC-stall verdict reads. Jobs go in through Flink's
# own REST API (POST /jars/upload, POST /jars/:jarid/run), as a user submits them.
#
#   cluster.sh check                      exit 0 when a JDK and the Flink jars are here, else say what is missing
#   cluster.sh start DIR PORT [TM ...]    a JobManager with REST on 127.0.0.1:PORT, then the TaskManagers
#   cluster.sh add-tm DIR TM              one more TaskManager (a job submitted before it cannot use it)
#   cluster.sh submit DIR CLASS [ARG ...] upload the harness jar (once) and run CLASS with ARGs; prints the job id
#   cluster.sh stop DIR                   stop every process of the cluster by its pid file (never by name)
#
# TM is NAME=HEAP[/SLOTS]: NAME becomes the TaskManager's resource id (its id on /taskmanagers), HEAP
# its task heap (taskmanager.memory.task.heap.size, e.g. 48m; the JVM's -Xmx adds the 64m framework
# heap), SLOTS its taskmanager.numberOfTaskSlots (default 1). Each process logs (warnings and errors)
# to DIR/<name>.log; pids are in DIR/<name>.pid. The JVM flags and memory options of a TaskManager
# come from Flink's own BashJavaUtils (what Flink's taskmanager.sh does), the job classes from
# src/ (ClusterJobs.java is the entry class for this cluster's scenarios), built into a jar.
# Needs java/javac/jar 17 (Debian: openjdk-17-jdk-headless), python3 with apache-flink-libraries,
# and curl (.ci/run installs them).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

missing() { echo "cluster.sh: $*" >&2; exit 1; }

flink_home() {
  if [ -n "${PYFLINK_DIR:-}" ]; then echo "$PYFLINK_DIR"; return; fi
  python3 -c 'import pyflink; print(list(pyflink.__path__)[0])' 2>/dev/null
}

for tool in java javac jar; do
  command -v $tool >/dev/null || missing "no JDK: $tool not found (apt-get install openjdk-17-jdk-headless)"
done
command -v python3 >/dev/null || missing "python3 not found (it locates the Flink jars of apache-flink-libraries)"
command -v curl >/dev/null || missing "curl not found (jobs are submitted through Flink's REST API)"
pyflink="$(flink_home || true)"
dist=$(ls "$pyflink"/lib/flink-dist-*.jar 2>/dev/null | head -1 || true)
[ -n "$pyflink" ] && [ -n "$dist" ] && [ -f "$pyflink/bin/bash-java-utils.jar" ] ||
  missing "no Flink jars: python3 cannot import pyflink with lib/flink-dist-*.jar and bin/bash-java-utils.jar (pip install apache-flink-libraries==2.3.0)"
classpath="$dist"
for jar in "$pyflink"/lib/log4j-*.jar; do classpath="$classpath:$jar"; done

# Java 17 hides JDK internals that Flink reaches into: the module openings of Flink's launch scripts.
opens=()
for pkg in java.lang java.lang.reflect java.io java.net java.nio sun.nio.ch java.text java.time \
  java.util java.util.concurrent java.util.concurrent.atomic java.util.concurrent.locks; do
  opens+=("--add-opens=java.base/$pkg=ALL-UNNAMED")
done
opens+=(--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED
  --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED)

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The settings every process shares: loopback listeners, the JobManager's RPC endpoint, flame
# graphs, and a metric fetcher that refreshes every second (Flink's default is 10 s, too coarse
# for a doctor sampling a window of seconds).
common_config() {
  local dir=$1
  cat <<EOF
jobmanager.rpc.address: 127.0.0.1
jobmanager.rpc.port: $(cat "$dir/rpc.port")
jobmanager.bind-host: 127.0.0.1
rest.address: 127.0.0.1
rest.bind-address: 127.0.0.1
rest.port: $(cat "$dir/rest.port")
rest.flamegraph.enabled: true
metrics.fetcher.update-interval: 1000
taskmanager.host: 127.0.0.1
taskmanager.bind-host: 127.0.0.1
io.tmp.dirs: $dir/tmp
web.upload.dir: $dir/upload
EOF
}

# BashJavaUtils prints two result lines: the JVM's memory flags, then the -D options the process
# must be started with (the derived memory sizes).
resource_params() {
  local what=$1 conf=$2
  java -cp "$pyflink/bin/bash-java-utils.jar:$classpath" \
    org.apache.flink.runtime.util.bash.BashJavaUtils "$what" --configDir "$conf" 2>&1 |
    sed -n 's/^BASH_JAVA_UTILS_EXEC_RESULT://p'
}

# Starts `java MAIN` in the background with its pid in DIR/NAME.pid and its log in DIR/NAME.log.
launch() {
  local dir=$1 name=$2 main=$3 conf=$4
  local params jvm dyn
  params=$(resource_params "$5" "$conf")
  jvm=$(sed -n 1p <<<"$params")
  dyn=$(sed -n 2p <<<"$params")
  [ -n "$jvm" ] || { cat "$conf/config.yaml" >&2; missing "BashJavaUtils derived no memory settings for $name"; }
  # shellcheck disable=SC2086 # jvm and dyn are word lists by design (Flink's scripts do the same)
  nohup java $jvm "${opens[@]}" -Dlog4j.configurationFile="$here/log4j2.properties" \
    -cp "$classpath" "$main" --configDir "$conf" $dyn >"$dir/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/$name.pid"
}

start_tm() {
  local dir=$1 spec=$2
  local name=${spec%%=*} rest=${spec#*=}
  local heap=${rest%%/*} slots=1
  [[ "$rest" == */* ]] && slots=${rest#*/}
  [[ "$name" =~ ^[A-Za-z0-9_-]+$ && "$heap" =~ ^[0-9]+[kmg]$ && "$slots" =~ ^[0-9]+$ ]] ||
    missing "a TaskManager is NAME=HEAP[/SLOTS] (e.g. small=48m/1), not '$spec'"
  [ -e "$dir/$name.pid" ] && missing "$dir already has a process named $name"
  local conf="$dir/conf-$name"
  mkdir -p "$conf"
  {
    common_config "$dir"
    cat <<EOF
taskmanager.resource-id: $name
taskmanager.numberOfTaskSlots: $slots
taskmanager.memory.task.heap.size: $heap
taskmanager.memory.framework.heap.size: 64m
taskmanager.memory.managed.size: 32m
taskmanager.memory.network.min: 32m
taskmanager.memory.network.max: 32m
taskmanager.memory.jvm-metaspace.size: 192m
taskmanager.memory.jvm-overhead.min: 64m
taskmanager.memory.jvm-overhead.max: 64m
EOF
  } >"$conf/config.yaml"
  launch "$dir" "$name" org.apache.flink.runtime.taskexecutor.TaskManagerRunner "$conf" GET_TM_RESOURCE_PARAMS
  echo "TASKMANAGER $name pid $(cat "$dir/$name.pid")"
}

start() {
  local dir=$1 port=$2
  shift 2
  [ -e "$dir/jobmanager.pid" ] && missing "$dir already holds a cluster (stop it first)"
  mkdir -p "$dir/tmp" "$dir/upload" "$dir/conf-jobmanager"
  [ "$port" = 0 ] && port=$(free_port)
  echo "$port" >"$dir/rest.port"
  free_port >"$dir/rpc.port"
  {
    common_config "$dir"
    echo "jobmanager.memory.process.size: 768m"
  } >"$dir/conf-jobmanager/config.yaml"
  launch "$dir" jobmanager org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint \
    "$dir/conf-jobmanager" GET_JM_RESOURCE_PARAMS
  echo "JOBMANAGER pid $(cat "$dir/jobmanager.pid") rest http://127.0.0.1:$port"
  for tm in "$@"; do start_tm "$dir" "$tm"; done
}

# The job classes (src/, Java 17) in a jar, built once per version of the sources and jars.
build_jar() {
  local stamp build fresh
  stamp=$( (cat "$here"/src/sluice/harness/*.java; echo "$classpath") | sha256sum | cut -c1-16)
  build="${SLUICE_FLINK_BUILD:-$repo/target/flink-harness}/jar-$stamp"
  if [ ! -f "$build/harness.jar" ]; then
    mkdir -p "$(dirname "$build")"
    fresh=$(mktemp -d "$build.XXXXXX")
    javac -nowarn --release 17 -d "$fresh/classes" -cp "$classpath" "$here"/src/sluice/harness/*.java >&2 ||
      { rm -rf "$fresh"; missing "the harness jobs do not compile"; }
    jar --create --file "$fresh/harness.jar" -C "$fresh/classes" . >&2
    mv -T "$fresh" "$build" 2>/dev/null || rm -rf "$fresh"
  fi
  echo "$build/harness.jar"
}

# Flink's REST API: upload the jar (multipart, field jarfile), then run it; the run answers
# {"jobid": …} once the job is submitted.
submit() {
  local dir=$1 entry=$2
  shift 2
  local rest jar jarid args answer
  rest="http://127.0.0.1:$(cat "$dir/rest.port")"
  if [ ! -s "$dir/jar.id" ]; then
    jar=$(build_jar)
    answer=$(curl -sS --fail-with-body -X POST -F "jarfile=@$jar;type=application/x-java-archive" "$rest/jars/upload") ||
      missing "jar upload failed: $answer"
    python3 -c 'import json,sys,os; print(os.path.basename(json.load(sys.stdin)["filename"]))' <<<"$answer" >"$dir/jar.id"
  fi
  jarid=$(cat "$dir/jar.id")
  args=$(python3 -c 'import json,sys; print(json.dumps({"entryClass": sys.argv[1], "programArgsList": sys.argv[2:]}))' "$entry" "$@")
  answer=$(curl -sS --fail-with-body -X POST -H 'Content-Type: application/json' -d "$args" "$rest/jars/$jarid/run") ||
    missing "job run failed: $answer"
  python3 -c 'import json,sys; print("JOB_ID", json.load(sys.stdin)["jobid"])' <<<"$answer"
}

# Stops every process by its pid file: TERM, then KILL after 10 s; a pid that is no longer ours
# (not a java process) is left alone.
stop() {
  local dir=$1 pid f
  for f in "$dir"/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = java ]; then kill "$pid" 2>/dev/null || true; fi
  done
  for f in "$dir"/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 1 40); do [ -e "/proc/$pid" ] || break; sleep 0.25; done
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = java ]; then kill -9 "$pid" 2>/dev/null || true; fi
    rm -f "$f"
  done
  rm -f "$dir/jar.id"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  check) echo "Flink jars: $pyflink/lib; $(javac -version 2>&1)" ;;
  start) [ $# -ge 2 ] || missing "usage: cluster.sh start DIR PORT [NAME=HEAP[/SLOTS] ...]"; start "$@" ;;
  add-tm) [ $# -eq 2 ] || missing "usage: cluster.sh add-tm DIR NAME=HEAP[/SLOTS]"; start_tm "$@" ;;
  submit) [ $# -ge 2 ] || missing "usage: cluster.sh submit DIR CLASS [ARG ...]"; submit "$@" ;;
  stop) [ $# -eq 1 ] || missing "usage: cluster.sh stop DIR"; stop "$1" ;;
  *) missing "usage: cluster.sh check | start DIR PORT [TM ...] | add-tm DIR TM | submit DIR CLASS [ARG ...] | stop DIR" ;;
esac
