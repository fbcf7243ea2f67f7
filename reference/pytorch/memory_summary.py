"""PyTorch's own memory_summary() table for the engine's statistics, without a GPU.

torch.cuda.memory_summary() only formats the dictionary torch.cuda.memory_stats() returns,
so this script hands it the engine's dictionaries instead (memory_stats replaced in its
module for the call) and records what PyTorch prints. The engine's test
crates/gpumem/tests/memory_summary.rs compares its own table with these, line by line.

    cargo run -q -p gpumem --example summary_fixture_stats \
      | /work/venv-torch/bin/python reference/pytorch/memory_summary.py \
      > crates/gpumem/tests/fixtures/pytorch_memory_summary.json

A development tool only: no test or CI runs it.
"""

import json
import sys

import torch
import torch.cuda.memory as memory


def pytorch_summary(stats, abbreviated):
    """memory_summary(device=0) as PyTorch prints it for `stats`."""
    original = memory.memory_stats
    memory.memory_stats = lambda device=None: dict(stats)
    try:
        return memory.memory_summary(device=0, abbreviated=abbreviated)
    finally:
        memory.memory_stats = original


def main():
    cases = json.load(sys.stdin)["cases"]
    for case in cases:
        case["pytorch_summary"] = pytorch_summary(case["stats"], case["abbreviated"])
    json.dump({"torch_version": torch.__version__, "cases": cases}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
