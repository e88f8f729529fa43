"""``python -m shapelint``: the same as the ``shapelint`` command."""

from shapelint.cli import entry

if __name__ == "__main__":
    entry()
