"""The GPU bench of the kernels (``python -m kernels.bench.gpu``) and its Markdown report."""
