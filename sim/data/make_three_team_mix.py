#!/usr/bin/env python3
"""Regenerates sim/data/three-team-mix.csv: three teams sharing the 24 x 8 H100 cluster of
sim/data/three-team-cluster.yaml with unequal quotas (96 / 64 / 32 GPUs of 192). Written
to test the queues on a workload they were not tuned on (the two-team example was the
one they were developed against): other seed, other shapes, three teams, a tier mix.

Deterministic (fixed seed), 5 days:
- research (96 nominal) floods: big, long training gangs of 2-8 x 8 GPUs, 4-12 h
  log-normal, offering about 120% of the whole cluster; checkpoint every hour;
- product (64 nominal): weekday-like daily 12-hour bursts (07:00-19:00) of 1-2 x 8 GPU
  fine-tunes and 2-4 GPU pods, 0.5-3 h, offering about 90 GPUs; a third never checkpoint;
- infra (32 nominal): small evaluation jobs of 1-4 GPUs around the clock, denser during the
  day (offering about 36 GPUs by day, 12 at night), 10-90 min, a fifth in the high tier,
  none checkpoint.
"""
import math
import random

rng = random.Random(4242)
DAY = 86400
DAYS = 5
jobs = []


def lognorm_clamped(mu, sigma, lo, hi):
    return round(min(hi, max(lo, rng.lognormvariate(mu, sigma))))


# research: mean gang ~40 GPUs x ~7 h -> ~230 GPUs offered needs ~0.8 arrivals/h.
t, i = 0.0, 0
while t < DAYS * DAY:
    t += rng.expovariate(0.8 / 3600)
    rep = rng.choice([2, 2, 3, 4, 4, 6, 8, 8])
    dur = lognorm_clamped(math.log(7 * 3600), 0.4, 4 * 3600, 12 * 3600)
    jobs.append((t, dur, rep, 8, "standard", "research", 3600, f"r-{i}"))
    i += 1
# product: mean ~9 GPUs x ~1.5 h -> ~90 GPUs offered needs ~6.7 arrivals/h during bursts.
i = 0
for day in range(DAYS):
    t, end = day * DAY + 7 * 3600, day * DAY + 19 * 3600
    while True:
        t += rng.expovariate(6.7 / 3600)
        if t >= end:
            break
        u = rng.random()
        if u < 0.35:
            rep, g = 1, rng.choice([2, 4])
        elif u < 0.85:
            rep, g = 1, 8
        else:
            rep, g = 2, 8
        dur = lognorm_clamped(math.log(1.5 * 3600), 0.5, 1800, 3 * 3600)
        ckpt = 0 if rng.random() < 1 / 3 else 900
        jobs.append((t, dur, rep, g, "standard", "product", ckpt, f"p-{i}"))
        i += 1
# infra: mean ~2.2 GPUs x ~40 min; 36 GPUs by day needs ~24/h, 12 at night ~8/h.
t, i = 0.0, 0
while t < DAYS * DAY:
    hour = (t % DAY) / 3600
    rate = 24 if 8 <= hour < 20 else 8
    t += rng.expovariate(rate / 3600)
    g = rng.choice([1, 1, 2, 2, 4])
    dur = lognorm_clamped(math.log(40 * 60), 0.5, 600, 90 * 60)
    tier = "high" if rng.random() < 0.2 else "standard"
    jobs.append((t, dur, 1, g, tier, "infra", 0, f"i-{i}"))
    i += 1
jobs.sort()
print("submit_time,duration,replicas,gpus_per_replica,tier,queue,checkpoint_interval,name")
for j in jobs:
    print(f"{j[0]:.0f},{j[1]},{j[2]},{j[3]},{j[4]},{j[5]},{j[6]},{j[7]}")
