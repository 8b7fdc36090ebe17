"""`python3 -m migrate ...`: see migrate/cli.py."""

import sys

from .cli import main

sys.exit(main())
