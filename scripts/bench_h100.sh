#!/usr/bin/env bash
# gptoss-bench at full scale (issue 13), for a GPU machine that gets the binaries carried in (no
# compilers there). Two halves:
#
#   scripts/bench_h100.sh pack              here: stripped tools into build-h100/bin (carry build-h100
#                                           with the working tree; other tools there are kept)
#   scripts/bench_h100.sh OUTDIR [STEP...]  there: the steps given, or every step in order
#
# Steps (each prints what it ran and how long it took; files skips what WORK already holds):
#   files    the PRESET checkpoint (gptoss-synth --preset PRESET --layouts hf) in WORK, and from it
#            the Q8_0-dense GGUF (gptoss-convert --dense q8_0): about 27 GB at 20b
#   hf       gptoss-bench on the HF checkpoint: ppP, tgN, ppP @ dDEPTH, tgN @ dDEPTH, -r R
#   q8       the same on the Q8_0 GGUF
#   big      the same on BIG (synth:120b: generated as it is uploaded, never on disk)
#   profile  GPTOSS_VK_PROFILE=1 kernel profiles of the HF checkpoint and the Q8_0 GGUF: one
#            prefill of P tokens, one decode of N tokens (each after its warm-up run, which the
#            profile includes: two runs)
#
# OUTDIR gets at most 7 files (what the device tool brings back): bench.md (the machine, every
# command and table), hf.json, q8_0.json, big.json (llama-bench's JSON fields, every sample),
# profile-prefill.txt, profile-decode.txt, log.txt (everything printed, progress included).
#
# Environment: BIN (tools; default build-h100/bin when it holds gptoss-bench, else build/tools),
# WORK (where the checkpoint goes; default /tmp/gptoss-bench-work), PRESET (20b; "a" tries the
# script on the tiny model), BIG (synth:120b; synth:a to try), P (512), N (128), DEPTH (4096),
# R (3), ENGINE (vulkan), DEVICE (a Vulkan device index; default: the best).
# Where the machine's Vulkan loader is missing, the .gl/*.deb packages of the device notes are
# unpacked first (root only). A failing bench is noted and the next step still runs; the exit
# status is then 1.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = pack ]; then
  mkdir -p build-h100/bin
  for tool in gptoss-synth gptoss-convert gptoss-run gptoss-verify gptoss-bench; do
    strip -o build-h100/bin/$tool "${BUILD_DIR:-build}/tools/$tool"
  done
  du -sh build-h100
  echo "carry: build-h100 (the run tool's carry list; .gl too for the Vulkan loader); then: scripts/bench_h100.sh OUTDIR [STEP...]"
  exit 0
fi

OUT=${1:?usage: scripts/bench_h100.sh pack | OUTDIR [files|hf|q8|big|profile]...}
shift
STEPS=("$@")
[ ${#STEPS[@]} -eq 0 ] && STEPS=(files hf q8 big profile)
if [ -z "${BIN:-}" ]; then BIN=build/tools; [ -x build-h100/bin/gptoss-bench ] && BIN=build-h100/bin; fi
WORK=${WORK:-/tmp/gptoss-bench-work}
PRESET=${PRESET:-20b}
BIG=${BIG:-synth:120b}
P=${P:-512}
N=${N:-128}
DEPTH=${DEPTH:-4096}
R=${R:-3}
ENGINE=${ENGINE:-vulkan}
device=()
[ -n "${DEVICE:-}" ] && device=(--device "$DEVICE")
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)
HF=$WORK/$PRESET/hf
Q8=$WORK/$PRESET-q8_0.gguf
exec > >(tee -a "$OUT/log.txt") 2>&1
failures=0

timed() {  # timed LABEL COMMAND...: runs it, then prints its wall time
  local label=$1 start=$SECONDS
  shift
  "$@"
  echo "-- $label: $((SECONDS - start)) s"
}

# The Vulkan loader (the device notes: .gl/*.deb unpacked into /), and NVIDIA's driver manifest
# where the loader does not find it.
vulkan_setup() {
  if ! ldconfig -p 2>/dev/null | grep -q libvulkan.so.1 && compgen -G ".gl/*.deb" >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "unpacking the Vulkan loader from .gl/"
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  local nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$nvidia_icd" ] && ! "$BIN"/gptoss-run --list-devices 2>/dev/null | grep -qi nvidia; then
    export VK_DRIVER_FILES=$nvidia_icd
    echo "VK_DRIVER_FILES=$VK_DRIVER_FILES"
  fi
}

describe_machine() {
  {
    echo "## gptoss-bench, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo '```'
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc)"
    command -v nvidia-smi >/dev/null &&
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | sed 's/^/gpu: /'
    "$BIN"/gptoss-run --list-devices || echo "no Vulkan device list"
    echo "P=$P N=$N DEPTH=$DEPTH R=$R ENGINE=$ENGINE PRESET=$PRESET BIG=$BIG"
    echo '```'
    echo
  } >>"$OUT/bench.md"
}

step_files() {
  echo "== files: preset $PRESET in $WORK"
  [ -f "$HF/config.json" ] || timed "gptoss-synth --preset $PRESET" \
    "$BIN"/gptoss-synth "$WORK/$PRESET" --preset "$PRESET" --layouts hf
  [ -f "$Q8" ] || timed "gptoss-convert to the Q8_0 GGUF" "$BIN"/gptoss-convert -q "$HF" "$Q8" --dense q8_0
  ls -l "$HF" "$Q8"
  df -h "$WORK" | tail -1
}

bench() {  # bench NAME MODEL: the tests on MODEL, its table into bench.md, its JSON into NAME.json
  local name=$1 model=$2 start=$SECONDS
  local command=("$BIN"/gptoss-bench "$model" -p "$P" -n "$N" -d "0,$DEPTH" -r "$R" --engine "$ENGINE" "${device[@]}"
    -o md --save "$OUT/$name.json")
  echo "== $name: $model"
  printf '### %s\n\n`%s`\n\n' "$model" "gptoss-bench ${command[*]:1}" >>"$OUT/bench.md"
  if "${command[@]}" | tee -a "$OUT/bench.md"; then
    echo "-- $name: $((SECONDS - start)) s"
  else
    echo "-- $name FAILED (exit $?) after $((SECONDS - start)) s" | tee -a "$OUT/bench.md"
    failures=$((failures + 1))
  fi
  echo >>"$OUT/bench.md"
}

step_hf() { bench hf "$HF"; }
step_q8() { bench q8_0 "$Q8"; }
step_big() { bench big "$BIG"; }

profile() {  # profile KIND MODEL ARGS...: the kernel table of one test into profile-KIND.txt
  local kind=$1 model=$2 start=$SECONDS
  shift 2
  local command=("$BIN"/gptoss-bench "$model" "$@" -r 1 --engine "$ENGINE" "${device[@]}" -o md -q)
  printf '## %s\n\n`GPTOSS_VK_PROFILE=1 %s` (warm-up + 1 timed run: the table covers both)\n\n' \
    "$model" "gptoss-bench ${command[*]:1}" >>"$OUT/profile-$kind.txt"
  if GPTOSS_VK_PROFILE=1 "${command[@]}" >>"$OUT/profile-$kind.txt" 2>&1; then
    echo "-- profile $kind of $model: $((SECONDS - start)) s"
  else
    echo "-- profile $kind of $model FAILED (exit $?)" | tee -a "$OUT/profile-$kind.txt"
    failures=$((failures + 1))
  fi
  echo >>"$OUT/profile-$kind.txt"
}

step_profile() {
  if [ "$ENGINE" != vulkan ]; then
    echo "== profile: GPTOSS_VK_PROFILE profiles the Vulkan engine, and ENGINE is $ENGINE: skipped"
    return 0
  fi
  echo "== profile: one prefill of $P and one decode of $N tokens"
  for model in "$HF" "$Q8"; do
    profile prefill "$model" -p "$P" -n 0
    profile decode "$model" -p 0 -n "$N"
  done
}

vulkan_setup
describe_machine
for step in "${STEPS[@]}"; do
  case "$step" in
    files|hf|q8|big|profile) "step_$step" ;;
    *) echo "unknown step $step (files, hf, q8, big, profile)" >&2; exit 2 ;;
  esac
done
ls -l "$OUT"
[ "$failures" = 0 ] || { echo "$failures bench runs failed"; exit 1; }
