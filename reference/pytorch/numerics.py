#!/usr/bin/env python3
"""What PyTorch computes for a few training steps: the engine's numerics fixture.

The memory fixtures pin what a step allocates; this one pins what it computes. For every setup
in SETUPS it builds ``inputs -> layers x [Linear(width) + ReLU] -> Linear(classes)`` (float32,
on the CPU), sets its weights and data from a seed (both written into the fixture, so the
engine starts from the same numbers), and runs STEPS steps of the lesson's loop:

    optimizer.zero_grad()                # set_to_none=True
    for each micro-batch (accumulation):
        loss = F.cross_entropy(model(x_k), y_k) / k
        loss.backward()
    optimizer.step()

It records the loss of every step (the mean over the step's rows) and the parameters after the
last step. Weights are float32 little-endian, base64, in PyTorch's layout (``weight`` is
``out x in``). Uses the standard library and torch only; run from the repository root:

    /work/venv-torch/bin/python reference/pytorch/numerics.py

which writes crates/gpumem/tests/fixtures/pytorch_numerics.json.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hashlib
import json
import platform
import struct
import sys

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

STEPS = 3
ROWS = 64
FEATURES = 2
CLASSES = 2
OUT = "crates/gpumem/tests/fixtures/pytorch_numerics.json"

# The networks: name -> (width, hidden layers). Every setup of a network starts from the same
# weights and data (one seed), stored once.
NETWORKS = {"lesson": (2000, 1), "deep": (32, 3)}

# name, network, optimizer, implementation, lr, momentum, micro-batches, checkpoint
SETUPS = [
    ("lesson/sgd", "lesson", "sgd", "foreach", 0.01, 0.0, 1, False),
    ("lesson/sgd-momentum", "lesson", "sgd", "foreach", 0.01, 0.9, 1, False),
    ("lesson/adam", "lesson", "adam", "foreach", 0.001, 0.0, 1, False),
    ("deep/sgd", "deep", "sgd", "foreach", 0.1, 0.0, 1, False),
    ("deep/sgd-momentum", "deep", "sgd", "foreach", 0.1, 0.9, 1, False),
    ("deep/adam-foreach", "deep", "adam", "foreach", 0.01, 0.0, 1, False),
    ("deep/adam-for-loop", "deep", "adam", "for-loop", 0.01, 0.0, 1, False),
    ("deep/adam-fused", "deep", "adam", "fused", 0.01, 0.0, 1, False),
    ("deep/sgd-momentum-accumulate-2", "deep", "sgd", "foreach", 0.1, 0.9, 2, False),
    ("deep/adam-checkpoint", "deep", "adam", "foreach", 0.01, 0.0, 1, True),
]


def pack(t: torch.Tensor) -> str:
    values = t.detach().to(torch.float32).reshape(-1).tolist()
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def network(width: int, layers: int) -> torch.nn.Sequential:
    mods: list[torch.nn.Module] = []
    fan_in = FEATURES
    for _ in range(layers):
        mods += [torch.nn.Linear(fan_in, width), torch.nn.ReLU()]
        fan_in = width
    mods.append(torch.nn.Linear(fan_in, CLASSES))
    return torch.nn.Sequential(*mods)


def optimizer(model, kind: str, impl: str, lr: float, momentum: float):
    flags = {"foreach": {"foreach": True}, "for-loop": {"foreach": False}, "fused": {"fused": True}}[impl]
    if kind == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, **flags)
    return torch.optim.Adam(model.parameters(), lr=lr, **flags)


def forward(model: torch.nn.Sequential, x: torch.Tensor, ck: bool) -> torch.Tensor:
    if not ck:
        return model(x)
    hidden = torch.nn.Sequential(*list(model)[:-1])
    h = checkpoint(hidden, x, use_reentrant=False)
    return model[-1](h)


def start(net: str, seed: int):
    """The network `net` and its data, from `seed`."""
    width, layers = NETWORKS[net]
    torch.manual_seed(seed)
    model = network(width, layers)
    gen = torch.Generator().manual_seed(seed + 1)
    xs = torch.randn(STEPS, ROWS, FEATURES, generator=gen)
    ys = torch.randint(0, CLASSES, (STEPS, ROWS), generator=gen)
    return model, xs, ys


def describe(net: str, seed: int) -> dict:
    width, layers = NETWORKS[net]
    model, xs, ys = start(net, seed)
    return {
        "width": width,
        "layers": layers,
        "initial": [pack(p) for p in model.parameters()],
        "x": pack(xs),
        "y": ys.reshape(-1).tolist(),
    }


def run(setup, seed: int) -> dict:
    name, net, kind, impl, lr, momentum, k, ck = setup
    model, xs, ys = start(net, seed)
    opt = optimizer(model, kind, impl, lr, momentum)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        total = 0.0
        for x, y in zip(xs[step].chunk(k), ys[step].chunk(k)):
            loss = F.cross_entropy(forward(model, x, ck), y)
            (loss / k).backward()
            total += loss.item() * len(y)
        opt.step()
        losses.append(total / ROWS)
    return {
        "name": name,
        "network": net,
        "optimizer": kind,
        "implementation": impl,
        "lr": lr,
        "momentum": momentum,
        "accumulation": k,
        "checkpoint_hidden": ck,
        "losses": losses,
        "final": [pack(p) for p in model.parameters()],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=OUT, help=f"where the fixture goes [{OUT}]")
    parser.add_argument("--seed", type=int, default=7, help="seed of weights and data [7]")
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # one summation order, whatever the machine
    fixture = {
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "command": " ".join(["python reference/pytorch/numerics.py", *sys.argv[1:]]),
        "created": datetime.date.today().isoformat(),
        # The engine's test fails when this script changed after it made the fixture.
        "script_sha256": hashlib.sha256(open(__file__, "rb").read()).hexdigest(),
        "device": "cpu",
        "steps": STEPS,
        "rows": ROWS,
        "method": (
            "Each network: torch.manual_seed(seed); the network inputs -> layers x "
            "[nn.Linear(width), nn.ReLU()] -> nn.Linear(classes), float32 on the CPU, PyTorch's "
            "default initialisation; x = torch.randn(steps, rows, 2) and y = torch.randint(0, 2, "
            "(steps, rows)) from torch.Generator().manual_seed(seed + 1); each setup starts from its "
            "network's initial parameters and data and runs, per step, "
            "zero_grad(), for each of k equal row chunks cross_entropy(model(x_k), y_k) / k "
            ".backward(), optimizer.step(). losses[i] is step i's mean loss over its rows. "
            "Parameters in model.parameters() order (each layer's weight (out x in), then its "
            "bias), float32 little-endian base64. checkpoint_hidden wraps all hidden layers in "
            "torch.utils.checkpoint (use_reentrant=False); x is rows-major float32 (steps x rows "
            "x 2)."
        ),
        "seed": args.seed,
        "networks": {net: describe(net, args.seed) for net in NETWORKS},
        "setups": [run(s, args.seed) for s in SETUPS],
    }
    with open(args.out, "w") as f:
        json.dump(fixture, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: {len(SETUPS)} setups, torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
