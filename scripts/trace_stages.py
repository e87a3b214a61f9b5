"""A gptoss-run --trace file's stages (runtime/parity/trace_file.h), for the scripts that read one
(router_gaps.py, expert_tiles.py): the zstd command decompresses it, then the header's JSON names
each stage (name, rows, cols) and its values follow in that order, rows x cols little-endian f32.
"""
import json, struct, subprocess


class Trace:
    def __init__(self, path):
        self.raw = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
        line = self.raw.index(b"\n")
        self.header, end = json.JSONDecoder().raw_decode(self.raw[line + 1:].decode("latin1"))
        at = line + 1 + end + 1  # the header's JSON and a newline, then each stage's values in order
        self.stages = {}  # name: (offset, rows, cols)
        for s in self.header["stages"]:
            self.stages[s["name"]] = (at, s["rows"], s["cols"])
            at += s["rows"] * s["cols"] * 4

    def row(self, name, r):
        offset, _, cols = self.stages[name]
        return struct.unpack_from("<%df" % cols, self.raw, offset + 4 * r * cols)

    def values(self, name):
        offset, rows, cols = self.stages[name]
        return struct.unpack_from("<%df" % (rows * cols), self.raw, offset)
