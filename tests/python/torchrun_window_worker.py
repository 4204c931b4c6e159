"""tests/python/torchrun_window_worker.py: one rank of test_distributed.py's time-window run (gloo, CPU).

examples/train_resnet50.py's timed_steps with a one-weight-layer DDP model and a loader whose first
batch reaches rank 1 --late seconds after rank 0's, so each rank's clock starts at another time:
the warm-up (--warmup-seconds) and the window (--seconds) must still end at the same step on
every rank, or the rank that stops first leaves the other's backward waiting in DDP's all-reduce.
Each rank writes what it measured to --out/rank<N>.json.
"""
import argparse
import json
import os
import sys
import time
import types

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
import train_resnet50  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--late", type=float, default=0.5)
    p.add_argument("--warmup-seconds", type=float, default=1.0)
    p.add_argument("--seconds", type=float, default=1.0)
    a = p.parse_args()
    device = torch.device("cpu")
    ranks = train_resnet50.Ranks(device)
    model = ranks.wrap(torch.nn.Sequential(torch.nn.Conv2d(3, 2, 1), torch.nn.Flatten(), torch.nn.Linear(32, 2)),
                       device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", enabled=False)

    def batches():
        if ranks.rank == 1:
            time.sleep(a.late)
        while True:
            time.sleep(0.002)
            yield torch.zeros(2, 3, 4, 4), torch.zeros(2, dtype=torch.long)

    args = types.SimpleNamespace(steps=10 ** 8, warmup=4, warmup_seconds=a.warmup_seconds, seconds=a.seconds)
    m = train_resnet50.timed_steps(args, batches(), model, optimizer, scaler, torch.nn.CrossEntropyLoss(), None,
                                   device, ranks)
    with open(os.path.join(a.out, "rank%d.json" % ranks.rank), "w") as f:
        json.dump({k: m[k] for k in ("steps", "images", "warmup_steps", "warmup_s", "elapsed")}, f)
    ranks.close()


if __name__ == "__main__":
    main()
