"""What challenge1.py and challenge2.py share: the lesson's network and loop, the card they run
on (`--card`), PyTorch's own estimate of a step without a GPU, and the engine's answer for the
same card. Oldest PyTorch: 1.13 on CUDA (torch.cuda.OutOfMemoryError), 2.5 without it
(MemTracker)."""
import argparse
import json
import os
import re
import shutil
import subprocess

import torch
import torch.nn as nn
import torch.nn.functional as F

GiB = 2**30
LESSON_CARD = 17_072_914_432          # bytes: the card of the lesson's message, "15.90 GiB"
TRAINING_SET = 1_173_000              # rows in the lesson's training set
UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
         "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(text):
    """A card's size as the engine's demos read it ("15.90GiB", "16GB", "17072914432"), or
    "all" (None): the whole card."""
    if text.strip().lower() == "all":
        return None
    m = re.fullmatch(r"\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).lower() not in UNITS:
        raise argparse.ArgumentTypeError(f"`{text}` is not a size (15.90GiB, 16GB, bytes, all)")
    return int(float(m.group(1)) * UNITS[m.group(2).lower()])


def add_card_option(parser):
    parser.add_argument("--card", type=parse_size, default=LESSON_CARD, metavar="SIZE",
                        help="hold the GPU to a card of SIZE, e.g. 40GB; `all` for the whole "
                             "card (default: the lesson's 15.90 GiB)")


def cap_card(size, count_outside=True):
    """Make this GPU behave like a card of `size` bytes (None: leave it whole). What the card
    already holds outside PyTorch's allocator (the CUDA context, other processes: total - free
    before any allocation) is part of the card, so the allocator gets `size` less that
    (`count_outside=False`: all of `size`). Returns (card, outside, allowed) in bytes."""
    free, total = torch.cuda.mem_get_info()
    outside = total - free if count_outside else 0
    if size is None or size >= total:
        if size is not None:
            print(f"this GPU ({total / GiB:.2f} GiB) is not larger than --card: using all of it")
        return total, total - free, None
    allowed = size - outside
    if allowed <= 0:
        raise SystemExit(f"--card {size} B is not more than the {outside} B already in use")
    # + 0.5 B so that the allocator's size_t(fraction * total) is `allowed`, not a byte under.
    torch.cuda.set_per_process_memory_fraction((allowed + 0.5) / total)
    return size, outside, allowed


def network(hidden, layers, device=None):
    """The lesson's network: 2 inputs -> `layers` x [Linear(hidden), ReLU] -> 2 classes, made
    on `device` (no copy in the computer's memory first)."""
    mods = [nn.Linear(2, hidden, device=device), nn.ReLU()]
    for _ in range(layers - 1):
        mods += [nn.Linear(hidden, hidden, device=device), nn.ReLU()]
    return nn.Sequential(*mods, nn.Linear(hidden, 2, device=device))


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
    try:
        from torch.distributed._tools.mem_tracker import MemTracker   # private, 2.5 or newer
    except ImportError:
        raise SystemExit(f"the estimate needs MemTracker (PyTorch 2.5 or newer); this is "
                         f"{torch.__version__}") from None

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


def card_args(card, outside):
    """The engine's flags for this card: its size, what it holds outside PyTorch's allocator
    (the CUDA context, other processes), and this PyTorch and GPU, whose rules it follows."""
    major, minor = torch.cuda.get_device_capability()
    return ["--device-memory", f"{card}B", "--context-memory", f"{outside}B",
            "--torch", ".".join(torch.__version__.split(".")[:2]),
            "--compute-capability", f"{major}.{minor}"]


def engine(challenge, *args):
    """The engine's JSON answer (`cargo run -p challengeN -- ARGS --json`, or the binary in
    $GPUMEM_BIN when set), or None without either (then the command is printed to run)."""
    command = ["cargo", "run", "-q", "-p", challenge, "--", *args, "--json"]
    print("the engine:", " ".join(command[:-1]))
    built = os.path.join(os.environ.get("GPUMEM_BIN", ""), challenge)
    if os.environ.get("GPUMEM_BIN") and os.access(built, os.X_OK):
        command = [built, *args, "--json"]
    elif shutil.which("cargo") is None:
        print("  (cargo is not on the PATH here: run it in the repository)")
        return None
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        lines = run.stderr.strip().splitlines() or ["(no message)"]
        print("  failed:", next((l for l in lines if l.startswith("error")), lines[-1]))
        return None
    return json.loads(run.stdout)
