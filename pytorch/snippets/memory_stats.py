"""PyTorch's own memory counters around one training step: allocated, reserved, the peak, and
the allocator's summary table. First MemTracker counts the step's tensors (raw bytes, no
rounding; it needs no GPU), then, on a CUDA device, torch.cuda's counters of its caching
allocator; without one this says so."""
import torch
import torch.nn as nn
import torch.nn.functional as F

MiB = 2**20
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 2000), nn.ReLU(), nn.Linear(2000, 2)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
x = torch.randn(4096, 2, device=device)
y = torch.randint(0, 2, (4096,), device=device)


def step():
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()


# Without a GPU, PyTorch's MemTracker counts the same step's tensors (on a GPU too).
# ANCHOR: memtracker
from torch.distributed._tools.mem_tracker import MemTracker

mt = MemTracker()
mt.track_external(model, optimizer)
with mt:
    for _ in range(2):                 # the second step holds Adam's state
        step()
        mt.reset_mod_stats()           # MemTracker wants this between iterations
peak = sum(d["Total"] for d in mt.get_tracker_snapshot("peak").values())
print(f"peak of live tensors: {peak / MiB:.2f} MiB (raw bytes, no allocator rounding)")
# ANCHOR_END: memtracker

if not torch.cuda.is_available():
    print("no CUDA device: torch.cuda's counters below need one")
    raise SystemExit(0)

# ANCHOR: cuda
torch.cuda.reset_peak_memory_stats()   # the peak counts from here
step()
print(f"allocated {torch.cuda.memory_allocated() / MiB:.2f} MiB")      # live tensors
print(f"reserved  {torch.cuda.memory_reserved() / MiB:.2f} MiB")       # held by the cache
print(f"peak      {torch.cuda.max_memory_allocated() / MiB:.2f} MiB")  # since the reset
print(torch.cuda.memory_summary(abbreviated=True))                     # the whole table
# ANCHOR_END: cuda
