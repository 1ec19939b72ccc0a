#!/usr/bin/env bash
# Builds the playground: the simulator compiled to WebAssembly (crates/wasm,
# release, wasm32-unknown-unknown) and ONE self-contained page,
# target/playground/index.html: web/playground/index.html with its markers
# replaced by the report's style and script (crates/analysis/src/render/
# html/), the playground's own (web/playground/), the seeds' scenarios
# (scenarios/seed-*.toml) as presets, and the .wasm in base64. The page
# fetches nothing: open it from the disk, serve it (`poolsim serve`), or
# copy it to any static host.
#
#   scripts/build-playground.sh            # prints the page's path and size
#   PLAYGROUND_OUT=DIR scripts/build-playground.sh   # writes DIR/index.html
#
# Needs cargo with the wasm32-unknown-unknown target (added with rustup if
# missing) and python3 (to put the page together). The same sources give the
# same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${PLAYGROUND_OUT:-target/playground}
TARGET=wasm32-unknown-unknown

if ! command -v python3 >/dev/null 2>&1; then
    echo "build-playground: python3 is needed to put the page together" >&2
    exit 1
fi
if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx "$TARGET"; then
    rustup target add "$TARGET"
fi

# Release, without the debug info and symbols the workspace's release
# profile keeps for native profiling (they would be most of the .wasm).
CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols \
    cargo build --quiet -p poolsim-wasm --target "$TARGET" --release
WASM=target/$TARGET/release/poolsim_wasm.wasm

mkdir -p "$OUT"
python3 - "$WASM" "$OUT/index.html" <<'EOF'
"""Puts the playground's page together (see scripts/build-playground.sh)."""
import base64
import glob
import json
import os
import re
import sys

wasm_path, out_path = sys.argv[1], sys.argv[2]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def leb128(data, i):
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def without_custom_sections(data):
    """The module without its custom sections (names, producers, a
    dependency's wasm-bindgen description): the browser reads none."""
    if data[:8] != b"\0asm\x01\0\0\0":
        sys.exit("build-playground: %s is not a WebAssembly module" % wasm_path)
    out, i = bytearray(data[:8]), 8
    while i < len(data):
        start = i
        section = data[i]
        size, body = leb128(data, i + 1)
        i = body + size
        if section != 0:
            out += data[start:i]
    return bytes(out)


def presets():
    out = []
    for path in sorted(glob.glob("scenarios/seed-*.toml")):
        text = read(path)
        name = re.search(r'^name\s*=\s*"(.*)"', text, re.M)
        out.append({"file": path, "name": name.group(1) if name else path, "text": text})
    if not out:
        sys.exit("build-playground: no scenarios/seed-*.toml to take as presets")
    return out


def inline_script(path):
    text = read(path)
    if "</script" in text.lower():
        sys.exit("build-playground: %s holds </script, which would end its element" % path)
    return text


def inline_style(path):
    text = read(path)
    if "</style" in text.lower():
        sys.exit("build-playground: %s holds </style, which would end its element" % path)
    return text


wasm_raw = open(wasm_path, "rb").read()
wasm = without_custom_sections(wasm_raw)
parts = {
    "report.css": inline_style("crates/analysis/src/render/html/report.css"),
    "playground.css": inline_style("web/playground/playground.css"),
    "error.js": inline_script("crates/analysis/src/render/html/error.js"),
    "report.js": inline_script("crates/analysis/src/render/html/report.js"),
    "playground.js": inline_script("web/playground/playground.js"),
    # `<` only inside JSON strings, where \u003c means the same.
    "presets": json.dumps(presets(), ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c"),
    "wasm": base64.b64encode(wasm).decode("ascii"),
}
page = read("web/playground/index.html")
# The template's head comment says how to build it; the page says where it came from.
page = re.sub(
    r"<!--.*?-->\n",
    "<!-- poolsim's playground, built by scripts/build-playground.sh from web/playground/. -->\n",
    page,
    count=1,
    flags=re.S,
)
for name, text in parts.items():
    marker = "/*@poolsim %s@*/" % name
    if page.count(marker) != 1:
        sys.exit("build-playground: web/playground/index.html must hold %s once" % marker)
    page = page.replace(marker, text)
left = re.findall(r"/\*@poolsim [^@]*@\*/", page)
if left:
    sys.exit("build-playground: unknown markers in web/playground/index.html: %s" % ", ".join(left))
tmp = out_path + ".tmp"
with open(tmp, "w", encoding="utf-8", newline="\n") as f:
    f.write(page)
os.replace(tmp, out_path)
size = len(page.encode("utf-8"))
print(
    "build-playground: %s, %s bytes (%.2f MB): the module %s bytes (%s before its custom sections were left out), %d presets"
    % (out_path, format(size, ","), size / 1e6, format(len(wasm), ","), format(len(wasm_raw), ","), len(parts["presets"]) and len(presets()))
)
EOF
