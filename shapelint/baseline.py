"""Baselines: accept today's findings, report only new ones.

Keyed by rule, path and the normalized source line (whitespace collapsed), with a count per
key, so the baseline survives edits that shift lines. Paths are relative to the project's root
(the config's folder, else the repository's root, else the working directory), so a baseline
written at the root applies from any folder of the project, and the other way round. A baseline
is read through shapelint.schema (a typed :class:`Baseline`): a malformed one is one line naming
the field, a FIFO is refused before it is opened."""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Tuple

from shapelint.config import ConfigError, Settings, repository_root
from shapelint.finding import RULE_CODE, CheckResult, Finding
from shapelint.output import write_atomic
from shapelint.schema import SchemaError, load_file

#: version 1 kept paths as the working directory showed them; 2 relative to the project's root
VERSION = 2


@dataclass
class BaselineEntry:
    """Findings of one rule on one source line of one file, ``count`` of them accepted."""

    rule: str = field(metadata={"pattern": RULE_CODE})
    path: str
    source: str
    count: int = 1


@dataclass
class Baseline:
    findings: List[BaselineEntry]
    version: int = 1


def project_root(settings: Optional[Settings] = None) -> str:
    """What baseline paths are relative to: the config's folder, else the repository's root,
    else the working directory."""
    if settings is not None and settings.config_path:
        return os.path.dirname(os.path.abspath(settings.config_path))
    return repository_root(os.getcwd()) or os.getcwd()


def _rel(path: str, root: str) -> str:
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


def key(f: Finding, root: str) -> Tuple[str, str, str]:
    return (f.rule, _rel(f.path, root), " ".join(f.source_line.split()))


def write(path: str, findings: Iterable[Finding], force: bool = False,
          settings: Optional[Settings] = None) -> None:
    root = project_root(settings)
    counts = Counter(key(f, root) for f in findings)
    entries = [{"rule": r, "path": p, "source": s, "count": n} for (r, p, s), n in sorted(counts.items())]
    write_atomic(path, json.dumps({"version": VERSION, "findings": entries}, indent=1) + "\n", force)


def read(path: str) -> Baseline:
    """The baseline in ``path``, every field checked; a ConfigError in one line otherwise."""
    what = "shapelint baseline"
    try:
        doc = load_file(Baseline, path, what)
        if doc.version not in (1, VERSION):
            raise SchemaError(f"version: this shapelint reads versions 1 and {VERSION}, "
                              f"got {doc.version}")
        for i, e in enumerate(doc.findings):
            if e.count < 1:
                raise SchemaError(f"findings[{i}].count: must be a positive integer, got {e.count}")
    except SchemaError as exc:
        text = str(exc)
        raise ConfigError(text if text.startswith(path) else f"{path}: not a {what}: {text}") from exc
    except (OSError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc
    return doc


def apply(path: str, result: CheckResult, settings: Optional[Settings] = None) -> CheckResult:
    root = project_root(settings)
    doc = read(path)
    budget: Counter = Counter()
    for e in doc.findings:
        where = e.path if doc.version >= 2 else _rel(e.path, root)  # v1: as the cwd showed it
        budget[(e.rule, where, " ".join(e.source.split()))] += e.count

    def new(findings):
        kept = []
        for f in findings:
            k = key(f, root)
            if budget[k] > 0:
                budget[k] -= 1
            else:
                kept.append(f)
        return kept

    # unused suppressions (SL001) are recorded like any finding, so they are accepted too
    result.findings = new(result.findings)
    result.unused_suppressions = new(result.unused_suppressions)
    return result
