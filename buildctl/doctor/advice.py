"""What to collect next when no catalog entry matched: per kind of log, the commands whose output
names the cause (or lets the catalog match next time)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class LogKind:
    """A kind of log, the markers that recognise it and what to collect for it."""

    name: str
    markers: re.Pattern[str]
    collect: tuple[str, ...]
    # Lines hit are multiplied by this: broad markers (hip, gpu, torch ...) also fill build logs.
    weight: float = 1.0


_COMMON = (
    ("the full log, not its last lines: the first error is usually far above the end "
     "(docker buildx bake --progress=plain ... 2>&1 | tee build.log)"),
)

KINDS: tuple[LogKind, ...] = (
    LogKind("image build (apt / Docker)", re.compile(
        r"apt-get|dpkg|^#\d+ \[|buildx|dockerfile|(?-i:^Err:\d+|^E: )|docker build", re.IGNORECASE | re.MULTILINE), (
        "apt-cache policy rocm-hip-runtime hipcc  # which repository and version apt would install",
        "cat /etc/apt/sources.list.d/*.list  # which mirrors the image uses",
        "curl -sSI <the --apt-mirror URL>/dists/  # does the mirror answer at all",
        "docker system df  # free space for the build cache",
    )),
    LogKind("compile (hipcc / clang / CMake)", re.compile(
        r"hipcc|clang|\.hip\b|\.cu\b|cmake|ninja|\berror:|offload-arch", re.IGNORECASE), (
        "hipcc --version; ls -d /opt/rocm*  # which ROCm and compiler the build found",
        "the first 'error:' line and the command line above it (ninja -v / make VERBOSE=1)",
        "echo $PYTORCH_ROCM_ARCH $GPU_TARGETS $AMDGPU_TARGETS  # the offload archs the build was given",
    )),
    LogKind("Python packages (pip)", re.compile(r"pip install|Collecting |Requirement already|wheel|setup\.py",
                                                re.IGNORECASE), (
        "pip list | grep -iE 'torch|rocm|triton|nvidia'  # a CUDA wheel next to a ROCm one shows here",
        "python3 -c 'import torch; print(torch.__version__, torch.version.hip)'",
        "pip install -v ... 2>&1 | tee pip.log  # the resolver's reasons are in the verbose log",
    )),
    LogKind("multi-GPU (RCCL / torch.distributed)", re.compile(r"NCCL|RCCL|torchrun|ProcessGroup|all_reduce|"
                                                               r"world_size|MASTER_ADDR", re.IGNORECASE), (
        "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET torchrun ...  # which transport RCCL picked",
        "cat /proc/cmdline  # iommu=pt on multi-GPU hosts",
        "amd-smi topology  # link types between the GPUs",
    )),
    LogKind("GPU runtime (HIP / PyTorch)", re.compile(r"hip|hsa|rocm|torch|cuda|gpu|amdgpu|kfd", re.IGNORECASE), (
        "rocminfo | grep -E 'Marketing Name|Name: +gfx'  # the GPU and its gfx arch",
        "amd-smi version; amd-smi static --asic  # driver, ROCm and firmware versions",
        "sudo dmesg | grep -iE 'amdgpu|kfd' | tail -n 30  # the kernel driver's view of the failure",
        "ls -l /dev/kfd /dev/dri; id  # device nodes and the user's groups",
        "env | grep -E 'HIP_|HSA_|ROCR_|ROCM|CUDA_VISIBLE'  # variables that change which GPU and code path run",
        "AMD_LOG_LEVEL=3 <the failing command>  # the HIP runtime's own log of the failing call",
    ), 0.5),
)


def kind_of(lines: Sequence[str]) -> LogKind | None:
    """The kind whose markers hit most lines of the log, times its weight (first in KINDS on a tie); None when none hit."""
    best: tuple[float, LogKind] | None = None
    for kind in KINDS:
        count = kind.weight * sum(1 for line in lines if kind.markers.search(line))
        if count and (best is None or count > best[0]):
            best = (count, kind)
    return best[1] if best else None


def collect_next(lines: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """(kind name, what to collect) for a log no entry matched; a general list when the kind is unknown."""
    kind = kind_of(lines)
    if kind is None:
        return "unknown", _COMMON + KINDS[-1].collect[:3]
    return kind.name, _COMMON + kind.collect
