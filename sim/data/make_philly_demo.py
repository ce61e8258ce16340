#!/usr/bin/env python3
"""Regenerates sim/data/philly-demo.csv from the Pollux-preprocessed Philly trace.

Takes the 2,000 consecutive jobs (by submit time) starting at sorted index 79,500 of
philly.csv -- the window with the most multi-node (> 8 GPU) jobs -- and divides every
gap between submit times by 36, so the 2,000 jobs arrive in about 8 hours instead of
12 days and contend for the 512-GPU demo cluster. Columns and durations are unchanged.
Usage: make_philly_demo.py ../shared/traces/philly-pollux-derived/philly.csv > philly-demo.csv
"""
import csv
import datetime
import sys

START, COUNT, SCALE = 79500, 2000, 36
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    r["t"] = datetime.datetime.strptime(r["timestamp"], "%Y-%m-%d %H:%M:%S")
rows.sort(key=lambda r: r["t"])  # stable: ties keep file order
window = rows[START:START + COUNT]
t0 = window[0]["t"]
out = csv.writer(sys.stdout, lineterminator="\n")
out.writerow(["timestamp", "duration", "num_gpus", "gpu_time", "cluster"])
for r in window:
    t = t0 + datetime.timedelta(seconds=int((r["t"] - t0).total_seconds() / SCALE))
    out.writerow([t.strftime("%Y-%m-%d %H:%M:%S"), r["duration"], r["num_gpus"], r["gpu_time"], r["cluster"]])
