#!/usr/bin/env python3
"""scripts/results.py's ratio to the peer: shown only where both rows ran on one machine.

The manifest's machines labels decide where both files have one (two calls within an hour may get
two cards of one kind); else the hour between the rows' test times does. Run from the repository's
root: python3 tests/docs/results_pairing_test.py
"""
import importlib.util
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("results", os.path.join(ROOT, "scripts", "results.py"))
results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results)


def ours(time):
    return {"engine": "vulkan", "type_k": "f32", "model_filename": "/w/q8_0.gguf", "model_type": "gpt-oss 21B Q8_0",
            "model_n_params": 20914757184, "device": "NVIDIA H200 (NVIDIA 580.159.04)", "n_prompt": 512, "n_gen": 0,
            "n_depth": 0, "avg_ts": 8000.0, "stddev_ts": 10.0, "test_time": time}


def peer(time):
    return {"model_filename": "/w/q8_0.gguf", "model_type": "gpt-oss 20B Q8_0", "gpu_info": "NVIDIA H200",
            "backends": "CUDA", "type_k": "f16", "n_prompt": 512, "n_gen": 0, "n_depth": 0, "avg_ts": 10000.0,
            "stddev_ts": 50.0, "test_time": time}


def ratio_cell(our_time, peer_time, machines):
    inputs = [{"name": "bench.json", "kind": "ours", "data": [ours(our_time)]},
              {"name": "peer.json", "kind": "peer", "data": [peer(peer_time)]}]
    rows = [line for line in results.bench_section(inputs, machines) if line.startswith("| pp512 |")]
    if len(rows) != 1:
        raise AssertionError("one pp512 row expected, got %r" % rows)
    return [cell.strip() for cell in rows[0].strip("|").split("|")][4]


class RatioNeedsOneMachine(unittest.TestCase):
    def test_within_an_hour_without_labels(self):
        self.assertEqual(ratio_cell("2026-11-29T07:50:00Z", "2026-11-29T08:20:00Z", None), "0.80")

    def test_hours_apart_without_labels(self):
        self.assertEqual(ratio_cell("2026-11-29T07:50:00Z", "2026-11-29T09:20:00Z", None), "— (another session)")

    def test_one_label(self):
        label = {"bench.json": "a", "peer.json": "a"}
        self.assertEqual(ratio_cell("2026-11-29T07:50:00Z", "2026-11-29T09:20:00Z", label), "0.80")

    def test_two_labels_within_an_hour(self):
        labels = {"bench.json": "a", "peer.json": "b"}
        self.assertEqual(ratio_cell("2026-11-29T07:50:00Z", "2026-11-29T07:55:00Z", labels), "— (another machine)")

    def test_a_label_on_one_file_only(self):
        self.assertEqual(ratio_cell("2026-11-29T07:50:00Z", "2026-11-29T07:55:00Z", {"bench.json": "a"}), "0.80")


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False).result.wasSuccessful() else 1)
