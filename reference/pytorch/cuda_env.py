"""What a CUDA measurement ran on: the card, its driver, torch and the settings that change
PyTorch's memory figures. Shared by step_peaks.py (cuda backend) and challenge1_cuda.py.

Standard library and torch only; every field that cannot be read is None, never an error.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess

# Settings that change what PyTorch's caching allocator holds (None: unset, PyTorch's default).
ENV_VARS = (
    "CUBLAS_WORKSPACE_CONFIG",
    "CUBLASLT_WORKSPACE_SIZE",
    "TORCH_CUBLASLT_UNIFIED_WORKSPACE",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_MODULE_LOADING",
    "TORCH_SYMBOLIZE_MODE",
)


def _nvidia_smi() -> dict:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return {}
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,driver_version,memory.total,memory.used",
             "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return {}
    if not out:
        return {}
    parts = [p.strip() for p in out[0].split(",")]
    keys = ("name", "driver_version", "memory_total", "memory_used")
    return dict(zip(keys, parts))


def _try(f):
    try:
        return f()
    except Exception:  # noqa: BLE001 - a field we cannot read is None
        return None


def environment() -> dict:
    """The card, driver, torch, CUDA and the allocator-relevant environment variables."""
    import torch

    env = {
        "torch_version": torch.__version__,
        "torch_cuda_version": torch.version.cuda,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "env": {k: os.environ.get(k) for k in ENV_VARS},
    }
    env["cublas_workspace_config"] = os.environ.get("CUBLAS_WORKSPACE_CONFIG") or "unset (PyTorch's default)"
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        smi = _nvidia_smi()
        env.update({
            "gpu_name": torch.cuda.get_device_name(0),
            "gpu_capability": list(torch.cuda.get_device_capability(0)),
            "gpu_total_memory": props.total_memory,
            "gpu_multi_processors": props.multi_processor_count,
            "driver_version": smi.get("driver_version") or _try(_nvml_driver),
            "cuda_driver_api_version": _try(lambda: torch._C._cuda_getDriverVersion()),
            "cudnn_version": _try(lambda: torch.backends.cudnn.version()),
            "mem_get_info": list(_try(lambda: torch.cuda.mem_get_info(0)) or []),
            "nvidia_smi": smi,
        })
    else:
        env["gpu_name"] = None
    return env


def _nvml_driver():
    import pynvml  # nvidia-ml-py, where installed

    pynvml.nvmlInit()
    v = pynvml.nvmlSystemGetDriverVersion()
    return v.decode() if isinstance(v, bytes) else v
