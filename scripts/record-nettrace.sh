#!/usr/bin/env bash
# Records an EventPipe trace (.nettrace) of the thread-pool events of a real
# .NET runtime running tests/fixtures/nettrace/burst.cs, without dotnet-trace:
# the runtime writes the file itself from environment variables.
#
#   DOTNET_EnableEventPipe=1
#   DOTNET_EventPipeOutputPath=OUT.nettrace
#   DOTNET_EventPipeConfig='Microsoft-Windows-DotNETRuntime:0x10000:5'
#     (keyword 0x10000 = Threading, level 5 = Verbose)
#
# On .NET Core 3.1 the same settings are spelled COMPlus_EnableEventPipe,
# COMPlus_EventPipeOutputPath, COMPlus_EventPipeConfig (both are set).
# The program's own output goes to OUT.txt beside the trace.
# RUNDOWN=0 in the environment sets DOTNET_EventPipeRundown=0: no method
# rundown at the end of the trace (the bulk of a short trace's bytes).
# WORK_ITEMS=1 adds the provider that logs each work item (.NET 6+ log them
# from managed code, not from the runtime provider):
#   System.Diagnostics.Eventing.FrameworkEventSource:0x12:5
#     (keywords ThreadPool 0x2 | ThreadTransfer 0x10, level 5 = Verbose:
#     ThreadPoolEnqueueWork 30 and ThreadPoolDequeueWork 31)
# EXTRA_PROVIDERS='Name:keywords:level[,...]' appends other providers to
# DOTNET_EventPipeConfig (comma-separated, as the runtime reads it).
#
# Needs: mcs (scripts/install-runtimes.sh mono) and the runtime
# (scripts/install-runtimes.sh net8 | coreclr3).
#
# Usage: scripts/record-nettrace.sh [net8|coreclr3] OUT.nettrace [ITEMS [SLEEP_MS]]
#   e.g. scripts/record-nettrace.sh net8 tests/fixtures/nettrace/net8-burst20.nettrace 20 500
#        RUNDOWN=0 WORK_ITEMS=1 scripts/record-nettrace.sh net8 tests/fixtures/nettrace/net8-items.nettrace 20 500
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runtime=${1:-net8}
out=${2:?usage: scripts/record-nettrace.sh [net8|coreclr3] OUT.nettrace [ITEMS [SLEEP_MS]]}
items=${3:-20}
sleep_ms=${4:-500}
rts="${POOLSIM_RUNTIMES:-$root/runtimes}"
case "$runtime" in
  net8) dotnet_dir="$rts/net8/dnv/net/runtime/.net"; tfm=net8.0; fx=8.0.0 ;;
  coreclr3) dotnet_dir="$rts/coreclr3/dotnetcore2/bin"; tfm=netcoreapp3.1; fx=3.1.0 ;;
  *) echo "unknown runtime '$runtime' (known: net8 coreclr3)" >&2; exit 2 ;;
esac
if [ ! -x "$dotnet_dir/dotnet" ]; then
  echo "$runtime is not installed: run scripts/install-runtimes.sh $runtime" >&2
  exit 2
fi
command -v mcs >/dev/null || { echo "mcs missing: run scripts/install-runtimes.sh mono" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mcs -nologo -out:"$work/burst.exe" "$root/tests/fixtures/nettrace/burst.cs"
cp "$work/burst.exe" "$work/burst.dll"
cat > "$work/burst.runtimeconfig.json" <<JSON
{"runtimeOptions":{"tfm":"$tfm","framework":{"name":"Microsoft.NETCore.App","version":"$fx"},"configProperties":{"System.Globalization.Invariant":true}}}
JSON

case "$out" in /*) abs_out="$out" ;; *) abs_out="$PWD/$out" ;; esac
mkdir -p "$(dirname "$abs_out")"
rm -f "$abs_out"
txt="${abs_out%.nettrace}.txt"
config='Microsoft-Windows-DotNETRuntime:0x10000:5'
if [ "${WORK_ITEMS:-0}" = 1 ]; then
  config="$config,System.Diagnostics.Eventing.FrameworkEventSource:0x12:5"
fi
if [ -n "${EXTRA_PROVIDERS:-}" ]; then
  config="$config,$EXTRA_PROVIDERS"
fi
rundown=${RUNDOWN:-1}
echo "DOTNET_EventPipeConfig=$config DOTNET_EventPipeRundown=$rundown" >&2
set +e
env DOTNET_ROOT="$dotnet_dir" \
  DOTNET_EnableEventPipe=1 DOTNET_EventPipeOutputPath="$abs_out" DOTNET_EventPipeConfig="$config" \
  COMPlus_EnableEventPipe=1 COMPlus_EventPipeOutputPath="$abs_out" COMPlus_EventPipeConfig="$config" \
  DOTNET_EventPipeRundown="$rundown" COMPlus_EventPipeRundown="$rundown" \
  "$dotnet_dir/dotnet" exec --runtimeconfig "$work/burst.runtimeconfig.json" "$work/burst.dll" "$items" "$sleep_ms" \
  > "$txt"
code=$?
set -e
if [ $code -ne 0 ]; then
  echo "the program exited with $code on $runtime (output: $txt)" >&2
  exit $code
fi
echo "wrote $abs_out ($(wc -c < "$abs_out") bytes) and $txt"
