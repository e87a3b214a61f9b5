#!/usr/bin/env python3
"""Development check: the hand-written o200k pre-tokenizer against Python's `regex` module (a
backtracking engine with Unicode classes) on about 1 MB of random mixed text.

  python3 tools/unicode/crosscheck_pretokenizer.py /tmp/split_dump [tokenizer.json]

Code points unassigned in Python's own Unicode database are left out, so that differences between
Unicode versions (our tables: 15.0) do not show up as mismatches.
"""
import json
import random
import subprocess
import sys
import unicodedata

import regex

split_dump = sys.argv[1]
tokenizer_json = sys.argv[2] if len(sys.argv) > 2 else ".cache/tokenizer.json"
pattern = json.load(open(tokenizer_json))["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
compiled = regex.compile(pattern)

PIECES = ["the", "The", "THE", "don't", "DON'T", "I'M", "x'LL", "'s", "\u017f", "'\u017f", "HTTPServer", "na\u00efve",
          "e\u0301", "\u0301", "\u03a9\u03bc\u03ad\u03b3\u03b1", "\u65e5\u672c\u8a9e", "\U0001F44D\U0001F3FD",
          "\U0001F468\u200d\U0001F469\u200d\U0001F467", " ", "  ", "   ", "\t", "\n", "\r\n", " \n", "\n ", "\u00a0",
          "\u3000", "\u200b", "12345", "\u0663\u0664\u0665", "...", "!?", "/", "a/b", "\x07", ",", "'", "''",
          "\u01c5", "\u02b0", "\u2177"]


def random_code_point(rng):
    while True:
        cp = rng.randrange(1, 0x32000)
        if 0xD800 <= cp < 0xE000 or unicodedata.category(chr(cp)) == "Cn":
            continue
        return chr(cp)


rng = random.Random(5)
text = "".join(random_code_point(rng) if rng.random() < 0.15 else rng.choice(PIECES) for _ in range(300000))
data = text.encode()
ours = [int(x) for x in subprocess.run([split_dump], input=data, capture_output=True, check=True).stdout.split()]
reference = [len(m.group().encode()) for m in compiled.finditer(text)]
print(f"{len(data)} bytes: {len(ours)} pieces (ours), {len(reference)} (regex module)")
offset = 0
for i, (a, b) in enumerate(zip(ours, reference)):
    if a != b:
        print(f"first difference at piece {i}, byte {offset}: {data[offset:offset + 40]!r} ours {a} regex {b}")
        sys.exit(1)
    offset += a
sys.exit(0 if len(ours) == len(reference) else 1)
