"""The caching allocator's settings: an environment variable read once, when CUDA starts, so it
must be set before the first CUDA call (here, before torch is imported)."""
# ANCHOR: conf
import os

# PYTORCH_ALLOC_CONF is the newer name; PyTorch 2.x still reads PYTORCH_CUDA_ALLOC_CONF too.
os.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True"
# Other settings, comma-separated: "max_split_size_mb:128",
# "garbage_collection_threshold:0.8" (acts only with a memory fraction set).

import torch  # noqa: E402 - after the setting, on purpose
# ANCHOR_END: conf

if torch.cuda.is_available():
    torch.zeros(1, device="cuda")  # CUDA starts here and reads the setting
    print(torch.cuda.memory_summary(abbreviated=True).splitlines()[0])
else:
    print("no CUDA device: the setting is read when CUDA starts; set it was:",
          os.environ["PYTORCH_ALLOC_CONF"])
