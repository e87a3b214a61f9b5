# Sourced by the make_*_goldens.sh scripts: their arguments (LLAMA_BIN_DIR OUT_DIR [TOOLS_DIR])
# checked, and a work folder that is removed on exit. Sets LLAMA_BIN, OUT, ROOT, TOOLS, QUANTIZE
# and WORK; need_tools TOOL... checks that llama-quantize and the script's own tools are there.
if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 LLAMA_BIN_DIR OUT_DIR [TOOLS_DIR]" >&2
  exit 2
fi
LLAMA_BIN=$(cd "$1" && pwd)
OUT=$2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOLS=$(cd "${3:-$ROOT/build/tools}" && pwd)
QUANTIZE=$LLAMA_BIN/llama-quantize
need_tools() {
  for tool in "$QUANTIZE" "$@"; do
    [[ -x $tool ]] || { echo "missing executable: $tool" >&2; exit 2; }
  done
}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
