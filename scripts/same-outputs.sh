#!/usr/bin/env bash
# Checks that a change leaves every output byte-identical: builds BASE (a
# git revision) and the working tree, runs every scenario under every
# built-in policy with each of them (stdout, --json, the CSV trace, the
# Chrome trace, the counters, `explain`; the table, CSV, Chrome trace and
# SVG chart once more without counters, as `run` streams them then), and `reproduce --json`, and
# compares the bytes. A refactor must pass this; a change that is a stated
# fix names what moved.
#
# Usage: scripts/same-outputs.sh BASE-REV [SCENARIO ...]
#   (default: scenarios/*.toml and scenarios/validation/*.toml)
# Set SAME_OUTPUTS_BASE_TARGET to a directory to keep BASE's build between
# calls; SAME_OUTPUTS_IGNORE_JSON_KEYS="k1 k2" leaves those integer keys of
# `run --json` out of the comparison (a stated fix that moves only them).
# Exit 0: all identical; 1: some differ (listed); 2: usage.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,16p' "$0"; exit 2; }
base=$1; shift
ignore_keys=${SAME_OUTPUTS_IGNORE_JSON_KEYS:-}
repo=$(pwd)
tmp=$(mktemp -d -t poolsim-same.XXXXXX)
cleanup() {
  git -C "$repo" worktree remove --force "$tmp/src" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

git worktree add -q --detach "$tmp/src" "$base"
base_target=${SAME_OUTPUTS_BASE_TARGET:-$tmp/target}
(cd "$tmp/src" && CARGO_TARGET_DIR="$base_target" cargo build --release --quiet)
cargo build --release --quiet
old="$base_target/release/poolsim"
new="$repo/target/release/poolsim"

scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  scenarios=(scenarios/*.toml scenarios/validation/*.toml)
fi
policies=()
for p in policies/*.toml; do policies+=("$(basename "$p" .toml)"); done

# Runs one case with BIN in DIR (relative output names, so the two runs
# print the same paths).
run_case() {
  local bin=$1 dir=$2 scenario=$3 policy=$4
  mkdir -p "$dir"
  (
    cd "$dir"
    set +e
    "$bin" run "$repo/$scenario" --policy "$policy" --items 100000 \
      --trace trace.csv --chrome chrome.json --counters counters.csv >stdout.txt 2>&1
    echo "exit $?" >>stdout.txt
    "$bin" run "$repo/$scenario" --policy "$policy" --json >json.txt 2>&1
    echo "exit $?" >>json.txt
    # Without counters, `run` streams its items, chart and Chrome trace.
    "$bin" run "$repo/$scenario" --policy "$policy" --items 100000 \
      --trace streamed.csv --chrome streamed-chrome.json --svg streamed.svg >streamed.txt 2>&1
    echo "exit $?" >>streamed.txt
    "$bin" explain "$repo/$scenario" --policy "$policy" >explain.txt 2>&1
    echo "exit $?" >>explain.txt
  )
}

cases=0
differ=0
for s in "${scenarios[@]}"; do
  for p in "${policies[@]}"; do
    key="$(echo "$s" | tr '/' '_')-$p"
    run_case "$old" "$tmp/old/$key" "$s" "$p"
    run_case "$new" "$tmp/new/$key" "$s" "$p"
    for k in $ignore_keys; do
      sed -i -E "s/\"$k\":[0-9]+,?//" "$tmp/old/$key/json.txt" "$tmp/new/$key/json.txt"
    done
    cases=$((cases + 1))
    if ! diff -rq "$tmp/old/$key" "$tmp/new/$key" >/dev/null; then
      differ=$((differ + 1))
      echo "DIFFERS  $s under $p:"
      diff -rq "$tmp/old/$key" "$tmp/new/$key" | sed 's/^/  /' || true
      diff "$tmp/old/$key/json.txt" "$tmp/new/$key/json.txt" | head -4 | sed 's/^/  /' || true
    fi
  done
done
# reproduce reads its scenarios from the tree the binary was built from.
(cd "$tmp/src" && "$old" reproduce --json >"$tmp/reproduce-old.json" 2>&1) || true
"$new" reproduce --json >"$tmp/reproduce-new.json" 2>&1 || true
if cmp -s "$tmp/reproduce-old.json" "$tmp/reproduce-new.json"; then
  echo "same     reproduce --json"
else
  echo "DIFFERS  reproduce --json"
  differ=$((differ + 1))
fi
echo "$cases scenario x policy cases (stdout, --json, CSV trace, Chrome trace, counters, explain) and reproduce: $differ differ"
[ $differ -eq 0 ]
