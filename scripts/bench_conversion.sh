#!/usr/bin/env bash
# Times the conversions and verifications of docs/performance.md on this machine and prints a
# markdown table: wall time and peak RSS of each command (/usr/bin/time -v), and the floor, the
# time `cat input > output; sync` takes for the same number of bytes.
#
#   scripts/bench_conversion.sh OUTDIR
#
# Synthesizes the gpt-oss-20b-shaped HF checkpoint into OUTDIR/s20b (13.76 GB; needs about
# 45 GB free: the checkpoint, one output at a time and a GGUF kept for the way back), then times
# each command with the inputs in the page cache. Outputs are deleted as soon as they are timed.
# Needs only the three tool binaries and a tokenizer.json (no compiler): on a machine without
# the build, copy them and point BIN / TOKENIZER at them.
#   BIN=build/tools             folder holding gptoss-synth, gptoss-convert, gptoss-verify
#   TOKENIZER=.cache/tokenizer.json   (model.bin holds the tokenizer, so the checkpoint needs one)
#   PRESET=20b                  a | 20b | 120b (a: a quick run of the script itself)
#   JOBS=                       -j for every tool (default: theirs, one thread per core)
#   KEEP=0                      1 keeps the checkpoint for another run (it is reused when present)
#   MODEL_DIR=OUTDIR/sPRESET    where the checkpoint goes (its hf/ folder)
#   SYNTH_ARGS=                 more gptoss-synth options (--max-shard-size 5G: the published layout)
#   KEEP_OUTPUTS=0              1 keeps the Q8_0 GGUF, model.bin and BF16 GGUF at Q8_OUT, MB_OUT,
#                               BF16_OUT (default OUTDIR/out-q8.gguf, out.bin, out.gguf)
#   BACK=1                      0 skips the way back (BF16 GGUF -> HF, compared byte for byte)
#   TIMER=/usr/bin/time         GNU time (carried to machines that lack it)
set -euo pipefail

out=${1:?usage: scripts/bench_conversion.sh OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/build/tools}
tokenizer=${TOKENIZER:-$root/.cache/tokenizer.json}
preset=${PRESET:-20b}
jobs=()
[ -n "${JOBS:-}" ] && jobs=(-j "$JOBS")
timer=${TIMER:-/usr/bin/time}
for tool in gptoss-synth gptoss-convert gptoss-verify; do
  [ -x "$bin/$tool" ] || { echo "bench_conversion: no $bin/$tool (set BIN)" >&2; exit 2; }
done
[ -x "$timer" ] || { echo "bench_conversion: needs $timer (GNU time) for the peak RSS" >&2; exit 2; }
[ -f "$tokenizer" ] || { echo "bench_conversion: no tokenizer at $tokenizer (set TOKENIZER)" >&2; exit 2; }

mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
model=${MODEL_DIR:-$out/s$preset}
q8_out=${Q8_OUT:-$out/out-q8.gguf} mb_out=${MB_OUT:-$out/out.bin} bf16_out=${BF16_OUT:-$out/out.gguf}
keep_outputs=${KEEP_OUTPUTS:-0}
synth_args=()
[ -n "${SYNTH_ARGS:-}" ] && read -r -a synth_args <<<"$SYNTH_ARGS"
rows=()

bytes_of() { du -sb --apparent-size "$@" | awk '{s += $1} END {print s}'; }
seconds_of() {  # "Elapsed (wall clock) time (h:mm:ss or m:ss): 1:02.5" -> 62.5
  awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$1"
}
rss_mb_of() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$1"; }
cpu_of() {  # "user + sys" seconds: shows where a command spends its time (sys: the kernel's copies)
  awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {printf "%.0f + %.0f s", u, s}' "$1"
}

# timed NAME OUTPUT_BYTES_PATHS -- COMMAND...: runs the command under /usr/bin/time -v after a
# sync (so earlier steps' dirty pages do not land on this one), logs to OUTDIR/logs/NAME.log.
timed() {
  local name=$1 shown=$2
  shift 2
  sync
  "$timer" -v "$@" >"$out/logs/$name.log" 2>&1 || { echo "bench_conversion: $name failed:" >&2; tail -5 "$out/logs/$name.log" >&2; exit 1; }
  last_seconds=$(seconds_of "$out/logs/$name.log")
  last_rss=$(rss_mb_of "$out/logs/$name.log")
  last_cpu=$(cpu_of "$out/logs/$name.log")
  last_command=$shown
}

row() {  # row BYTES: a table row for the last timed command, its output of BYTES bytes
  local bytes=$1 floor
  floor=$(awk -v b="$bytes" -v cb="$copy_bytes" -v cs="$copy_seconds" 'BEGIN {printf "%.2f", (cb > 0 ? cs * b / cb : 0)}')
  rows+=("$(awk -v c="$last_command" -v s="$last_seconds" -v r="$last_rss" -v u="$last_cpu" -v b="$bytes" -v f="$floor" 'BEGIN {
    printf "| `%s` | %.1f s | %d MB | %s | %.2f GB (%.2f GB/s) | %.1f s | %s |", c, s, r, u, b / 1e9, (s > 0 ? b / 1e9 / s : 0), f, (f > 0 ? sprintf("%.2fx", s / f) : "—") }')")
}

machine="$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1e6}' /proc/meminfo) RAM, $(df -h --output=avail "$out" | tail -1 | tr -d ' ') free in $out"

# 1. The checkpoint (reused when a previous run kept it).
if [ ! -f "$model/hf/config.json" ]; then
  rm -rf "$model"
  timed synth "gptoss-synth s$preset --preset $preset --layouts hf${SYNTH_ARGS:+ $SYNTH_ARGS}" \
    "$bin/gptoss-synth" "$model" --preset "$preset" --layouts hf --tokenizer "$tokenizer" "${synth_args[@]}" "${jobs[@]}"
  synth_seconds=$last_seconds synth_rss=$last_rss synth_cpu=$last_cpu
else
  synth_seconds=""
fi
inputs=("$model"/hf/*.safetensors)
input_bytes=$(bytes_of "$model/hf")

# 2. The floor: copying the checkpoint's weights files (in the page cache, like every input here)
# to one new file on the same disk, then sync. Other byte counts scale it linearly.
timed copy "cat *.safetensors > copy; sync" sh -c 'cat "$@" > "$0" && sync' "$out/copy.bin" "${inputs[@]}"
copy_seconds=$last_seconds copy_bytes=$(bytes_of "${inputs[@]}") copy_cpu=$last_cpu
rm -f "$out/copy.bin"
rows+=("$(awk -v s="$copy_seconds" -v b="$copy_bytes" -v u="$copy_cpu" 'BEGIN {printf "| `cat *.safetensors > copy; sync` (the floor) | %.1f s | — | %s | %.2f GB (%.2f GB/s) | %.1f s | 1.00x |", s, u, b / 1e9, (s > 0 ? b / 1e9 / s : 0), s}')")
if [ -n "$synth_seconds" ]; then
  last_seconds=$synth_seconds last_rss=$synth_rss last_cpu=$synth_cpu last_command="gptoss-synth s$preset --preset $preset --layouts hf"
  row "$input_bytes"
fi

# 3. Conversions from the HF checkpoint (each output deleted once timed).
convert() {  # convert NAME OUTPUT ARGS...
  local name=$1 target=$2
  shift 2
  timed "$name" "gptoss-convert s$preset/hf $(basename "$target")${*:+ $*}" \
    "$bin/gptoss-convert" "$model/hf" "$target" -q "$@" "${jobs[@]}"
  row "$(bytes_of "$target")"
}
drop() { [ "$keep_outputs" = 1 ] || rm -f "$@"; }
convert q8_0 "$q8_out" --dense q8_0
drop "$q8_out"
convert modelbin "$mb_out"
drop "$mb_out"
convert bf16 "$bf16_out"
if [ "${BACK:-1}" = 1 ]; then
  # The way back: the BF16 GGUF to an HF checkpoint, byte-identical to the synthesized one.
  timed back "gptoss-convert out.gguf back-hf" "$bin/gptoss-convert" "$bf16_out" "$out/back-hf" -q "${jobs[@]}"
  row "$(bytes_of "$out/back-hf")"
  for f in "${inputs[@]}"; do
    cmp -s "$f" "$out/back-hf/$(basename "$f")" || { echo "bench_conversion: back-hf/$(basename "$f") differs from the checkpoint" >&2; exit 1; }
  done
  rm -rf "$out/back-hf"
fi
drop "$bf16_out"

# 4. Verification: read-only, so the GB/s column is the checkpoint's bytes over the wall time.
verify_row() {
  rows+=("$(awk -v c="$last_command" -v s="$last_seconds" -v r="$last_rss" -v u="$last_cpu" -v b="$input_bytes" 'BEGIN {
    printf "| `%s` | %.1f s | %d MB | %s | reads %.2f GB (%.2f GB/s) | — | — |", c, s, r, u, b / 1e9, (s > 0 ? b / 1e9 / s : 0) }')")
}
timed manifest "gptoss-verify s$preset/hf --write-manifest m.txt" \
  "$bin/gptoss-verify" "$model/hf" --write-manifest "$out/m.txt" -q "${jobs[@]}"
verify_row
timed check "gptoss-verify --check m.txt" "$bin/gptoss-verify" --check "$out/m.txt" -q "${jobs[@]}"
verify_row
[ "${KEEP:-0}" = 1 ] || rm -rf "$model" "$out/m.txt"

sha=$(command -v openssl >/dev/null && openssl speed -evp sha256 -bytes 16384 -seconds 1 2>/dev/null | awk '/^sha256/ {printf "%.2f GB/s", $2 / 1e6}' || true)
echo
echo "$machine; preset $preset; -j ${JOBS:-default (one thread per core)}; SHA-256 of one stream (openssl speed, 16 KiB blocks): ${sha:-n/a}."
echo "Floor: the time of \`cat\` + \`sync\` of $(awk -v b="$copy_bytes" 'BEGIN {printf "%.2f GB", b / 1e9}') on this disk, scaled to each output's bytes."
echo
echo "| command | wall | max RSS | CPU user + sys | output | floor | vs floor |"
echo "|---|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
