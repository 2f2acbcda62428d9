#!/usr/bin/env python3
"""Build an LZ4 dictionary for the store's records from the repository's
fixtures (event samples and one record of each scheduler ledger table),
one compact JSON record a line, the shapes every turn writes last (LZ4
keeps the latest position of each hash).

A dictionary the store has written with is frozen: `assets/store/lz4-dict-v1.jsonl`
was made by this script on 2026-11-23 and must never change (records
compressed against it would no longer decode). A better one becomes v2,
with its own tag in src/store/codec.rs.

    scripts/store-dict.py > assets/store/lz4-dict-v2.jsonl
"""
import glob
import json
import sys

# LZ4 keeps 4,096 hash slots, so a longer dictionary matches little more
# and costs more: each compression hashes the whole dictionary first
# (12 KiB: ~3-4 µs a record; 38 KiB: ~12 µs, for a ~3% better ratio).
LIMIT = 12 * 1024


def compact(raw):
    return json.dumps(json.loads(raw), separators=(",", ":"), ensure_ascii=False)


# One record of each ledger table the scheduler fixtures hold.
ledger = {}
for path in sorted(glob.glob("tests/fixtures/scheduler/*/ledger/*.jsonl")):
    table = path.split("/")[-1][: -len(".jsonl")]
    if table == "events" or table in ledger:
        continue
    rows = [l for l in open(path, encoding="utf-8") if l.strip()]
    if rows:
        ledger[table] = compact(rows[0])
# Event samples: the kinds every turn writes go last (nearest the input).
common = ["agent_state_changed", "message_processed", "turn_terminal",
          "message_processing_started", "brief_created", "runtime_error",
          "turn_started", "scheduler_decision", "message_admitted"]
samples = {p.split("/")[-1][:-5]: p for p in glob.glob("tests/fixtures/events/*.json")}
rare = [k for k in sorted(samples) if k not in common]
lines = [compact(open(samples[k], encoding="utf-8").read()) for k in rare]
lines += [ledger[t] for t in sorted(ledger)]
lines += [compact(open(samples[k], encoding="utf-8").read()) for k in common if k in samples]

out = ""
for line in reversed(lines):
    if len(out) + len(line) + 1 > LIMIT:
        continue
    out = line + "\n" + out
sys.stdout.write(out)
