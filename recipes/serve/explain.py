"""Print the launch the entrypoint would make on an arch, without a GPU, checked by SGLang's parser.

    python -m recipes.serve.explain [--arch gfx1100] [--aiter | --no-aiter] [-- SGLANG FLAGS...]

--arch: an arch of the matrix (/etc/rocmig/archs.json; default: the image's); --aiter: whether aiter
is taken as present (default: as in this image on its own arch, else on CDNA3/CDNA4). Prints one JSON
object: engine, argv, env, choices. Exit 0, or 2 with one line when SGLang's parser refuses the flags.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import sys

from recipes.serve import launch, validate
from recipes.serve.cell import Cell, load_cell
from recipes.serve.errors import BAD_FLAG, ServeError


def cell_on(cell: Cell, arch: str) -> Cell:
    """`cell` moved to another arch of its arch table. Raises ValueError naming the allowed archs."""
    if arch not in cell.archs:
        raise ValueError(f"--arch {arch}: not in the matrix ({', '.join(sorted(cell.archs))})")
    facts = cell.archs[arch]
    return dataclasses.replace(cell, arch=arch, family=facts["family"], wavefront=int(facts["wavefront"]))


def main(argv: list[str]) -> int:
    """CLI entry (see module doc)."""
    p = argparse.ArgumentParser(prog="python -m recipes.serve.explain", description=__doc__.splitlines()[0])
    p.add_argument("--arch")
    p.add_argument("--aiter", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("sglang", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    user = a.sglang[1:] if a.sglang[:1] == ["--"] else a.sglang
    try:
        here = load_cell()
        cell = cell_on(here, a.arch or here.arch)
        aiter = a.aiter if a.aiter is not None else (
            importlib.util.find_spec("aiter") is not None if cell.arch == here.arch and "aiter" in here.components
            else cell.family in ("CDNA3", "CDNA4"))
        plan = launch.plan_gpu(cell, user, os.environ, aiter)
        validate.check(plan.sglang_args)
    except ValueError as exc:
        print(f"rocmig-serve: error: {exc}", file=sys.stderr)
        return BAD_FLAG
    except ServeError as exc:
        print(f"rocmig-serve: error: {exc}", file=sys.stderr)
        return exc.code
    print(json.dumps({"arch": cell.arch, "engine": plan.engine, "argv": list(plan.argv), "env": plan.env,
                      "choices": [c.line() for c in plan.choices]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
