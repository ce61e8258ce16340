#!/usr/bin/env python3
"""Regenerates sim/data/mig-mix.csv: inference and notebook pods on MIG slices beside
training jobs on whole GPUs, sized for sim/data/mig-cluster.yaml.

Deterministic (fixed seed). 300 jobs over 4 hours: 60% MIG pods (1g.10gb x 1-2 60%,
2g.20gb 15%, 3g.40gb 25%), 40% whole-GPU jobs (1-8 GPUs, some gangs of 2 x 8).
"""
import random

rng = random.Random(7)
print("submit_time,duration,replicas,gpus_per_replica,tier,queue,checkpoint_interval,name,mig_profile")
t = 0.0
for i in range(300):
    t += rng.expovariate(300 / (4 * 3600))
    dur = round(rng.lognormvariate(7.5, 0.8))
    tier = rng.choices(["high", "standard", "spot"], [20, 60, 20])[0]
    if rng.random() < 0.6:
        u = rng.random()
        if u < 0.6:
            prof, n = "1g.10gb", rng.choice([1, 1, 2])
        elif u < 0.75:
            prof, n = "2g.20gb", 1
        else:
            prof, n = "3g.40gb", 1
        print(f"{t:.0f},{dur},1,{n},{tier},inference,0,mig-{i},{prof}")
    else:
        rep, g = rng.choice([(1, 1), (1, 2), (1, 4), (1, 8), (2, 8)])
        print(f"{t:.0f},{dur},{rep},{g},{tier},training,1800,train-{i},")
