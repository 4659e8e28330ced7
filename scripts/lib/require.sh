# Sourced by the test scripts: the shell side of `sluice_testkit::require`. When a server or tool
# a test needs cannot be had, `require_or_skip WHAT WHY` fails the script under CI (`CI` is true,
# 1 or yes, any case) naming what is missing; elsewhere it says so loudly on stderr ("SKIPPED:")
# and ends the script with status 0.

in_ci() {
  case "$(printf '%s' "${CI:-}" | tr '[:upper:]' '[:lower:]' | tr -d '[:space:]')" in
    true | 1 | yes) return 0 ;;
    *) return 1 ;;
  esac
}

require_or_skip() {
  local what=$1 why=$2 me
  me=$(basename "$0")
  if in_ci; then
    echo "$me: CI=true and $what cannot be started: $why" >&2
    exit 1
  fi
  echo "SKIPPED: $me: $what cannot be started here: $why (under CI=true this fails)" >&2
  exit 0
}
