#!/usr/bin/env python3
"""PyTorch's training throughput on the lesson's network, for the engine's throughput bench.

`cargo bench -p gpumem --bench throughput` runs this script (with the interpreter named by
``GPUMEM_TORCH_PYTHON``) and prints its figures beside the engine's. It trains the lesson's
network ``2 -> width -> 2`` (``nn.Linear``, ``nn.ReLU``, ``nn.Linear``, float32) on the CPU with
PyTorch's CPU defaults and ``torch.set_num_threads(threads)``, for each optimizer and batch:
one warm-up step, then ``runs`` timed runs of ``steps`` steps. A step is the lesson's loop plus
what the engine's step hands back (the loss and the number of correct rows, read on the host):

    optimizer.zero_grad()
    y_pred = model(x)
    loss = F.cross_entropy(y_pred, y)
    loss.backward()
    optimizer.step()
    loss.item(); (y_pred.argmax(1) == y).sum().item()

It prints one JSON object on stdout: torch's version, the thread count and, per row, the
optimizer, the batch and the median samples/s. Standard library and torch only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings

# torch warns at import when numpy is missing; numpy is not needed here.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

FEATURES = 2
CLASSES = 2
LR = 0.001


def optimizer_for(name: str, params) -> torch.optim.Optimizer:
    """The engine's optimizers with PyTorch's defaults: SGD without momentum, Adam."""
    if name == "sgd":
        return torch.optim.SGD(params, lr=LR)
    if name == "adam":
        return torch.optim.Adam(params, lr=LR)
    raise ValueError(f"unknown optimizer {name!r} (expected sgd or adam)")


def samples_per_second(width: int, optimizer: str, batch: int, steps: int, runs: int) -> float:
    """Median samples/s over `runs` timed runs of `steps` steps, after one warm-up step."""
    torch.manual_seed(1)
    model = nn.Sequential(
        nn.Linear(FEATURES, width), nn.ReLU(), nn.Linear(width, CLASSES)
    )
    opt = optimizer_for(optimizer, model.parameters())
    x = torch.randn(batch, FEATURES)
    y = torch.randint(0, CLASSES, (batch,))

    def step() -> None:
        opt.zero_grad()
        y_pred = model(x)
        loss = F.cross_entropy(y_pred, y)
        loss.backward()
        opt.step()
        loss.item()
        (y_pred.argmax(1) == y).sum().item()

    step()
    rates = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        rates.append(steps * batch / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--width", type=int, default=2000, help="hidden width (default 2000)")
    p.add_argument(
        "--optimizers", default="sgd,adam", help="comma-separated (default sgd,adam)"
    )
    p.add_argument(
        "--batches", default="32:200,4096:10",
        help="comma-separated batch:steps pairs (default 32:200,4096:10)",
    )
    p.add_argument("--runs", type=int, default=5, help="timed runs per row (default 5)")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    a = p.parse_args()
    try:
        batches = [tuple(int(v) for v in b.split(":")) for b in a.batches.split(",")]
        if any(len(b) != 2 or min(b) < 1 for b in batches) or min(a.runs, a.width, a.threads) < 1:
            raise ValueError
    except ValueError:
        p.error("--batches wants batch:steps pairs of positive integers; --runs, --width, --threads >= 1")
    torch.set_num_threads(a.threads)
    rows = []
    for optimizer in a.optimizers.split(","):
        for batch, steps in batches:
            try:
                rate = samples_per_second(a.width, optimizer, batch, steps, a.runs)
            except ValueError as e:
                p.error(str(e))
            rows.append({"optimizer": optimizer, "batch": batch, "samples_per_s": rate})
    json.dump(
        {"torch": torch.__version__, "threads": torch.get_num_threads(), "rows": rows},
        sys.stdout,
    )
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
