#!/usr/bin/env python3
"""Regenerates sim/data/llm-mix.csv: an LLM-era workload for sim/data/llm-cluster.yaml.

Written for Phalanx (not a trace). Its shape follows what public studies of LLM
development clusters report, not any one trace:
  - Hu et al., "Characterization of Large Language Model Development in the Datacenter"
    (Acme: the Seren and Kalos clusters), NSDI 2024: most jobs are small and short
    (evaluation, debugging: a few GPUs, minutes), a few percent of jobs are pretraining
    gangs of hundreds of GPUs running for days that take most of the GPU time, and
    checkpoints are taken every 30-60 minutes;
  - Weng et al., "MLaaS in the Wild" (Alibaba PAI), NSDI 2022, and the Alibaba GPU
    cluster traces: long-running inference services next to training, heavy-tailed
    (log-normal) durations, most GPU time in few jobs.
Job classes (share of jobs; GPUs; median duration; tier; checkpoint; GPU model):
  eval      45%  1-8 GPUs        20 min  standard  none          any
  spot-ft   20%  1-16 GPUs        2 h    spot      10-20 min     H100 or A100
  train     15%  16-64 GPUs       6 h    standard  30 min        H100 or A100
  urgent     7%  8-64 GPUs        3 h    high      30 min        H100
  pretrain   3%  128-256 GPUs    24 h    standard  30-60 min     H100
  infer      4%  1-4 GPUs        whole   critical  (stateless)   A100 or L40S
                                 trace
  infer-hi   6%  1-4 GPUs        8 h     high      (stateless)   L40S
Submit times are a Poisson process whose rate makes the offered load (GPU-seconds asked
for / GPU-seconds the fleet has over the submit span) equal --load (default 1.10).
Inference services are long-running: they start in the first 15% of the span and run
until about its end (85-100% of the span after it began).

Deterministic for a given --seed (the bundled file: seed 2026, 10,000 jobs). Tune on one
seed and check on another: `make_llm_mix.py --seed 7 > /tmp/llm-7.csv`.
"""
import argparse
import math
import random

FLEET_GPUS = {"H100": 512 * 8, "A100-SXM4-80GB": 256 * 8, "L40S": 96 * 4}

# (name, weight, tier)
CLASSES = [
    ("eval", 46, "standard"),
    ("spot-ft", 20, "spot"),
    ("train", 15, "standard"),
    ("urgent", 7, "high"),
    ("pretrain", 2, "standard"),
    ("infer", 4, "critical"),
    ("infer-hi", 6, "high"),
]


def lognorm(rng, median_s, sigma, lo, hi):
    return max(lo, min(hi, rng.lognormvariate(math.log(median_s), sigma)))


def make_job(rng, cls):
    """-> (replicas, gpus_per_replica, duration_s, checkpoint_s, pool or '')"""
    if cls == "eval":
        g = rng.choices([1, 2, 4, 8], [30, 15, 20, 35])[0]
        return 1, g, lognorm(rng, 20 * 60, 1.0, 60, 6 * 3600), 0, ""
    if cls == "spot-ft":
        rep, g = rng.choices([(1, 1), (1, 2), (1, 4), (1, 8), (2, 8)], [15, 15, 25, 30, 15])[0]
        pool = rng.choice(["H100", "A100-SXM4-80GB"])
        return rep, g, lognorm(rng, 2 * 3600, 0.8, 600, 24 * 3600), rng.choice([600, 900, 1200]), pool
    if cls == "train":
        rep = rng.choices([2, 4, 8], [45, 35, 20])[0]
        pool = rng.choices(["H100", "A100-SXM4-80GB"], [50, 50])[0]
        return rep, 8, lognorm(rng, 4 * 3600, 0.9, 1800, 3 * 86400), 1800, pool
    if cls == "urgent":
        rep = rng.choices([1, 2, 4, 8], [30, 30, 25, 15])[0]
        pool = rng.choices(["H100", "A100-SXM4-80GB"], [70, 30])[0]
        return rep, 8, lognorm(rng, 3 * 3600, 0.8, 900, 86400), 1800, pool
    if cls == "pretrain":
        rep = rng.choices([16, 24, 32], [50, 20, 30])[0]
        pool = rng.choices(["H100", "A100-SXM4-80GB"], [75, 25])[0]
        return rep, 8, lognorm(rng, 12 * 3600, 0.6, 3 * 3600, 2 * 86400), rng.choice([1800, 3600]), pool
    if cls == "infer":
        g = rng.choices([1, 2, 4], [50, 30, 20])[0]
        pool = rng.choices(["L40S", "A100-SXM4-80GB"], [25, 75])[0]
        return 1, g, None, 0, pool  # duration and submit set once the span is known
    if cls == "infer-hi":
        g = rng.choices([1, 2, 4], [50, 30, 20])[0]
        return 1, g, lognorm(rng, 8 * 3600, 0.7, 1800, 2 * 86400), 0, "L40S"
    raise ValueError(cls)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--load", type=float, default=1.10)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    names = [c[0] for c in CLASSES]
    weights = [c[1] for c in CLASSES]
    tiers = {c[0]: c[2] for c in CLASSES}
    jobs = []
    for i in range(args.jobs):
        cls = rng.choices(names, weights)[0]
        rep, g, dur, ckpt, pool = make_job(rng, cls)
        jobs.append([cls, rep, g, dur, ckpt, pool, None])
    # Inference services run for (most of) the span, which depends on their own demand:
    # iterate to the fixed point.
    infer = [j for j in jobs if j[3] is None]
    fracs = [(rng.uniform(0, 0.15), rng.uniform(0.85, 1.0)) for _ in infer]
    other = sum(rep * g * dur for _, rep, g, dur, _, _, _ in jobs if dur is not None)
    gpus = sum(FLEET_GPUS.values())
    span = other / (gpus * args.load)
    for _ in range(50):
        demand = other + sum(j[1] * j[2] * f[1] * span for j, f in zip(infer, fracs))
        span = demand / (gpus * args.load)
    for j, (start, length) in zip(infer, fracs):
        j[6] = start * span
        j[3] = length * span
    rate = (len(jobs) - len(infer)) / span
    t = 0.0
    for j in jobs:
        if j[6] is None:
            t += rng.expovariate(rate)
            j[6] = t
    jobs.sort(key=lambda j: j[6])
    print("submit_time,duration,replicas,gpus_per_replica,tier,queue,checkpoint_interval,pool,name")
    for i, (cls, rep, g, dur, ckpt, pool, submit) in enumerate(jobs):
        print(f"{submit:.0f},{round(dur)},{rep},{g},{tiers[cls]},{cls},{ckpt},{pool},llm-{i}")


if __name__ == "__main__":
    main()
