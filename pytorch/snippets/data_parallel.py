"""More than one card: DDP, ZeRO-1 (ZeroRedundancyOptimizer) and FSDP2 (fully_shard), each run
here as one process on the CPU (gloo) so the code runs anywhere; `python data_parallel.py` on a
GPU machine runs it as one process on GPU 0 (nccl). On N GPUs, start it with
`torchrun --nproc-per-node N data_parallel.py`: each rank takes its own card (LOCAL_RANK).
Oldest PyTorch: 2.0 for DDP and ZeRO-1; FSDP2 needs 2.6 (fully_shard in torch.distributed.fsdp)."""
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

from measure import batch, lesson_model

try:
    from torch.distributed.fsdp import fully_shard     # FSDP2: public here since PyTorch 2.6
except ImportError:
    fully_shard = None

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29517")
os.environ.setdefault("RANK", "0")
os.environ.setdefault("WORLD_SIZE", "1")
cuda = torch.cuda.is_available()
if cuda:                                      # before any CUDA call: this rank's own card,
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))   # not a context on GPU 0
device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
dist.init_process_group("nccl" if cuda else "gloo")
rank = dist.get_rank()
x, y = (t.to(device) for t in batch(64))


def train(model, optimizer, name):
    for _ in range(2):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()   # DDP/FSDP communicate inside backward
        optimizer.step()
    if rank == 0:
        print(f"{name}: trained on {dist.get_world_size()} process(es)")


# ANCHOR: ddp
model = DDP(lesson_model(width=256, layers=2).to(device),
            gradient_as_bucket_view=True)   # gradients live in DDP's buckets: no second copy
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
# ANCHOR_END: ddp
train(model, optimizer, "DDP")

# ANCHOR: zero1
model = DDP(lesson_model(width=256, layers=2).to(device), gradient_as_bucket_view=True)
optimizer = ZeroRedundancyOptimizer(          # each rank keeps Adam's state for its share
    model.parameters(), optimizer_class=torch.optim.Adam, lr=0.001)
# ANCHOR_END: zero1
train(model, optimizer, "ZeRO-1")

if fully_shard is None:
    print(f"FSDP2 skipped: fully_shard is in torch.distributed.fsdp from PyTorch 2.6; this is "
          f"{torch.__version__}")
    dist.destroy_process_group()
    raise SystemExit(0)

# ANCHOR: fsdp2
with torch.device("meta"):                    # no memory yet: shapes only
    model = lesson_model(width=256, layers=2, move=False)
for layer in model:
    if isinstance(layer, torch.nn.Linear):
        fully_shard(layer)                    # each Linear's parameters sharded across ranks
fully_shard(model)
model.to_empty(device=device)                 # allocate this rank's shards only
for layer in model:
    if isinstance(layer, torch.nn.Linear):
        layer.reset_parameters()              # initialise them in place
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
# ANCHOR_END: fsdp2
train(model, optimizer, "FSDP2")

dist.destroy_process_group()
