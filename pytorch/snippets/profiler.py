"""torch.profiler with profile_memory=True: which operators allocated how much, on the CPU
here, on the GPU's allocator with CUDA. Oldest PyTorch: 1.8.1 (torch.profiler); the device
column is `self_device_memory_usage` from 2.4, `self_cuda_memory_usage` before it."""
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from measure import batch, device, lesson_model

version = tuple(int(v) for v in torch.__version__.split(".")[:2])
device_memory = "self_device_memory_usage" if version >= (2, 4) else "self_cuda_memory_usage"

model = lesson_model(width=2000, layers=2)
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
x, y = batch(4096)

# ANCHOR: profile
activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
with profile(activities=activities, profile_memory=True) as prof:
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
sort = device_memory if device == "cuda" else "self_cpu_memory_usage"
print(prof.key_averages().table(sort_by=sort, row_limit=8))
# ANCHOR_END: profile
