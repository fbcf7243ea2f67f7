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
``out x in``).

MIXED adds mixed precision with ``torch.amp.GradScaler("cpu", init_scale, growth_interval)``:

    optimizer.zero_grad()
    for each micro-batch: scaler.scale(loss_k / k).backward()
    scaler.step(optimizer); scaler.update()

for more steps than there are batches (step i takes batch i % STEPS), with an initial scale
large enough that the first step's scaled gradients overflow float16 (inf: the step is skipped
and the scale halved) and a growth interval of 2, so that the scale also doubles within a few
steps. It records the scale each step ran with and the steps skipped. The engine follows CUDA's
autocast, and this script runs on the CPU, whose autocast has another op list (CPU autocast
runs ``cross_entropy_loss`` in float32, casting the logits first; CUDA has no kernel for it,
so it decomposes). So no ``torch.autocast`` here: ``forward_mixed`` and ``cross_entropy_mixed``
write out CUDA autocast's policy for this network by hand (see reference/pytorch/README.md,
"Autocast: CPU's op lists against CUDA's"):

- ``linear`` (``addmm``, lower-precision list): its input, weight and bias are cast to float16
  (the weight and bias once per forward pass, autocast's cast cache) and its output is float16;
- ``relu`` is in no list: it runs on its float16 input, as does its backward;
- ``cross_entropy`` decomposes into ``log_softmax(y_pred, 1, dtype=y_pred.dtype)``, float16
  (the explicit dtype survives ``fp32_set_opt_dtype``), and ``nll_loss``, cast to float32;
- the master weights, their gradients (each cast's backward casts the float16 gradient back)
  and the optimizer's state are float32; the scaler unscales in float32.

The kernels are CUDA's too, as far as the CPU's differ. CPU's float16 matmul adds up in
float32 and rounds once, as cuBLAS does (same bits, checked). CPU's float16 ``log_softmax``
rounds between its steps (69 of 128 values an ulp from float32-then-round), so
``LogSoftmax16`` computes it and its backward in float32 and rounds the result once, as
CUDA's kernel does. Before each step the largest float16 gradient it will make is measured
(a backward pass at scale 1, times the step's scale, as a share of float16's largest finite
value 65504; above 1 the step overflows): the script refuses a setup where a step comes within
5 % of 1 either way, so a skip does not hinge on rounding.

Uses the standard library and torch only; run from the repository root:

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

# Mixed precision: name, network, optimizer, implementation, lr, momentum, micro-batches,
# GradScaler's init_scale and growth_interval, steps.
MIXED = [
    ("lesson/sgd-momentum-mixed", "lesson", "sgd", "foreach", 0.01, 0.9, 1, 2.0**20, 2, 6),
    ("deep/adam-mixed", "deep", "adam", "foreach", 0.01, 0.0, 1, 2.0**22, 2, 6),
    ("deep/sgd-momentum-accumulate-2-mixed", "deep", "sgd", "foreach", 0.1, 0.9, 2, 2.0**21, 2, 6),
]
FLOAT16_MAX = 65504.0
MARGIN = 0.05


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


class LogSoftmax16(torch.autograd.Function):
    """Float16 ``log_softmax`` over rows as CUDA's kernel computes it: in float32, rounded once
    to float16; its backward ``grad - exp(output) * grad.sum(1)`` likewise."""

    @staticmethod
    def forward(ctx, x16):
        out = torch.log_softmax(x16.float(), 1).half()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad16):
        (out,) = ctx.saved_tensors
        g = grad16.float()
        return (g - torch.exp(out.float()) * g.sum(1, keepdim=True)).half()


def forward_mixed(model: torch.nn.Sequential, x: torch.Tensor, hook=None) -> torch.Tensor:
    """``model(x)`` under CUDA's autocast (float16): y_pred, float16. ``hook`` sees the
    gradient of every float16 tensor."""
    h = x.half()
    for m in model:
        if isinstance(m, torch.nn.Linear):
            w, b = m.weight.half(), m.bias.half()
            if hook:
                for t in (h, w, b):
                    if t.requires_grad:
                        t.register_hook(hook)
            h = F.linear(h, w, b)
        else:
            h = torch.relu(h)
    if hook:
        h.register_hook(hook)
    return h


def cross_entropy_mixed(y_pred16: torch.Tensor, y: torch.Tensor, hook=None) -> torch.Tensor:
    """``F.cross_entropy`` under CUDA's autocast: float16 log_softmax, float32 nll_loss."""
    logp16 = LogSoftmax16.apply(y_pred16)
    if hook:
        logp16.register_hook(hook)
    return F.nll_loss(logp16.float(), y)


def largest_float16_gradient(model, x, y, k: int, scale: float) -> float:
    """The largest |gradient| of a float16 tensor in a backward pass at `scale`, as a share of
    float16's largest finite value: measured at scale 1 (no overflow) and multiplied."""
    seen = [0.0]
    hook = lambda g: seen.append(g.float().abs().max().item())  # noqa: E731
    for xk, yk in zip(x.chunk(k), y.chunk(k)):
        (cross_entropy_mixed(forward_mixed(model, xk, hook), yk, hook) / k).backward()
    for p in model.parameters():
        p.grad = None
    return max(seen) * scale / FLOAT16_MAX


def run_mixed(setup, seed: int) -> dict:
    name, net, kind, impl, lr, momentum, k, init_scale, growth_interval, steps = setup
    model, xs, ys = start(net, seed)
    opt = optimizer(model, kind, impl, lr, momentum)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=growth_interval)
    losses, scales, skipped, largest = [], [], [], []
    for step in range(steps):
        x, y = xs[step % STEPS], ys[step % STEPS]
        scale = scaler.get_scale()
        share = largest_float16_gradient(model, x, y, k, scale)
        opt.zero_grad()
        total = 0.0
        for xk, yk in zip(x.chunk(k), y.chunk(k)):
            loss = cross_entropy_mixed(forward_mixed(model, xk), yk)
            scaler.scale(loss / k).backward()
            total += loss.item() * len(yk)
        scaler.step(opt)
        scaler.update()
        # The scale halves exactly when the step was skipped (and doubles on growth).
        skip = scaler.get_scale() < scale
        if abs(share - 1.0) < MARGIN or skip != (share > 1.0):
            raise SystemExit(f"{name}, step {step}: largest float16 gradient {share:.3f} of "
                             f"65504 at scale {scale}, skipped {skip}: too close to call")
        losses.append(total / ROWS)
        scales.append(scale)
        skipped.append(skip)
        largest.append(share)
    print(f"{name}: scales {scales} then {scaler.get_scale()}, skipped {skipped}, largest "
          f"float16 gradient {[round(v, 3) for v in largest]} of 65504")
    return {
        "name": name,
        "network": net,
        "optimizer": kind,
        "implementation": impl,
        "lr": lr,
        "momentum": momentum,
        "accumulation": k,
        "checkpoint_hidden": False,
        "precision": "mixed",
        "init_scale": init_scale,
        "growth_interval": growth_interval,
        "steps": steps,
        "losses": losses,
        "loss_scales": scales,
        "skipped": skipped,
        "final_loss_scale": scaler.get_scale(),
        "largest_float16_gradient": largest,
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
            "x 2). Setups with precision 'mixed' run `steps` steps, step i on batch i % steps, "
            "under CUDA autocast's float16 policy written out (see the script's docstring) with "
            "torch.amp.GradScaler('cpu', init_scale, growth_interval): per step zero_grad(), "
            "scaler.scale(loss_k / k).backward() for each chunk, scaler.step(), "
            "scaler.update(); losses[i] is loss.item() (float32 nll_loss of the float16 "
            "log_softmax), loss_scales[i] the scale step i ran with, skipped[i] whether its "
            "update was skipped (an inf or NaN gradient), final_loss_scale the scale after the "
            "last step, largest_float16_gradient[i] the largest float16 gradient of step i "
            "(measured at scale 1, times the scale) as a share of 65504."
        ),
        "seed": args.seed,
        "networks": {net: describe(net, args.seed) for net in NETWORKS},
        "setups": [run(s, args.seed) for s in SETUPS] + [run_mixed(s, args.seed) for s in MIXED],
    }
    with open(args.out, "w") as f:
        json.dump(fixture, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: {len(SETUPS) + len(MIXED)} setups, torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
