"""Exclude patterns anchored at the config file's folder (light: no libcst import)."""

from __future__ import annotations

import os
from typing import Tuple

from shapelint.config import Settings


def anchor(pattern: str, base: str) -> str:
    """``pattern`` relative to ``base`` (``./sub``, ``sub/`` and ``sub`` alike)."""
    if pattern.startswith("*"):
        return pattern
    return os.path.normpath(os.path.join(os.path.abspath(base), pattern))


def exclude_patterns(settings: Settings) -> Tuple[str, ...]:
    exclude = tuple(settings.exclude) + tuple(settings.extend_exclude)
    return tuple(anchor(p, settings.base_dir) for p in exclude)
