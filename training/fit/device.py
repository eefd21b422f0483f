"""Where training runs: the device, bf16 autocast, and the torchrun process group."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from oneply.engine.errors import CommandError


def autocast(device: torch.device, enabled: bool) -> contextlib.AbstractContextManager[Any]:
    """bf16 autocast on `device` where `enabled`, else nothing."""
    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def bf16_supported(device: torch.device) -> bool:
    """bf16 pays off on GPUs that support it and on CPUs with AVX512-BF16 or AMX."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


@dataclass(frozen=True)
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0


def pick_device(name: str, local_rank: int = 0) -> torch.device:
    """`auto`: this rank's GPU when CUDA sees one, else the CPU; `cuda` without a visible GPU
    is an error rather than a silent CPU run (or torch's bare "invalid device ordinal")."""
    if name not in ("auto", "cpu", "cuda"):
        raise CommandError(f"--device {name}: choose auto, cpu or cuda")
    if name == "cpu" or (name == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if local_rank >= count:
        raise CommandError(
            f"--device {name}: rank {local_rank} needs GPU {local_rank}, but CUDA sees "
            f"{count} GPU(s); check CUDA_VISIBLE_DEVICES and --nproc_per_node, or use --device cpu"
        )
    return torch.device(f"cuda:{local_rank}")


def init_distributed(device_name: str) -> tuple[Dist, torch.device]:
    """Rank, world size and this process's device; joins the process group under torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    info = Dist(int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0")))
    device = pick_device(device_name, info.local_rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = True  # what fp32 (--no-bf16) matmuls get
        torch.backends.cudnn.allow_tf32 = True
    cuda = device.type == "cuda"
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if cuda else "gloo")
    return info, device
