"""``python -m npuc``: the npuc command line."""

import sys

from npuc.cli import main

if __name__ == "__main__":
    sys.exit(main())
