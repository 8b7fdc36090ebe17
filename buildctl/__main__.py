"""`python -m buildctl`: the same CLI as the `buildctl` console script (BuildKit's own client shares the name)."""

from buildctl.cli import run

run()
