"""Build-time helpers for the kernels image (``patch_tilelang_hip.py``)."""
