"""What the error message's "free" is, and giving cached memory back: drop the references, let
Python collect cycles, then empty the cache. CUDA only; without it this says so."""
import gc

import torch

MiB = 2**20
if not torch.cuda.is_available():
    print("no CUDA device: mem_get_info and empty_cache act on one; nothing to show here")
    raise SystemExit(0)

# ANCHOR: mem_get_info
free, total = torch.cuda.mem_get_info()   # the driver's view: what every process left
print(f"free {free / MiB:.0f} MiB of {total / MiB:.0f} MiB")
# ANCHOR_END: mem_get_info
big = torch.empty(256 * MiB, dtype=torch.uint8, device="cuda")
# ANCHOR: empty_cache
del big                      # the tensor's block goes back to PyTorch's cache...
gc.collect()                 # ...with any reference cycles that still held tensors
print(f"reserved before {torch.cuda.memory_reserved() / MiB:.0f} MiB")
torch.cuda.empty_cache()     # ...and unused cached segments go back to the driver
print(f"reserved after  {torch.cuda.memory_reserved() / MiB:.0f} MiB")
# ANCHOR_END: empty_cache
