"""``python -m shapelint``: the same as the ``shapelint`` command."""

import sys

from shapelint.cli import main

if __name__ == "__main__":
    sys.exit(main())
