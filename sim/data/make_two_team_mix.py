#!/usr/bin/env python3
"""Regenerates sim/data/two-team-mix.csv: two teams sharing the 32 x 8 H100 cluster of
sim/data/two-team-cluster.yaml, each with a nominal quota of half of it (128 GPUs).

Deterministic (fixed seed), 4 days:
- team-a floods: all the time, gangs of 1-8 x 8 GPUs (and some 4-GPU pods) offering
  about 150% of the whole cluster, 2-6 h log-normal runs, checkpoint every 30 min;
- team-b is bursty: every day a 10-hour burst of 1-4 x 8 GPU gangs and 1-4 GPU pods
  offering about 160 GPUs (more than its quota), 1-3 h runs, checkpoint every 20 min
  or never; nothing between bursts.
Both standard tier: queues, not tiers, decide who runs.
"""
import random

rng = random.Random(2026_17)
DAY = 86400
jobs = []
# team-a: Poisson arrivals; mean gang ~26 GPUs x ~4 h -> 384 GPUs offered needs ~3.7/h.
t = 0.0
i = 0
while t < 4 * DAY:
    t += rng.expovariate(3.7 / 3600)
    u = rng.random()
    if u < 0.15:
        rep, g = 1, 4
    elif u < 0.50:
        rep, g = 1, 8
    elif u < 0.80:
        rep, g = rng.choice([2, 3, 4]), 8
    else:
        rep, g = 8, 8
    dur = round(min(6 * 3600, max(2 * 3600, rng.lognormvariate(9.55, 0.35))))
    jobs.append((t, dur, rep, g, "standard", "team-a", 1800, f"a-{i}"))
    i += 1
# team-b: bursts from 08:00 to 18:00 each day; mean ~12 GPUs x ~2 h -> 160 GPUs needs ~6.7/h.
i = 0
for day in range(4):
    t = day * DAY + 8 * 3600
    end = day * DAY + 18 * 3600
    while True:
        t += rng.expovariate(6.7 / 3600)
        if t >= end:
            break
        u = rng.random()
        if u < 0.30:
            rep, g = 1, rng.choice([1, 2, 4])
        elif u < 0.75:
            rep, g = 1, 8
        else:
            rep, g = rng.choice([2, 3, 4]), 8
        dur = round(min(3 * 3600, max(3600, rng.lognormvariate(8.85, 0.3))))
        ckpt = rng.choice([0, 1200])
        jobs.append((t, dur, rep, g, "standard", "team-b", ckpt, f"b-{i}"))
        i += 1
jobs.sort()
print("submit_time,duration,replicas,gpus_per_replica,tier,queue,checkpoint_interval,name")
for j in jobs:
    print(f"{j[0]:.0f},{j[1]},{j[2]},{j[3]},{j[4]},{j[5]},{j[6]},{j[7]}")
