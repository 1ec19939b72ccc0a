#!/usr/bin/env bash
# The live part of CI: installs the real runtimes, then validates scenarios
# of scenarios/validation/ on each of them, and checks that a run past its
# wall-clock limit is stopped with nothing left behind.
#
# Checked (must pass, or fail only checks listed in
# tests/fixtures/validation/KNOWN_MISSES, or in LIVE_VARIES there: checks
# whose real outcome varies run to run beyond their tolerance, reported as
# "varies"): the scenarios whose real timing
# is stable from run to run on this kind of machine. Reported only: the
# scenarios whose real outcome moved with the gate thread's phase in earlier
# runs (with tiered compilation on, whose start-up timer sets that phase:
# staggered arrivals on .NET Core 3.1 measured 7.14, 6.50 and 5.86 s for the
# same file; one core on .NET 8 4.41 and 5.11 s; the checked ones run with it off, see
# `poolsim measure --help`), and the CPU-bound ones (20 % apart run to run
# on a shared VM). All of them are checked against the recordings by `cargo test`.
# The checked scenarios run as they were recorded, with tiered compilation
# off (their single-seed medians are compared, and on .NET Core 3.1 tiering
# moves the gate's phase); the reported ones run with the runtimes'
# defaults, tiered compilation on, as users run them.
# Takes about 6 minutes.
#
# Usage: scripts/live-validation.sh [SCENARIO-STEM ...]   (checked stems)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-runtimes.sh
cargo build --release --quiet
bin=./target/release/poolsim
stems=("$@")
[ ${#stems[@]} -eq 0 ] && stems=(sleep-burst delay-wait-burst concurrent-exclusive)
reported=(one-core staggered-arrivals)
known=tests/fixtures/validation/KNOWN_MISSES
varies=tests/fixtures/validation/LIVE_VARIES
failed=0
# Reports go to a private temporary directory, removed on exit.
tmp=$(mktemp -d -t poolsim-live.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The checks of a validate report that failed, one name a line
# ("end error mean", "makespan error", ...).
failing_checks() {
  sed -n '/^check (median)/,$p' "$1" | awk '$NF == "FAIL" && NF > 1 {
    name = ""
    for (i = 1; i <= NF; i++) { if ($i ~ /^-?[0-9.]+$/) break; name = name (name == "" ? "" : " ") $i }
    print name }'
}
# Every failing check of STEM on RT is listed in FILE(s).
all_listed() {
  local stem=$1 rt=$2 report=$3; shift 3
  local check any=0
  while IFS= read -r check; do
    any=1
    grep -qE "^$stem $rt $check( |\$|#)" "$@" 2>/dev/null || return 1
  done < <(failing_checks "$report")
  [ $any -eq 1 ]
}
for stem in "${stems[@]}"; do
  for rt in coreclr3 net8 mono native; do
    set +e
    $bin validate "scenarios/validation/$stem.toml" --runtime "$rt" --repeat 2 --no-tiered-compilation > "$tmp/$stem-$rt.txt" 2>&1
    code=$?
    set -e
    summary=$(grep -E '^(makespan error|start error mean)' "$tmp/$stem-$rt.txt" | awk '{print $1" "$2" "$3" "$4}' | paste -sd';' -)
    if [ $code -eq 0 ]; then
      echo "pass  $stem on $rt   $summary"
    elif [ $code -eq 1 ] && all_listed "$stem" "$rt" "$tmp/$stem-$rt.txt" "$known"; then
      echo "known $stem on $rt   $summary"
    elif [ $code -eq 1 ] && all_listed "$stem" "$rt" "$tmp/$stem-$rt.txt" "$known" "$varies"; then
      echo "varies $stem on $rt (listed in $varies: $(failing_checks "$tmp/$stem-$rt.txt" | paste -sd, -))   $summary"
    elif [ $code -eq 2 ] && [ "$rt" = native ] && grep -q "cannot run" "$tmp/$stem-$rt.txt"; then
      echo "n/a   $stem on $rt (the native pool cannot express it)"
    else
      echo "FAIL  $stem on $rt (exit $code)"
      cat "$tmp/$stem-$rt.txt"
      failed=1
    fi
  done
done

echo "== reported only (the real outcome depends on the runtime's start-up phase)"
# Each is also checked against the model's outcomes over 100 seeds (the
# scenario's seed alone may land on a rarer one): whether the run is inside
# their range, the error of their median, and the pooled start offsets.
for stem in "${reported[@]}"; do
  [ $# -eq 0 ] || break
  for rt in coreclr3 net8 mono; do
    set +e
    $bin validate "scenarios/validation/$stem.toml" --runtime "$rt" --repeat 1 --runs 100 > "$tmp/$stem-$rt.txt" 2>&1
    code=$?
    set -e
    summary=$(grep -E '^(makespan error|start error mean|runs outside range|median makespan error|start offset quantiles)' "$tmp/$stem-$rt.txt" |
      awk '{ n = ""; for (i = 1; i <= NF; i++) { if ($i ~ /^-?[0-9.]+$/) break; n = n (n == "" ? "" : " ") $i }
             print n " " $i " " $(i + 1) }' | paste -sd';' -)
    if [ $code -gt 1 ]; then
      echo "FAIL  $stem on $rt did not run (exit $code)"; cat "$tmp/$stem-$rt.txt"; failed=1
    else
      echo "info  $stem on $rt (exit $code)   $summary"
    fi
  done
done

echo "== a sample of the apps grammar, live (issue 33's shapes)"
# The first three scenarios of the apps grammar's held-out set (seed 2):
# a head-of-line blocker on one core, blockers behind a raised minimum and
# a sync request stream with Poisson arrivals; waits and sleeps, stable run
# to run (each was inside the model's range in both recorded runs). One run
# each on .NET 8, checked like the set (about 40 s); `cargo test` replays
# all 40 from the recordings.
if [ $# -eq 0 ]; then
  set +e
  $bin validate --generate 3 --grammar apps --seed 2 --runtime net8 --repeat 1 > "$tmp/apps-sample.txt" 2>&1
  code=$?
  set -e
  if [ $code -eq 0 ]; then
    echo "pass  apps-2-01..03 on net8"
    sed -n '/^scenario/,/^$/p' "$tmp/apps-sample.txt"
  else
    echo "FAIL  apps-2-01..03 on net8 (exit $code)"; cat "$tmp/apps-sample.txt"; failed=1
  fi
fi

echo "== a hung runtime is killed, nothing left behind"
set +e
$bin measure scenarios/validation/sleep-burst.toml --runtime mono --timeout-s 1 > "$tmp/hang.txt" 2>&1
code=$?
set -e
if [ $code -ne 3 ] || ! grep -q "wall-clock limit" "$tmp/hang.txt"; then
  echo "FAIL: expected exit 3 and a wall-clock message, got $code:"; cat "$tmp/hang.txt"; failed=1
fi
sleep 0.5
if pgrep -f "harness.exe" >/dev/null; then
  echo "FAIL: a harness process survived"; pgrep -af harness.exe; failed=1
else
  echo "ok: killed after 1 s, no harness process left"
fi
exit $failed
