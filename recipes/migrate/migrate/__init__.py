"""rocmig's in-image migration recipe: CUDA tree -> hipify-perl -> exact fixups -> hipcc per offload arch -> report.

Runs inside the dev image with the standard library and python3-yaml only:
    PYTHONPATH=/opt/rocmig/recipes/migrate python3 -m migrate SRC --arch gfx942 --out DIR
See docs/migrate.md for the options, exit codes and the report schema.
"""

REPORT_SCHEMA_VERSION = 1
