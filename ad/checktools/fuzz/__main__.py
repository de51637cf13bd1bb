"""``python -m ad.checktools.fuzz``: the long run (``cli.main``)."""
import sys

from .cli import main

if __name__ == "__main__":      # multiprocessing's spawned workers import this module too
    sys.exit(main())
