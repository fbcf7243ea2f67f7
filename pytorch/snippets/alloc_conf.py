"""The caching allocator's settings: an environment variable read once, when CUDA starts, so it
must be set before the first CUDA call (here, before torch is imported). Then the allocator's
own report of what it took. Oldest PyTorch: 2.1 (expandable_segments)."""
# ANCHOR: conf
import os

conf = "expandable_segments:True"
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = conf   # the name every PyTorch 2.x reads for CUDA
os.environ["PYTORCH_ALLOC_CONF"] = conf        # the newer name, read first from 2.9 on (which
# warns when only the old one is set); 2.9.1 ignored expandable_segments given under the newer
# name alone (pytorch#183387): set both. Other settings, comma-separated:
# "max_split_size_mb:128", "garbage_collection_threshold:0.8" (only with a memory fraction).

import torch  # noqa: E402 - after the setting, on purpose
# ANCHOR_END: conf

if not torch.cuda.is_available():
    print("no CUDA device: the setting is read when CUDA starts, so what took cannot be shown "
          f"here; asked for: {conf}")
    raise SystemExit(0)

torch.zeros(1, device="cuda")  # CUDA starts here and reads the setting
settings = torch.cuda.memory._snapshot().get("allocator_settings")   # what the allocator took
if settings is None:
    print(f"this PyTorch ({torch.__version__}) does not report its allocator's settings")
else:
    print("the allocator took: expandable_segments =", settings.get("expandable_segments"))
