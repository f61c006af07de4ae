"""Where and in what arithmetic a run trains on this machine (torch): the device's name, as metrics.json and
Table 3 give it, and the precision (bf16 or fp16 autocast on a GPU, TF32 matmuls, fp32 on the CPU)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from spanft.english import count_of


@dataclass(frozen=True)
class Precision:
    """How a run's arithmetic goes on this machine: bf16 autocast where the GPU has it, else fp16 with a grad
    scaler on a GPU, fp32 on the CPU; TF32 matmuls for the fp32 work of Ampere and later GPUs."""

    bf16: bool
    fp16: bool
    tf32: bool


def device_name(processes: int = 1) -> str:
    """Where a run trains, as metrics.json and Table 3 say it: the GPU's name, or the CPU's cores and threads."""
    each = " each" if processes > 1 else ""
    if torch.cuda.is_available():
        name = f"cuda ({torch.cuda.get_device_name(0)})"
    else:
        name = f"cpu ({count_of(os.cpu_count() or 1, 'core')}, {count_of(torch.get_num_threads(), 'thread')}{each})"
    return name if processes == 1 else f"{name} x {count_of(processes, 'process', 'processes')}"


def run_precision() -> Precision:
    cuda = torch.cuda.is_available()
    bf16 = cuda and torch.cuda.is_bf16_supported()
    return Precision(bf16=bf16, fp16=cuda and not bf16, tf32=cuda and torch.cuda.get_device_capability()[0] >= 8)
