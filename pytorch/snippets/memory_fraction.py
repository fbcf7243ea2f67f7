"""Holding PyTorch to the lesson's card, 15.90 GiB in all, as the book's demos hold the engine
to it: what the GPU already holds outside PyTorch's allocator (the CUDA context) counts within
the card, as in pytorch/lesson.py's cap_card. CUDA only; without it this says so."""
import torch

if not torch.cuda.is_available():
    print("no CUDA device: set_per_process_memory_fraction limits a CUDA allocator")
    raise SystemExit(0)

# ANCHOR: fraction
lesson_card = 16_282 * 2**20    # bytes: the lesson's card, "15.90 GiB" in all
free, total = torch.cuda.mem_get_info()
outside = total - free          # the CUDA context and other processes
fraction = min(1.0, (lesson_card - outside) / total)
torch.cuda.set_per_process_memory_fraction(fraction)
# Allocations beyond that share now fail with the usual out-of-memory error.
# ANCHOR_END: fraction
print(f"held to {fraction:.3f} of {total / 2**30:.2f} GiB: "
      f"{(lesson_card - outside) / 2**30:.2f} GiB for PyTorch's allocator, "
      f"{outside / 2**30:.2f} GiB outside it")
