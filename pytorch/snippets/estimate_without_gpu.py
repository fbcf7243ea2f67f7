"""PyTorch's own estimate of a step that no machine at hand could run: FakeTensorMode gives
tensors shapes but no storage, and MemTracker counts what would be alive. The lesson's whole
training set as one batch costs nothing here."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools.mem_tracker import MemTracker

GiB = 2**30
rows = 1_173_000                     # the lesson's training set, as one batch

# ANCHOR: estimate
with FakeTensorMode():
    model = nn.Sequential(nn.Linear(2, 2000), nn.ReLU(), nn.Linear(2000, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001, foreach=True)  # CUDA's default
    mt = MemTracker()
    mt.track_external(model, optimizer)
    with mt:
        x = torch.randn(rows, 2)     # made inside the tracker, so that the batch is counted
        y = torch.randint(0, 2, (rows,))
        for _ in range(2):           # the second step holds Adam's state
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            mt.reset_mod_stats()
    peak = mt.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]
# ANCHOR_END: estimate
print(f"peak of live tensors: {peak / GiB:.2f} GiB ({peak:,} B, raw bytes, no allocator rounding)")
print("the engine's plan of the same step: cargo run -p challenge1 -- --backend plan")
