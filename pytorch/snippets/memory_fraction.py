"""Holding PyTorch to a share of the card, as the book's demos hold the engine to the lesson's
15.90 GiB. CUDA only; without it this says so."""
import torch

if not torch.cuda.is_available():
    print("no CUDA device: set_per_process_memory_fraction limits a CUDA allocator")
    raise SystemExit(0)

# ANCHOR: fraction
lesson_card = 16_282 * 2**20    # bytes: the lesson's card, which reports "15.90 GiB"
total = torch.cuda.get_device_properties(0).total_memory
torch.cuda.set_per_process_memory_fraction(min(1.0, lesson_card / total))
# Allocations beyond that share now fail with the usual out-of-memory error.
# ANCHOR_END: fraction
print(f"held to {min(1.0, lesson_card / total):.3f} of {total / 2**30:.2f} GiB")
