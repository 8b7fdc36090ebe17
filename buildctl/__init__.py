"""rocmig's host-side build system: matrix → plan → render → bake → build → test → push."""

__version__ = "0.1.0"
