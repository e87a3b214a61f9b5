#!/usr/bin/env python3
"""The closest router decisions of a traced forward pass: where a near-tie can go either way.

    gptoss-run HF_FOLDER --engine cpu-f64 --prompt-tokens IDS -n 0 --trace run.trace
    scripts/router_gaps.py run.trace HF_FOLDER/model.safetensors [--first P] [--last P] [--most N] [--check]

Each layer's router logits are recomputed in double from the trace's `attention L` stage (the
residual stream after the layer's attention, rounded to f32 as the trace holds it): RMSNorm with the
layer's post_attention_layernorm, then the router's weight and bias, read from an HF checkpoint's
single safetensors file. For every (layer, position) the closest pair among the first k + 1 logits
(k experts per token) is measured against the sum of its products' magnitudes (the scale of an f32
engine's rounding), and the closest are printed: rank k-1 over rank k decides which experts run,
the pairs above it only their order. An engine whose relative error at that layer exceeds the gap
may decide it otherwise. --check also requires the recomputed choices to be the trace's own
(`router L`) wherever the gap exceeds 2^-20 of that scale (the trace's f32 rounding of the input
can decide a closer one), and exits 1 where one is not.
Pure Python (trace_stages.py beside it); the zstd command decompresses the trace. About 1.5 s per position of gpt-oss-20b.
"""
import argparse, json, math, struct

from trace_stages import Trace

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("trace")
ap.add_argument("safetensors")
ap.add_argument("--first", type=int, default=0, help="first position (default 0)")
ap.add_argument("--last", type=int, help="last position (default the prompt's last)")
ap.add_argument("--most", type=int, default=8, help="decisions printed (default 8)")
ap.add_argument("--eps", type=float, default=1e-5, help="RMSNorm's epsilon (default 1e-5, gpt-oss's)")
ap.add_argument("--check", action="store_true", help="the recomputed choices must be the trace's")
a = ap.parse_args()

trace = Trace(a.trace)
header, stages, row = trace.header, trace.stages, trace.row
if "attention 0" not in stages:
    raise SystemExit(f"{a.trace}: no stage 'attention 0' (a trace written before the attention stages)")
k = stages["router 0"][2]
layers = sum(1 for name in stages if name.startswith("router "))

f = open(a.safetensors, "rb")
size = struct.unpack("<Q", f.read(8))[0]
tensors = json.loads(f.read(size))
def tensor(name):
    t = tensors[name]
    begin, stop = t["data_offsets"]
    f.seek(8 + size + begin)
    data = f.read(stop - begin)
    if t["dtype"] == "BF16":
        halves = struct.unpack("<%dH" % (len(data) // 2), data)
        return struct.unpack("<%df" % len(halves), struct.pack("<%dI" % len(halves), *[h << 16 for h in halves]))
    if t["dtype"] == "F32":
        return struct.unpack("<%df" % (len(data) // 4), data)
    raise SystemExit(f"{name}: {t['dtype']} (BF16 or F32 expected)")

positions = len(header["prompt_tokens"])
last = min(positions - 1 if a.last is None else a.last, positions - 1)
found, differ = [], []
for layer in range(layers):
    p = f"model.layers.{layer}."
    norm, weight, bias = tensor(p + "post_attention_layernorm.weight"), tensor(p + "mlp.router.weight"), tensor(p + "mlp.router.bias")
    hidden = len(norm)
    rows = [weight[e * hidden:(e + 1) * hidden] for e in range(len(bias))]
    for pos in range(a.first, last + 1):
        x = row(f"attention {layer}", pos)
        inv = 1 / math.sqrt(math.fsum(v * v for v in x) / hidden + a.eps)
        xn = [v * inv * g for v, g in zip(x, norm)]
        logits = []
        for e, w in enumerate(rows):
            products = [u * v for u, v in zip(w, xn)]
            logits.append((math.fsum(products) + bias[e], math.fsum(map(abs, products)), e))
        logits.sort(key=lambda t: (-t[0], t[2]))  # largest first, ties to the lowest id, as the engines
        gap, rank = min(((logits[i][0] - logits[i + 1][0]) / logits[i][1], i) for i in range(k))
        found.append((gap, layer, pos, rank, logits[rank][2], logits[rank + 1][2]))
        mine = [e for _, _, e in logits[:k]]
        chosen = [int(c) for c in row(f"router {layer}", pos)]
        if mine != chosen and gap > 2.0**-20:
            differ.append((layer, pos, chosen, mine))
found.sort()
print(f"{header['label']}: {len(found)} router decisions, the closest {min(a.most, len(found))}")
for gap, layer, pos, rank, e1, e2 in found[:a.most]:
    what = "which experts run" if rank == k - 1 else "their order"
    print(f"layer {layer:2d} position {pos:4d}: rank {rank} (expert {e1}) over rank {rank + 1} (expert {e2}) by "
          f"{gap:.2e} of the products' magnitudes ({gap / 2**-24:.1f} x 2^-24): {what}")
if a.check:
    for layer, pos, chosen, mine in differ:
        print(f"layer {layer} position {pos}: the trace chose {chosen}, recomputed {mine}")
    print(f"{len(found) - len(differ)} of {len(found)} decisions as the trace's (beyond 2^-20)")
    raise SystemExit(1 if differ else 0)
