#!/usr/bin/env python3
"""Build an LZ4 dictionary for the store's records from the repository's
fixtures (event samples and scheduler ledgers), one compact JSON record a
line, the most common shapes last (LZ4 keeps the latest position of each
hash, and a match is cheapest near the input).

A dictionary the store has written with is frozen: `assets/store/lz4-dict-v1.jsonl`
was made by this script on 2026-11-23 and must never change (records
compressed against it would no longer decode). A better one becomes v2,
with its own tag in src/store/codec.rs.

    scripts/store-dict.py > assets/store/lz4-dict-v2.jsonl
"""
import glob
import json
import sys

LIMIT = 40 * 1024


def compact(raw):
    return json.dumps(json.loads(raw), separators=(",", ":"), ensure_ascii=False)


lines = []
for path in sorted(glob.glob("tests/fixtures/scheduler/*/ledger/*.jsonl")):
    lines += [compact(l) for l in open(path, encoding="utf-8") if l.strip()]
# Event samples, the kinds every turn writes last.
common = ["agent_state_changed", "message_processed", "turn_terminal",
          "message_processing_started", "brief_created", "runtime_error",
          "turn_started", "scheduler_decision", "message_admitted"]
samples = {p.split("/")[-1][:-5]: p for p in glob.glob("tests/fixtures/events/*.json")}
for kind in sorted(samples, key=lambda k: (k in common, common.index(k) if k in common else 0, k)):
    lines.append(compact(open(samples[kind], encoding="utf-8").read()))

out = ""
for line in reversed(lines):
    if len(out) + len(line) + 1 > LIMIT:
        break
    out = line + "\n" + out
sys.stdout.write(out)
