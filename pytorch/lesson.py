"""What challenge1.py and challenge2.py share: the lesson's network and loop, PyTorch's own
estimate of a step without a GPU, and the engine's answer for the same card."""
import json
import shutil
import subprocess

import torch
import torch.nn as nn
import torch.nn.functional as F

GiB = 2**30
LESSON_CARD = 17_072_914_432          # bytes: the card of the lesson's message, "15.90 GiB"
TRAINING_SET = 1_173_000              # rows in the lesson's training set


def network(hidden, layers, device=None):
    """The lesson's network: 2 inputs -> `layers` x [Linear(hidden), ReLU] -> 2 classes."""
    mods = [nn.Linear(2, hidden), nn.ReLU()]
    for _ in range(layers - 1):
        mods += [nn.Linear(hidden, hidden), nn.ReLU()]
    model = nn.Sequential(*mods, nn.Linear(hidden, 2))
    return model if device is None else model.to(device)


def train_steps(model, rows, device, steps=2):
    """`steps` steps of the lesson's loop (SGD, lr 0.001) on one batch of `rows` random rows."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    x = torch.randn(rows, 2, device=device)
    y = torch.randint(0, 2, (rows,), device=device)   # int64 labels, as cross_entropy wants
    for _ in range(steps):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    return optimizer


def estimate_peak(hidden, layers, rows):
    """PyTorch's own count of the live tensors at the step's peak, with no GPU and no memory:
    FakeTensorMode (shapes, no storage) and MemTracker. Raw bytes: no allocator rounding."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.mem_tracker import MemTracker

    with FakeTensorMode():
        model = network(hidden, layers)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.001, foreach=True)  # CUDA's pick
        mt = MemTracker()
        mt.track_external(model, optimizer)
        with mt:
            x = torch.randn(rows, 2)                 # made inside, so that it is counted
            y = torch.randint(0, 2, (rows,))
            for _ in range(2):
                optimizer.zero_grad()
                F.cross_entropy(model(x), y).backward()
                optimizer.step()
                mt.reset_mod_stats()
        return mt.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]


def engine(challenge, *args):
    """The engine's JSON answer (`cargo run -p challengeN -- ARGS --json`), or None without
    cargo (then the command is printed for you to run)."""
    command = ["cargo", "run", "-q", "-p", challenge, "--", *args, "--json"]
    print("the engine:", " ".join(command[:-1]))
    if shutil.which("cargo") is None:
        print("  (cargo is not on the PATH here: run it in the repository)")
        return None
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        print("  failed:", run.stderr.strip().splitlines()[-1:])
        return None
    return json.loads(run.stdout)


def card_args(total, free):
    """The engine's flags for this card: its total, and what the CUDA context and other
    processes held before we started (outside PyTorch's allocator)."""
    return ["--device-memory", f"{total}B", "--context-memory", f"{total - free}B"]
