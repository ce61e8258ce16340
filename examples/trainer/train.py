#!/usr/bin/env python3
"""Sample Phalanx trainer: honours the TrainingJob container contract (docs/trainingjob.md).

- resumes from $PHALANX_RESUME_FROM,
- saves and exits on SIGTERM or when $PHALANX_PREEMPT_FILE becomes non-empty,
- writes {"step","path","committed"} to /dev/termination-log,
- optionally reports each periodic save to $PHALANX_PROGRESS_URL with its projected token.

The "model" is a counter so the script runs anywhere (no GPU, no torch needed); with torch
installed, replace train_step/save/load with real ones. Only the standard library is used.
"""
import json
import os
import signal
import sys
import time
import urllib.request

STEPS = int(os.environ.get("TRAIN_STEPS", "1000"))
SAVE_EVERY = int(os.environ.get("SAVE_EVERY", "100"))
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0.1"))
RANK = int(os.environ.get("RANK", "0"))
CKPT_DIR = os.environ.get("PHALANX_CHECKPOINT_DIR", "/tmp/ckpt")
RESUME_FROM = os.environ.get("PHALANX_RESUME_FROM", "")
PREEMPT_FILE = os.environ.get("PHALANX_PREEMPT_FILE", "")
PROGRESS_URL = os.environ.get("PHALANX_PROGRESS_URL", "")
TOKEN_FILE = os.environ.get("PHALANX_PROGRESS_TOKEN_FILE", "")
TERMINATION_LOG = os.environ.get("TERMINATION_LOG", "/dev/termination-log")

stop_requested = False


def on_sigterm(signum, frame):
    global stop_requested
    stop_requested = True


def preempt_notice():
    if not PREEMPT_FILE:
        return None
    try:
        with open(PREEMPT_FILE) as f:
            text = f.read().strip()
        return json.loads(text) if text else None
    except (OSError, ValueError):
        return None


def save(step):
    """Rank 0 writes the checkpoint; every rank reports the same committed path."""
    path = os.path.join(CKPT_DIR, f"step-{step}")
    if RANK == 0:
        os.makedirs(CKPT_DIR, exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"step": step}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # atomic: a checkpoint is either complete or absent
    return {"step": step, "path": path, "committed": True}


def load(path):
    try:
        with open(path) as f:
            return int(json.load(f)["step"])
    except (OSError, ValueError, KeyError):
        print(f"cannot resume from {path}; starting fresh", file=sys.stderr)
        return 0


def report(record):
    if not PROGRESS_URL or not TOKEN_FILE or RANK != 0:
        return
    try:
        with open(TOKEN_FILE) as f:
            token = f.read().strip()
        req = urllib.request.Request(PROGRESS_URL, data=json.dumps(record).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=5).read()
    except Exception as e:  # progress is best effort; the termination message is the backstop
        print(f"progress report failed: {e}", file=sys.stderr)


def write_termination_message(record):
    try:
        with open(TERMINATION_LOG, "w") as f:
            f.write(json.dumps(record) + "\n")
    except OSError as e:
        print(f"cannot write termination message: {e}", file=sys.stderr)


def main():
    signal.signal(signal.SIGTERM, on_sigterm)
    step = load(RESUME_FROM) if RESUME_FROM else 0
    print(f"rank {RANK} attempt {os.environ.get('PHALANX_ATTEMPT', '?')} starting at step {step} "
          f"(restart reason: {os.environ.get('PHALANX_RESTART_REASON') or 'none'})", flush=True)
    last = None
    while step < STEPS:
        if stop_requested or preempt_notice() is not None:
            last = save(step)
            write_termination_message(last)
            print(f"saved step {step} on notice; exiting", flush=True)
            return 143 if stop_requested else 0
        time.sleep(STEP_SECONDS)  # train_step()
        step += 1
        if step % SAVE_EVERY == 0:
            last = save(step)
            report(last)
    last = save(step)
    write_termination_message(last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
