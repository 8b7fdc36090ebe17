"""Exit codes of the serve entrypoint (docs/serve.md lists them) and the error that carries one."""

from __future__ import annotations

OK = 0
BAD_FLAG = 2            # a flag SGLang's parser or the entrypoint refuses
NO_DEVICE = 10          # /dev/kfd or /dev/dri missing in the container
DEVICE_DENIED = 11      # a device node exists but this user cannot open it (group ids)
ARCH_MISMATCH = 12      # the GPU's gfx arch is not the image's
SHM_TOO_SMALL = 13      # /dev/shm too small for tensor parallelism
MODEL_UNUSABLE = 14     # model path missing, unreadable or not a model
PORT_TAKEN = 15         # the port is already bound in the container's network namespace
NO_GPU_ENGINE = 16      # GPU serving asked of an image whose torch is a CPU build
NOT_HEALTHY = 17        # the engine exited, or did not answer /health within the timeout


class ServeError(Exception):
    """A reason to stop before (or instead of) serving: `code` is the exit code, str() the one line."""

    def __init__(self, code: int, line: str) -> None:
        super().__init__(line)
        self.code = code
