#!/usr/bin/env python3
"""Challenge 1 on your own GPU: the lesson's network (2 -> 2000 -> 2, SGD) with the whole
training set as one batch. With CUDA it holds the GPU to the lesson's card (--card; 15.90 GiB
in all, the CUDA context within it), runs the step for real, prints the out-of-memory message
and the allocator's summary, then the engine's answer for this same card. It makes one try,
so its summary's counters are that try's. Without CUDA it says so and sets PyTorch's own
estimate (MemTracker, no GPU needed) beside the engine's. Oldest PyTorch: 1.13 with CUDA, 2.5
without.

    python pytorch/challenge1.py [--card 15.90GiB|40GB|all] [--hidden 2000] [--rows 1173000]
"""
import argparse

import torch

from lesson import (GiB, LESSON_CARD, TRAINING_SET, add_card_option, cap_card, card_args, engine,
                    estimate_peak, network, train_steps)

parser = argparse.ArgumentParser(description=__doc__.split(". ")[0] + ".")
add_card_option(parser)
parser.add_argument("--hidden", type=int, default=2000, help="hidden width (default 2000)")
parser.add_argument("--rows", type=int, default=TRAINING_SET,
                    help=f"rows in the one batch (default {TRAINING_SET}: the training set)")
args = parser.parse_args()

if torch.cuda.is_available():
    card, outside, allowed = cap_card(args.card)
    print(f"{torch.cuda.get_device_name()}, held to a card of {card / GiB:.2f} GiB in all, "
          f"{outside / GiB:.2f} GiB of it outside PyTorch (CUDA context, other processes)")
    try:
        train_steps(network(args.hidden, 1, "cuda"), args.rows, "cuda")
        print(f"the step fit: peak {torch.cuda.max_memory_allocated() / GiB:.2f} GiB allocated")
    except torch.cuda.OutOfMemoryError as e:
        print("out of memory, as in the lesson:\n ", str(e).splitlines()[0])
        print(torch.cuda.memory_summary(abbreviated=True))
    answer = engine("challenge1", *card_args(card, outside), "--batch", str(args.rows),
                    "--backend", "plan")
else:
    print("no CUDA device: the step cannot run here. PyTorch's own estimate instead:")
    peak = estimate_peak(args.hidden, 1, args.rows)
    print(f"  MemTracker under FakeTensorMode: the step's live tensors peak at {peak / GiB:.2f} "
          f"GiB ({peak:,} B, raw bytes)")
    card = [] if args.card in (None, LESSON_CARD) else ["--device-memory", f"{args.card}B"]
    answer = engine("challenge1", *card, "--batch", str(args.rows), "--backend", "plan")
    if answer:
        est = answer["attempt"]["estimate"]["peak_allocated"]
        print(f"  the engine's equation: {est / GiB:.2f} GiB ({est:,} B, in the allocator's "
              "blocks)")
if answer:
    print("  the engine on that card:", answer["attempt"]["out_of_memory_message"]
          .splitlines()[0] if answer["attempt"]["out_of_memory_message"] else "it fits")
    print(f"  the largest batch that fits there: {answer['largest_batch_that_fits']:,} rows")
