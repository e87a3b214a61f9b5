#!/usr/bin/env python3
"""docs/results.md, made from the latest measurement in docs/results/ and never edited by hand.

    python3 scripts/results.py            write docs/results.md from docs/results/
    python3 scripts/results.py --check    exit 1 when docs/results.md is not what the inputs make

The inputs are every *.json file of docs/results/ (sorted by name), each recognised by its content:
  - gptoss-bench --save X.json: an array of results with avg_ts and an "engine" field (ours);
  - llama-bench -o json: an array of results with avg_ts and no "engine" field (the peer);
  - gptoss-eval --json: an object with "chunking" and "reference" (runtime/eval/eval_report.cpp),
    whose arrays of rows (candidates, and any other kind of row it grows) become one table;
  - scripts/llama_kld.py's JSON (llama-perplexity --kl-divergence of candidates against a base, the
    peer's side of an end-to-end check): a table beside the gptoss-eval output whose reference is
    the same base file, candidate by candidate;
and manifest.json, the measurement's provenance: {"machine", "driver", "date", "commit", "notes":
[...], "files": {"NAME.json": "a note on that file"}, "machines": {"NAME.json": "a label"}}: files
with one label ran on one machine (a card can change between calls within an hour; where both
files of a ratio have labels, the labels decide it, else the time between them). Every piece may be missing; the page then
says what was not measured. Python 3 standard library only; the output depends on the inputs alone.
"""
import argparse
import datetime
import difflib
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_INPUTS = os.path.join(ROOT, "docs", "results")
DEFAULT_OUTPUT = os.path.join(ROOT, "docs", "results.md")
PEER = "llama.cpp"


# ---- reading ----

def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f), None
    except (OSError, ValueError) as e:
        return None, "unreadable: %s" % str(e).splitlines()[0]


def classify(data):
    """('ours' | 'peer' | 'eval' | 'peer_eval' | None, why-not)."""
    if isinstance(data, list) and data and all(isinstance(r, dict) and "avg_ts" in r for r in data):
        return ("ours" if all("engine" in r for r in data) else "peer"), None
    if isinstance(data, dict) and isinstance(data.get("chunking"), dict) and isinstance(data.get("reference"), dict):
        return "eval", None
    if isinstance(data, dict) and data.get("tool") == "llama-perplexity" and isinstance(data.get("candidates"), list):
        return "peer_eval", None
    return None, "neither a bench array (objects with avg_ts), a gptoss-eval object nor llama_kld.py's JSON"


def read_inputs(folder):
    manifest, inputs, skipped = {}, [], []
    if not os.path.isdir(folder):
        return manifest, inputs, skipped
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        data, error = load_json(os.path.join(folder, name))
        if name == "manifest.json":
            if isinstance(data, dict):
                manifest = data
            else:
                skipped.append((name, error or "not a JSON object"))
            continue
        kind, why = classify(data) if error is None else (None, error)
        if kind is None:
            skipped.append((name, why))
        else:
            inputs.append({"name": name, "kind": kind, "data": data})
    return manifest, inputs, skipped


# ---- numbers and names ----

def text(value, default="—"):
    if value is None or value == "":
        return default
    return str(value).replace("|", "\\|").replace("\n", " ")


def number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def rate(mean, stddev):
    """Tokens/s as issue tables write them: 6,876 ± 51 above 1000, 390.0 ± 0.3 below."""
    mean, stddev = number(mean), number(stddev)
    if mean is None:
        return "—"
    digits = 0 if abs(mean) >= 1000 else 1
    out = "{:,.{}f}".format(mean, digits)
    if stddev is not None:
        out += " ± {:,.{}f}".format(stddev, digits)
    return out


def integer(row, key):
    try:
        return int(row.get(key) or 0)
    except (TypeError, ValueError):
        return 0


def test_key(row):
    """(kind, size, depth) with llama-bench's test names: pp512, tg128, pp512+tg128, '@ d4096'."""
    p, g, d = integer(row, "n_prompt"), integer(row, "n_gen"), integer(row, "n_depth")
    kind = 0 if g == 0 else 1 if p == 0 else 2
    return (kind, p if kind != 1 else g, g if kind == 2 else 0, d)


def test_name(key):
    kind, size, gen, depth = key
    name = ("pp%d" % size, "tg%d" % size, "pp%d+tg%d" % (size, gen))[kind]
    return name + (" @ d%d" % depth if depth else "")


def base_name(path):
    path = str(path or "")
    if ":" in path and "/" not in path:  # synth:120b
        return path
    stripped = path.rstrip("/")
    return os.path.basename(stripped) or path


def gib(value):
    v = number(value)
    return "%.2f GiB" % (v / 1024 ** 3) if v else None


def time_span(rows):
    times = sorted(str(r["test_time"]) for r in rows if r.get("test_time"))
    if not times:
        return "—"
    return times[0] if times[0] == times[-1] else "%s .. %s" % (times[0], times[-1])


def seconds(row):
    """test_time ("2026-11-28T02:05:31Z") in seconds, or None."""
    try:
        return datetime.datetime.strptime(str(row.get("test_time")), "%Y-%m-%dT%H:%M:%SZ").timestamp()
    except ValueError:
        return None


# A ratio needs both rows from one machine: the same card within this many seconds of each other
# (one machine session); rows of the same kind of card from another session show no ratio.
SAME_SESSION_SECONDS = 3600


def our_config(row):
    """How one of our results was run: engine, KV cache, variant, decode output; and the input file,
    where a model's results come from several (bench_section sets "_input" then)."""
    parts = [text(row.get("engine"), "?"), "KV " + text(row.get("type_k"), "?")]
    if row.get("n_ubatch") and integer(row, "n_prompt"):  # since defebb5; earlier files' chunks: the manifest
        parts.append("chunks of %d" % row["n_ubatch"])
    if row.get("variant"):
        parts.append("variant " + text(row["variant"]))
    if row.get("decode_output") not in (None, "", "logits") and integer(row, "n_gen"):
        parts.append(text(row["decode_output"]))
    if row.get("_input"):
        parts.append("`%s`" % row["_input"])
    return ", ".join(parts)


def config_order(row):
    """Ours in a stable order: the default KV cache (f32) first, then variants by name."""
    return (str(row.get("engine") or ""), row.get("type_k") != "f32", str(row.get("type_k") or ""),
            str(row.get("variant") or ""), str(row.get("decode_output") or ""))


def peer_config(row):
    parts = [text(row.get("backends"), "?"), "KV " + text(row.get("type_k"), "?")]
    if "flash_attn" in row:
        parts.append("flash attention " + ("on" if row["flash_attn"] else "off"))
    if row.get("n_ubatch"):
        parts.append("micro-batch %d" % row["n_ubatch"])
    if row.get("build_commit"):
        parts.append("build " + text(row["build_commit"]))
    return ", ".join(parts)


# ---- the page ----

def provenance(manifest, inputs, skipped):
    out = ["## Machine and provenance", ""]
    fields = [("machine", "machine"), ("driver", "driver"), ("date", "date"), ("commit", "our tools built at")]
    given = [(title, manifest.get(key)) for key, title in fields if manifest.get(key)]
    if given:
        out += ["| | |", "|---|---|"] + ["| %s | %s |" % (title, text(value)) for title, value in given] + [""]
    else:
        out += ["The measurement names no machine (docs/results/manifest.json is absent or empty).", ""]
    for note in manifest.get("notes") or []:
        out += [text(note), ""]
    if inputs:
        notes = manifest.get("files") or {}
        out += ["| input | what | device | measured (UTC) | note |", "|---|---|---|---|---|"]
        for item in inputs:
            data, kind = item["data"], item["kind"]
            if kind == "ours":
                what = "gptoss-bench: " + ", ".join(sorted({our_config(r) for r in data}))
                device, when = text(data[0].get("device")), time_span(data)
            elif kind == "peer":
                what = "llama-bench: " + ", ".join(sorted({peer_config(r) for r in data}))
                device, when = text(data[0].get("gpu_info")), time_span(data)
            elif kind == "peer_eval":
                what = "llama-perplexity --kl-divergence: %d candidates against %s" % (
                    len(data.get("candidates") or []), text((data.get("base") or {}).get("model"), "?"))
                device, when = "—", "—"
            else:
                ref = data.get("reference") or {}
                what = "gptoss-eval: %s on %s as the reference" % (text(base_name(ref.get("model"))), text(ref.get("engine")))
                device, when = "—", "—"
            out.append("| `%s` | %s | %s | %s | %s |" % (item["name"], what, device, when, text(notes.get(item["name"]), "")))
        out.append("")
    for name, why in skipped:
        out += ["Not read: `%s` (%s)." % (name, text(why)), ""]
    return out


def model_key(row):
    return str(row.get("model_filename") or "")


def card(row):
    """The GPU a bench row ran on, without its driver: ours name it in "device" ("NVIDIA H200
    (NVIDIA 580.159.04)"), llama-bench in "gpu_info" ("NVIDIA H200")."""
    name = str(row.get("device") or row.get("gpu_info") or "")
    return name.split(" (")[0]


def bench_section(inputs, machines=None):
    machines = machines if isinstance(machines, dict) else {}
    ours = [dict(r, _input_file=i["name"]) for i in inputs if i["kind"] == "ours" for r in i["data"]]
    peer = [dict(r, _input_file=i["name"]) for i in inputs if i["kind"] == "peer" for r in i["data"]]
    out = ["## Speed", ""]
    if not ours and not peer:
        return out + ["No bench results in this measurement.", ""]
    out += [
        "Tokens per second, mean ± standard deviation over the timed runs (`gptoss-bench`, and `llama-bench` for "
        "%s, on the same machine and the same file): pp*N* a prefill of *N* tokens, tg*N* *N* decode steps, "
        "`@ dD` after *D* tokens already in the KV cache. One table per model and card. The ratio is ours over "
        "%s's where both ran on one machine: the one the manifest names for both files, or, where it names "
        "none, the same card within an hour of each other." % (PEER, PEER),
        "",
    ]
    if not peer:
        out += ["%s was not measured in this measurement: the tables show ours only." % PEER, ""]
    # One table per model and card, in order of size; the peer's rows join ours of the same card by
    # file path, else by file name: timings are compared only where one card gave both.
    order, rows_of = [], {}
    def size(r):
        return number(r.get("model_n_params")) or 0

    for r in sorted(ours, key=lambda r: (size(r), model_key(r), card(r))):
        key = (model_key(r), card(r))
        if key not in rows_of:
            order.append(key)
            rows_of[key] = ([], [])
        rows_of[key][0].append(r)
    for r in peer:
        key = (model_key(r), card(r))
        if key not in rows_of:
            same_name = [k for k in order if base_name(k[0]) == base_name(key[0]) and k[1] == key[1]]
            if same_name:
                key = same_name[0]
            else:
                order.append(key)
                rows_of[key] = ([], [])
        rows_of[key][1].append(r)
    for key in order:
        mine, theirs = rows_of[key]
        if len({r["_input_file"] for r in mine}) > 1:  # name each row's file, so no two files' rows merge
            mine = [dict(r, _input=r["_input_file"]) for r in mine]
        first = (mine or theirs)[0]
        title = "### %s: `%s`" % (text(first.get("model_type"), "model"), text(key[0], "?"))
        out += [title + (", %s" % key[1] if key[1] else ""), ""]
        facts = []
        if mine:
            m = mine[0]
            if m.get("model_format"):
                facts.append(text(m["model_format"]))
            if gib(m.get("model_size")):
                facts.append(gib(m["model_size"]) + " of weights")
            if number(m.get("model_n_params")):
                facts.append("%.2f B parameters" % (number(m["model_n_params"]) / 1e9))
            memory = []
            for r in sorted(mine, key=config_order):
                if gib(r.get("device_memory_bytes")) and (our_config(r), gib(r["device_memory_bytes"])) not in memory:
                    memory.append((our_config(r), gib(r["device_memory_bytes"])))
            facts += ["%s of device memory (%s)" % (m2, c) for c, m2 in memory]
        # One column (and ratio) per peer input file: several builds or settings of the peer on one
        # card (a backend's switches that llama-bench's JSON does not record) are told apart by file.
        peer_files = sorted({r["_input_file"] for r in theirs})
        numbered = len(peer_files) > 1
        if theirs and numbered:
            facts.append("; ".join("%s [%d]: %s (`%s`)" % (PEER, n + 1, ", ".join(sorted({peer_config(r) for r in theirs if r["_input_file"] == f})), f)
                                   for n, f in enumerate(peer_files)))
        elif theirs:
            facts.append("%s: %s" % (PEER, ", ".join(sorted({peer_config(r) for r in theirs}))))
        if facts:
            out += ["; ".join(facts) + ".", ""]
        header = ["%s [%d] | ratio [%d]" % (PEER, n + 1, n + 1) for n in range(len(peer_files))] if numbered else ["%s | ratio" % PEER]
        out += ["| test | ours: how | ours | %s |" % " | ".join(header), "|---|---|---:|" + "---:|---:|" * len(header)]
        tests = sorted({test_key(r) for r in mine + theirs})
        for t in tests:
            configs = []
            for r in sorted((r for r in mine if test_key(r) == t), key=config_order):
                if our_config(r) not in configs:
                    configs.append(our_config(r))
            if not configs:
                cells = []
                for f in peer_files or [None]:
                    rows = [p for p in theirs if test_key(p) == t and p["_input_file"] == f]
                    cells += [rate(rows[0].get("avg_ts"), rows[0].get("stddev_ts")) if rows else "—", "—"]
                out.append("| %s | — | — | %s |" % (test_name(t), " | ".join(cells)))
                continue
            for c in configs:
                r = [x for x in mine if test_key(x) == t and our_config(x) == c][0]
                cells = []
                for f in peer_files or [None]:
                    peer_rows = [p for p in theirs if test_key(p) == t and p["_input_file"] == f]
                    match = [p for p in peer_rows if p.get("type_k") == r.get("type_k")] or peer_rows
                    peer_cell, ratio = "—", "—"
                    if match:
                        p = match[0]
                        peer_cell = rate(p.get("avg_ts"), p.get("stddev_ts"))
                        if p.get("type_k") != r.get("type_k"):
                            peer_cell += " (KV %s)" % text(p.get("type_k"), "?")
                        mean, other = number(r.get("avg_ts")), number(p.get("avg_ts"))
                        ours_at, theirs_at = seconds(r), seconds(p)
                        labels = machines.get(r["_input_file"]), machines.get(p["_input_file"])
                        if labels[0] and labels[1]:
                            if labels[0] != labels[1]:
                                ratio = "— (another machine)"
                            elif mean is not None and other:
                                ratio = "%.2f" % (mean / other)
                        elif ours_at is not None and theirs_at is not None and abs(ours_at - theirs_at) > SAME_SESSION_SECONDS:
                            ratio = "— (another session)"
                        elif mean is not None and other:
                            ratio = "%.2f" % (mean / other)
                    cells += [peer_cell, ratio]
                out.append("| %s | %s | %s | %s |" % (test_name(t), c, rate(r.get("avg_ts"), r.get("stddev_ts")), " | ".join(cells)))
        out.append("")
    return out


# gptoss-eval's table: (title, JSON pointer, format), as runtime/eval/eval_report.cpp prints it.
EVAL_COLUMNS = [
    ("PPL", "/perplexity", "%.4f"),
    ("mean KL", "/kl/mean", "%.3e"),
    ("median KL", "/kl/median", "%.3e"),
    ("p99 KL", "/kl/p99", "%.3e"),
    ("p99.9 KL", "/kl/p99_9", "%.3e"),
    ("max KL", "/kl/max", "%.3e"),
    ("top-1 agree", "/top1_agreement", "percent"),
    ("mean dp", "/dp_mean", "%+.3e"),
    ("RMS dp", "/dp_rms", "%.3e"),
]


def pointer(obj, path):
    for part in path.strip("/").split("/"):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def cell(value, form):
    v = number(value)
    if v is None:
        return "—"
    return "%.2f%%" % (100 * v) if form == "percent" else form % v


def eval_section(inputs):
    out = ["## End-to-end checks (gptoss-eval)", ""]
    evals = [i for i in inputs if i["kind"] == "eval"]
    if not evals:
        return out + ["No gptoss-eval output in this measurement.", ""]
    out += [
        "KL = KL(reference ‖ candidate) in nats per scored token; top-1 agree: the share of positions where both "
        "pick the same most likely token; dp: the candidate's probability of the reference's top token minus the "
        "reference's ([eval.md](eval.md)).",
        "",
    ]
    for item in evals:
        d = item["data"]
        ref, chunking, txt = d.get("reference") or {}, d.get("chunking") or {}, d.get("text") or {}
        out += ["### `%s`" % item["name"], ""]
        line = "Text %s" % text(base_name(txt.get("path")), "?")
        if txt.get("tokens"):
            line += " (%s tokens)" % text(txt["tokens"])
        line += ": %s chunks of %s tokens, %s scored tokens." % (
            text(chunking.get("chunks"), "?"), text(chunking.get("ctx"), "?"), text(chunking.get("scored_tokens"), "?"))
        if number(d.get("tokens_per_second")):
            line += " %s evaluated tokens/s." % rate(d["tokens_per_second"], None)
        out += [line, ""]
        unc = number(ref.get("perplexity_uncertainty"))
        out += ["Reference: `%s` on %s, PPL %s%s." % (
            text(base_name(ref.get("model")), "?"), text(ref.get("engine"), "?"), cell(ref.get("perplexity"), "%.4f"),
            " ± %.4f" % unc if unc is not None else ""), ""]
        kinds = [(k, v) for k, v in d.items() if isinstance(v, list) and all(isinstance(x, dict) for x in v)]
        rows = [(k, x) for k, v in kinds for x in v]
        if not rows:
            out += ["No rows compared against the reference.", ""]
            continue
        show_kind = len(kinds) > 1
        head = (["row"] if show_kind else []) + ["candidate", "engine"] + [c[0] for c in EVAL_COLUMNS]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for k, x in rows:
            cells = ([text(k)] if show_kind else []) + ["`%s`" % text(base_name(x.get("model")), "?"), text(x.get("engine"))]
            cells += [cell(pointer(x, p), f) for _, p, f in EVAL_COLUMNS]
            out.append("| " + " | ".join(cells) + " |")
        renormalized = [x for _, x in rows if x.get("renormalized")]
        out.append("")
        for x in renormalized:
            out += ["`%s` holds %s vocabulary rows: compared on the %s both hold, both distributions renormalized over them." % (
                text(base_name(x.get("model"))), text(x.get("vocab_size"), "?"), text(x.get("shared_rows"), "?")), ""]
    return out


def peer_eval_section(inputs):
    """Each llama_kld.py file beside the gptoss-eval file whose reference is its base, candidate by candidate."""
    peers = [i for i in inputs if i["kind"] == "peer_eval"]
    if not peers:
        return []
    out = ["## End-to-end checks beside %s (llama-perplexity --kl-divergence)" % PEER, ""]
    for item in peers:
        d = item["data"]
        base = d.get("base") or {}
        ours = [i for i in inputs if i["kind"] == "eval"
                and base_name((i["data"].get("reference") or {}).get("model")) == text(base.get("model"), "?")]
        out += ["### `%s`" % item["name"], ""]
        if not ours:
            out += ["No gptoss-eval output has `%s` as its reference: the peer's rows alone." % text(base.get("model"), "?"), ""]
        ours.sort(key=lambda i: not i["data"].get("candidates"))  # the file with candidates names the reference
        mine = {}
        for i in ours:
            for x in i["data"].get("candidates") or []:
                mine[base_name(x.get("model"))] = (x, i["data"].get("reference") or {})
        out += ["Base `%s`: %s's PPL %s%s; ours in %s." % (
            text(base.get("model"), "?"), PEER, cell(base.get("perplexity"), "%.4f"),
            "" if not ours else " (gptoss-eval's reference on %s: %s)" % (
                text((ours[0]["data"].get("reference") or {}).get("engine"), "?"),
                cell((ours[0]["data"].get("reference") or {}).get("perplexity"), "%.4f")),
            ", ".join("`%s`" % i["name"] for i in ours) or "no file"), ""]
        head = ["candidate", "mean KL (ours)", "mean KL (%s)" % PEER, "median KL (ours)", "median KL (%s)" % PEER,
                "p99 KL (ours)", "p99 KL (%s)" % PEER, "top-1 agree (ours)", "same top (%s)" % PEER,
                "PPL ratio (ours)", "PPL ratio (%s)" % PEER]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for x in d.get("candidates") or []:
            name = text(x.get("model"), "?")
            o, ref = mine.get(name, ({}, {}))
            ratio_ours = (number(o.get("perplexity")) / number(ref.get("perplexity"))
                          if number(o.get("perplexity")) and number(ref.get("perplexity")) else None)
            ratio_peer = (number(x.get("perplexity")) / number(x.get("base_perplexity"))
                          if number(x.get("perplexity")) and number(x.get("base_perplexity")) else None)
            cells = ["`%s`" % name]
            for key in ("mean", "median", "p99"):
                cells += [cell(pointer(o, "kl/" + key), "%.3e"), cell(pointer(x, "kl/" + key), "%.3e")]
            cells += [cell(o.get("top1_agreement"), "percent"), cell(x.get("same_top"), "percent"),
                      cell(ratio_ours, "%.4f"), cell(ratio_peer, "%.4f")]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return out


def make_page(folder):
    manifest, inputs, skipped = read_inputs(folder)
    out = [
        "<!-- Generated by scripts/results.py from docs/results/: change those inputs and run the script, never this page. -->",
        "# Measured results",
        "",
        "Every measured speed of the toolkit, and the end-to-end checks of the latest measurement, live on this page "
        "and nowhere else in the manual. It is made by `python3 scripts/results.py` from the JSON in `docs/results/`; "
        "the ctest test `docs.results_page` fails when the two disagree. How to measure again: "
        "[README.md](../README.md), \"Measuring on a GPU machine\".",
        "",
    ]
    if not inputs and not manifest:
        out += ["No measurement in docs/results/.", ""]
    out += provenance(manifest, inputs, skipped)
    out += bench_section(inputs, manifest.get("machines"))
    out += eval_section(inputs)
    out += peer_eval_section(inputs)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", default=DEFAULT_INPUTS, help="the measurement's folder (default docs/results)")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help="the page (default docs/results.md)")
    parser.add_argument("--check", action="store_true", help="only compare the page with what the inputs make")
    args = parser.parse_args()
    page = make_page(args.inputs)
    if args.check:
        try:
            with open(args.output, encoding="utf-8") as f:
                current = f.read()
        except OSError as e:
            print("%s: %s; run python3 scripts/results.py" % (args.output, e.strerror), file=sys.stderr)
            return 1
        if current == page:
            return 0
        diff = list(difflib.unified_diff(current.splitlines(), page.splitlines(), args.output, "scripts/results.py", lineterm=""))
        print("\n".join(diff[:60]), file=sys.stderr)
        print("%s differs from what scripts/results.py makes of %s: run python3 scripts/results.py" % (args.output, args.inputs),
              file=sys.stderr)
        return 1
    folder = os.path.dirname(os.path.abspath(args.output))
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=folder, prefix=".results-", suffix=".md", delete=False) as f:
        f.write(page)
    os.chmod(f.name, 0o644)
    os.replace(f.name, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
