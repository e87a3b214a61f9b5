#!/usr/bin/env python3
"""How full the prefill expert GEMMs' tiles are for a traced forward pass's routing.

    gptoss-run MODEL --engine cpu -p TEXT -n 0 --trace run.trace
    scripts/expert_tiles.py run.trace [--tile 64] [--half 32] [--layers]

The Vulkan engine's prefill groups each layer's (token, expert) choices by expert and multiplies
each expert's rows in tiles of `--tile` rows (GEMM_TILE_M), the last tile of an expert holding what
is left; every tile decodes and stores its expert's whole W tile whatever its rows. From the
trace's `router L` stages (the experts each position chose) this counts the tiles, what full tiles
would take (choices / tile), the share of row slots filled, and the tiles of at most `--half` rows
(half their subgroups' 32-row blocks idle); --layers prints each layer.
Pure Python (trace_stages.py beside it); the zstd command decompresses the trace. docs/vulkan-engine.md, Open work, has the
synthesized 20b's numbers.
"""
import argparse, math

from trace_stages import Trace

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("trace")
ap.add_argument("--tile", type=int, default=64, help="rows per tile (default 64, GEMM_TILE_M)")
ap.add_argument("--half", type=int, default=32, help="a tile of at most this many rows counts as half empty (default 32)")
ap.add_argument("--layers", action="store_true", help="one line per layer")
a = ap.parse_args()

trace = Trace(a.trace)
routers = sorted((int(name.split()[1]), name) + trace.stages[name][1:] for name in trace.stages if name.startswith("router "))
if not routers:
    raise SystemExit(f"{a.trace}: no 'router L' stages (a trace written before the router stages)")

total_tiles = total_choices = total_half = 0
for layer, name, positions, k in routers:
    rows = {}
    for e in trace.values(name):
        rows[int(e)] = rows.get(int(e), 0) + 1
    tiles = sum(math.ceil(n / a.tile) for n in rows.values())
    half = sum(1 for n in rows.values() if 0 < n % a.tile <= a.half)
    total_tiles += tiles
    total_choices += positions * k
    total_half += half
    if a.layers:
        print(f"layer {layer}: {len(rows)} experts of {min(rows.values())} to {max(rows.values())} rows, "
              f"{tiles} tiles, {half} of at most {a.half} rows")
print(f"{len(routers)} layers x {routers[0][2]} positions, {routers[0][3]} experts per position")
print(f"tiles of {a.tile} rows: {total_tiles} where full ones would take {total_choices / a.tile:.1f} "
      f"({100 * total_choices / (total_tiles * a.tile):.1f}% of the row slots filled)")
print(f"tiles of at most {a.half} rows: {total_half}")
