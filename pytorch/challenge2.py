#!/usr/bin/env python3
"""Challenge 2 on your own GPU: how deep can the lesson's network grow (hidden layers of 5000,
batch 32, SGD) before the card runs out? With CUDA it holds the GPU to the lesson's card
(--card; 15.90 GiB in all, the CUDA context within it) and searches for real, each network
built on the GPU: doubling the depth, then halving the gap. Each try starts clean (empty cache,
counters reset). It prints the deepest that trains, the first failing depth's message and the
allocator's summary at that failure (that try's counters alone), then the engine's answer for
this same card. Without CUDA it says so and searches with PyTorch's own estimate (MemTracker,
no GPU needed) on the card instead, beside the engine's. Oldest PyTorch: 1.13 with CUDA, 2.5
without.

    python pytorch/challenge2.py [--card 15.90GiB|40GB|all] [--hidden 5000] [--batch 32]
"""
import argparse
import gc

import torch

from lesson import (GiB, LESSON_CARD, add_card_option, cap_card, card_args, engine,
                    estimate_peak, network, train_steps)

parser = argparse.ArgumentParser(description=__doc__.split(". ")[0] + ".")
add_card_option(parser)
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


failures = {}                         # depth -> (message, memory_summary at the failure)


def fits_on_gpu(layers):
    # This try's counters alone: peaks, out-of-memory errors, cudaMalloc retries and the
    # totals allocated start again from zero, so the summary at a failure is that try's.
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.reset_accumulated_memory_stats()
    try:
        train_steps(network(args.hidden, layers, "cuda"), args.batch, "cuda")
        ok = True
    except torch.cuda.OutOfMemoryError as e:
        # Taken while the failed try's model, optimizer and gradients still live (the
        # exception's frames hold them): the summary at the failure.
        failures[layers] = (str(e).splitlines()[0], torch.cuda.memory_summary(abbreviated=True))
        ok = False
    # Leaving `except` drops the exception and its frames; collect what they held and give
    # the cache back, so that each try starts clean.
    gc.collect()
    torch.cuda.empty_cache()
    print(f"  {layers:4} layers: {'fits' if ok else 'out of memory'}")
    return ok


if torch.cuda.is_available():
    card, outside, allowed = cap_card(args.card)
    print(f"{torch.cuda.get_device_name()}, held to a card of {card / GiB:.2f} GiB in all, "
          f"{outside / GiB:.2f} GiB of it outside PyTorch (CUDA context, other processes)")
    depth = deepest(fits_on_gpu)
    first = min(failures)             # the shallowest depth that failed: depth + 1
    message, summary = failures[first]
    print(f"deepest that trains: {depth} layers; the first failure, at {first}:\n  {message}")
    print(summary)
    answer = engine("challenge2", *card_args(card, outside), "--hidden", str(args.hidden),
                    "--batch", str(args.batch), "--backend", "plan")
else:
    card = args.card or LESSON_CARD
    print(f"no CUDA device: searching with PyTorch's own estimate on a card of "
          f"{card / GiB:.2f} GiB instead")
    depth = deepest(lambda n: estimate_peak(args.hidden, n, args.batch) <= card)
    peak = estimate_peak(args.hidden, depth, args.batch)
    print(f"  MemTracker under FakeTensorMode: {depth} layers peak at {peak / GiB:.2f} GiB of "
          f"live tensors (raw bytes, no allocator rounding); {depth + 1} do not fit")
    flags = [] if card == LESSON_CARD else ["--device-memory", f"{card}B"]
    answer = engine("challenge2", *flags, "--hidden", str(args.hidden), "--batch",
                    str(args.batch), "--backend", "plan")
if answer:
    print(f"  the engine on that card: {answer['deepest_fit']} layers "
          f"(its first failure, at {answer['first_failure']['layers']}: "
          f"{answer['first_failure']['message'].splitlines()[0]})")
