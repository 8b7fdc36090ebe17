"""`python -m recipes.serve [SGLANG FLAGS...]`: see recipes.serve.cli."""

import sys

from recipes.serve.cli import main

sys.exit(main(sys.argv[1:]))
