#!/bin/sh
# Entrypoint of the debian lane's torch-based images (torch, train, kernels): says once, at start, that
# this image's PyTorch is Debian's CPU build, then runs the command. ROCMIG_QUIET=1 hides the line.
if [ "${ROCMIG_QUIET:-0}" != "1" ]; then
  echo "rocmig: this image's PyTorch is Debian's CPU build: it cannot use a GPU (torch.cuda.is_available() is" \
       "False, on AMD GPUs too); for GPU work use the amd lane's images (docs/tags.md). ROCMIG_QUIET=1 hides this." >&2
fi
[ "$#" -gt 0 ] || set -- bash
exec "$@"
