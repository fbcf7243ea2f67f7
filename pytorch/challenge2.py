#!/usr/bin/env python3
"""Challenge 2 on your own GPU: how deep can the lesson's network grow (hidden layers of 5000,
batch 32, SGD) before the card runs out? With CUDA it searches for real — doubling the depth,
then halving the gap — and prints the first failure's message, then the engine's answer for this
same card. Without CUDA it says so and searches with PyTorch's own estimate (MemTracker, no GPU
needed) on the lesson's card instead, beside the engine's.

    python pytorch/challenge2.py [--hidden 5000] [--batch 32]
"""
import argparse
import gc

import torch

from lesson import GiB, LESSON_CARD, card_args, engine, estimate_peak, network, train_steps

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--hidden", type=int, default=5000, help="hidden width (default 5000)")
parser.add_argument("--batch", type=int, default=32, help="rows per batch (default 32)")
args = parser.parse_args()


def deepest(fits):
    """The largest depth for which `fits(depth)` holds (fits(1) is assumed)."""
    low, high = 1, 2
    while fits(high):                 # double until one fails...
        low, high = high, high * 2
    while high - low > 1:             # ...then halve the gap
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low


failure = []


def fits_on_gpu(layers):
    try:
        train_steps(network(args.hidden, layers, "cuda"), args.batch, "cuda")
        ok = True
    except torch.OutOfMemoryError as e:
        failure[:] = [layers, str(e).splitlines()[0]]
        ok = False
    gc.collect()
    torch.cuda.empty_cache()          # each try starts from an empty cache
    print(f"  {layers:4} layers: {'fits' if ok else 'out of memory'}")
    return ok


if torch.cuda.is_available():
    free, total = torch.cuda.mem_get_info()
    print(f"{torch.cuda.get_device_name()}: {total / GiB:.2f} GiB, {free / GiB:.2f} GiB free")
    depth = deepest(fits_on_gpu)
    print(f"deepest that trains: {depth} layers; {failure[0]} failed with:\n  {failure[1]}")
    answer = engine("challenge2", *card_args(total, free), "--hidden", str(args.hidden),
                    "--batch", str(args.batch), "--backend", "plan")
else:
    print(f"no CUDA device: searching with PyTorch's own estimate on the lesson's card "
          f"({LESSON_CARD / GiB:.2f} GiB) instead")
    depth = deepest(lambda n: estimate_peak(args.hidden, n, args.batch) <= LESSON_CARD)
    peak = estimate_peak(args.hidden, depth, args.batch)
    print(f"  MemTracker under FakeTensorMode: {depth} layers peak at {peak / GiB:.2f} GiB of "
          f"live tensors (raw bytes, no allocator rounding); {depth + 1} do not fit")
    answer = engine("challenge2", "--hidden", str(args.hidden), "--batch", str(args.batch),
                    "--backend", "plan")
if answer:
    print(f"  the engine on that card: {answer['deepest_fit']} layers "
          f"(its first failure, at {answer['first_failure']['layers']}: "
          f"{answer['first_failure']['message'].splitlines()[0]})")
