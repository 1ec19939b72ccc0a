#!/usr/bin/env bash
# Records the validation suite on every runtime (3 repetitions each) into
# tests/fixtures/validation/<scenario>/<runtime>-<k>.txt, with the runtimes'
# defaults (tiered compilation on). A .NET 8 run also keeps the runtime's
# EventPipe account beside it (<runtime>-<k>.nettrace). Run it on an idle
# machine: every run is real time, and other load distorts it.
#
# Usage: scripts/record-fixtures.sh [RUNTIME ...]   (default: mono coreclr3 net8 native)
#   SCENARIOS=DIR the scenarios of DIR/*.toml (default scenarios/validation)
#   FIXTURES=DIR  record into DIR/<scenario>/ instead
#   REPEAT=N      repetitions per scenario and runtime (default 3)
# The round-number suite: SCENARIOS=scenarios/validation/round
#   FIXTURES=tests/fixtures/validation/round REPEAT=10 scripts/record-fixtures.sh mono coreclr3 net8
set -euo pipefail
cd "$(dirname "$0")/.."
runtimes=("$@")
[ ${#runtimes[@]} -eq 0 ] && runtimes=(mono coreclr3 net8 native)
cargo build --release --quiet
for f in "${SCENARIOS:-scenarios/validation}"/*.toml; do
  stem=$(basename "$f" .toml)
  dir="${FIXTURES:-tests/fixtures/validation}/$stem"
  for rt in "${runtimes[@]}"; do
    echo "== $stem on $rt"
    rm -f "$dir/$rt"-*.txt "$dir/$rt"-*.nettrace
    set +e
    ./target/release/poolsim validate "$f" --runtime "$rt" --repeat "${REPEAT:-3}" --record "$dir"
    code=$?
    set -e
    # 0 pass, 1 a check failed (still recorded); 2 the runtime cannot express it.
    if [ $code -ne 0 ] && [ $code -ne 1 ] && [ $code -ne 2 ]; then
      echo "recording $stem on $rt failed (exit $code)" >&2
      exit $code
    fi
  done
done
