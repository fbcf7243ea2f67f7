"""Recording the allocator's history and dumping a snapshot that pytorch.org/memory_viz (or
`cargo run -p memviz -- FILE`) draws. CUDA only; without it this says so."""
import torch
import torch.nn as nn
import torch.nn.functional as F

if not torch.cuda.is_available():
    print("no CUDA device: _record_memory_history records a CUDA allocator; nothing to record")
    raise SystemExit(0)

model = nn.Sequential(nn.Linear(2, 2000), nn.ReLU(), nn.Linear(2000, 2)).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
x = torch.randn(4096, 2, device="cuda")
y = torch.randint(0, 2, (4096,), device="cuda")
# ANCHOR: record
torch.cuda.memory._record_memory_history(max_entries=100_000)  # start recording
for _ in range(3):
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
torch.cuda.memory._dump_snapshot("snapshot.pickle")   # open at pytorch.org/memory_viz
torch.cuda.memory._record_memory_history(enabled=None)  # stop recording
# ANCHOR_END: record
print("wrote snapshot.pickle")
