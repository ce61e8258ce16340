#!/usr/bin/env python3
"""Regenerates sim/data/gang-mix.csv: a synthetic mix of distributed-training gangs and
single-GPU work with tiers and checkpoints, sized for the 64 x 8 demo cluster.

Deterministic (fixed seed). 400 jobs over 6 hours: 45% 1-GPU pods, 15% 2-4 GPU pods,
25% gangs of 2-4 x 8, 12% gangs of 8 x 8, 3% gangs of 16-32 x 8; tiers 5% critical,
20% high, 50% standard, 25% spot; checkpoint interval 600-3600 s or none.
"""
import random

rng = random.Random(20231)
print("submit_time,duration,replicas,gpus_per_replica,tier,queue,checkpoint_interval,name")
t = 0.0
for i in range(400):
    t += rng.expovariate(400 / (6 * 3600))
    u = rng.random()
    if u < 0.45:
        rep, g = 1, 1
    elif u < 0.60:
        rep, g = 1, rng.choice([2, 4])
    elif u < 0.85:
        rep, g = rng.choice([2, 3, 4]), 8
    elif u < 0.97:
        rep, g = 8, 8
    else:
        rep, g = rng.choice([16, 32]), 8
    tier = rng.choices(["critical", "high", "standard", "spot"], [5, 20, 50, 25])[0]
    dur = round(rng.lognormvariate(8.3, 1.0))
    ckpt = rng.choice([0, 600, 1800, 3600])
    queue = rng.choice(["vision", "nlp", "speech", "research"])
    print(f"{t:.0f},{dur},{rep},{g},{tier},{queue},{ckpt},mix-{i}")
