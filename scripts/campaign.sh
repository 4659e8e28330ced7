#!/usr/bin/env bash
# Issue 31's full campaign: exactly once under SIGKILLs, network partitions and SIGSTOPs of a job
# split over 3 processes in 3 network namespaces (Kafka and PostgreSQL in a 4th), the same
# driver as the suite's short `ci_campaign` (crates/cli/tests/it/campaign/mod.rs) with larger
# settings, in a release build. Needs root and iproute2's `ip`.
#
# Settings (environment, defaults in brackets):
#   SLUICE_CAMPAIGN_RECORDS [20000000]  input records (one Kafka topic, 3 partitions)
#   SLUICE_CAMPAIGN_KILLS [10]  SLUICE_CAMPAIGN_PARTITIONS [5]  SLUICE_CAMPAIGN_STOPS [3]  per job
#   SLUICE_CAMPAIGN_JOBS [ab]  a: Kafka -> keyed sum -> PostgreSQL (append, two-phase commit);
#                              b: Kafka -> keyed sum -> Kafka (transactions)
#   SLUICE_CAMPAIGN_SEED  replays a campaign (every run prints its seed)
#   SLUICE_CAMPAIGN_STOP_MIN_MS / _MAX_MS [8000 / 15000]  how long a process stays stopped
#   SLUICE_CAMPAIGN_HEARTBEAT_TIMEOUT_MS [5000]  the processes' --heartbeat-timeout: a stopped
#                                       or partitioned peer silent this long is lost
#   SLUICE_CAMPAIGN_NO_PROGRESS_S [30]  the driver restarts all when no checkpoint completes this
#                                       long after a partition or stop ended
#   SLUICE_CAMPAIGN_CHECKPOINT_MS [500]  SLUICE_CAMPAIGN_DEADLINE_S [3600] per job
#   SLUICE_CAMPAIGN_PROFILE [release]  or debug (slower processes: more room for the faults)
#
# Prints per job: faults injected by kind, restarts, lost and duplicated records, and per fault
# the time to detect it (fault -> the first process exiting by itself, or "not detected" when
# the driver had to kill all) and the time to recover (fault -> the first checkpoint completed
# after it).
set -euo pipefail
cd "$(dirname "$0")/.."
export SLUICE_TANSU="${SLUICE_TANSU:-$(scripts/install-tansu.sh)}"
PROFILE=(--release)
[ "${SLUICE_CAMPAIGN_PROFILE:-release}" = debug ] && PROFILE=()
exec cargo test "${PROFILE[@]}" -p sluice-cli --test it -- --ignored --nocapture \
  exactly_once_campaign::full_campaign
