#!/usr/bin/env python3
"""The peer's side of an end-to-end check, as JSON for docs/results/ (scripts/results.py).

    python3 scripts/llama_kld.py BASE.gguf=BASE.log CANDIDATE.gguf=KLD.log... > peer-kld.json

BASE.log is llama-perplexity's output with --kl-divergence-base (its final PPL); each KLD.log its
output with --kl-divergence for one candidate against that base. The JSON names the files,
the base's PPL and each candidate's PPL, KL statistics (nats) and same-top share, as llama.cpp
printed them. Python 3 standard library only.
"""
import json
import os
import re
import sys

NUMBER = r"([-+0-9.eE]+)"


def grab(pattern, log, name, path):
    m = re.search(pattern, log, re.M)
    if not m:
        sys.exit("%s: no %s in llama-perplexity's output" % (path, name))
    return float(m.group(1))


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def main(argv):
    if len(argv) < 2 or any("=" not in a for a in argv):
        sys.exit(__doc__)
    pairs = [a.split("=", 1) for a in argv]
    (base_model, base_log), candidates = pairs[0], pairs[1:]
    log = read(base_log)
    out = {
        "tool": "llama-perplexity",
        "base": {"model": os.path.basename(base_model),
                 "perplexity": grab(r"Final estimate: PPL = " + NUMBER, log, "final estimate", base_log),
                 "perplexity_uncertainty": grab(r"Final estimate: PPL = [-+0-9.eE]+ \+/- " + NUMBER, log, "uncertainty", base_log)},
        "candidates": [],
    }
    for model, path in candidates:
        log = read(path)
        kl = {key: grab(r"^" + label + r"\s*KLD:\s+" + NUMBER, log, label + " KLD", path)
              for key, label in (("mean", "Mean"), ("median", "Median"), ("p99", r"99\.0%"), ("p99_9", r"99\.9%"),
                                 ("max", "Maximum"))}
        out["candidates"].append({
            "model": os.path.basename(model),
            "perplexity": grab(r"^Mean PPL\(Q\)\s*:\s*" + NUMBER, log, "PPL(Q)", path),
            "base_perplexity": grab(r"^Mean PPL\(base\)\s*:\s*" + NUMBER, log, "PPL(base)", path),
            "kl": kl,
            "same_top": grab(r"^Same top p:\s*" + NUMBER, log, "same top p", path) / 100,
        })
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
