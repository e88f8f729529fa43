"""``--format sarif``: SARIF 2.1.0 for GitHub code scanning.

URIs are relative to ``%SRCROOT%`` (the git root, or the working directory); fingerprints hash
the rule, the path and the normalized source line (plus its occurrence index), so they survive
edits that shift lines; harness evidence goes into ``properties``."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections import Counter
from typing import Any, Dict, List
from urllib.parse import quote

from shapelint import __version__
from shapelint.finding import CheckResult, TargetResult
from shapelint.report.escape import clean, defuse_json
from shapelint.schema import dump

LEVEL = {"error": "error", "warning": "warning", "info": "note"}
INFO_URI = "https://github.com/shapelint/shapelint"
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: the base of a library finding's URI: never an absolute path of the machine that ran it
LIBRARY = "LIBRARY"


def source_root() -> str:
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                             timeout=10)
        if top.returncode == 0 and top.stdout.strip():
            return top.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return os.getcwd()


def _uri(path: str, root: str) -> str:
    """A valid URI reference (RFC 3986) for ``path``: relative to the source root when under
    it, else an absolute ``file://`` URI; every character a URI cannot hold as is (``,``, ``:``,
    ``%``, spaces, newlines, ``<``, non-ASCII...) is percent-encoded as UTF-8, so that a
    relative path such as ``a:b.py`` is not read as a URI scheme."""
    ab = os.path.abspath(path)
    rel = os.path.relpath(ab, root)
    if rel.startswith(".."):
        return _file_uri(ab)
    return quote(rel.replace(os.sep, "/"), safe="/", errors="surrogateescape")


def _relative_uri(path: str) -> str:
    """A path inside a library (``transformers/masking_utils.py``), as a relative URI."""
    return quote(path.replace(os.sep, "/"), safe="/", errors="surrogateescape")


def _file_uri(abspath: str, directory: bool = False) -> str:
    path = quote(abspath.replace(os.sep, "/"), safe="/", errors="surrogateescape")
    if not path.startswith("/"):
        path = "/" + path  # C:/x on Windows
    return "file://" + (path.rstrip("/") + "/" if directory else path)


def _rule(r) -> Dict[str, Any]:
    from shapelint.registry import on_by_default, rule_status

    doc = r.documentation()
    return {
        "id": r.code, "name": r.name,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": doc.split("## Why is this bad?")[0].replace("## What it does", "").strip()
                            or r.summary},
        "help": {"text": doc, "markdown": doc},
        "defaultConfiguration": {"level": LEVEL.get(r.severity, "warning"),
                                 "enabled": on_by_default(r)},
        "properties": {"tags": ["torch.compile", r.code[:3]], "evidence": list(r.evidence),
                       "registry_ids": list(r.registry_ids), "status": rule_status(r),
                       **({"precision": r.measured_precision}
                          if r.measured_precision is not None else {})},
    }


def document(result: CheckResult, rules: Dict[str, Any], targets: List[TargetResult]) -> Dict[str, Any]:
    root = source_root()
    codes = list(rules)
    results = []
    occurrences: Counter = Counter()
    for f in result.all_findings():
        norm = " ".join(f.source_line.split())
        key = (f.rule, f.path, norm)
        occurrences[key] += 1
        uri, base = (_relative_uri(f.path), LIBRARY) if f.library else (_uri(f.path, root), "%SRCROOT%")
        digest = hashlib.sha256(f"{f.rule}\0{uri}\0{norm}\0{occurrences[key]}".encode()).hexdigest()
        loc = f.location
        res: Dict[str, Any] = {
            "ruleId": f.rule,
            "level": LEVEL.get(f.severity, "warning"),
            "message": {"text": clean(f.message) + (f"\nHelp: {clean(f.hint)}" if f.hint else "")},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": uri, "uriBaseId": base},
                "region": {"startLine": loc.line, "startColumn": loc.column,
                           "endLine": max(loc.end_line, loc.line), "endColumn": max(loc.end_column, 1) + 1,
                           **({"snippet": {"text": clean(f.source_line)}} if f.source_line else {})}}}],
            "partialFingerprints": {"shapelintLine/v1": digest[:32]},
            "properties": {"status": f.status, "symbol": clean(f.symbol), "evidence": list(f.evidence),
                           "evidence_events": [e.to_json() for e in f.evidence_events]},
        }
        if f.rule in codes:
            res["ruleIndex"] = codes.index(f.rule)
        results.append(res)
    notifications = [{"level": "error", "message": {"text": clean(e.message)},
                      "locations": [{"physicalLocation": {
                          "artifactLocation": {"uri": _uri(e.path, root), "uriBaseId": "%SRCROOT%"},
                          "region": {"startLine": max(e.line, 1), "startColumn": max(e.column, 1)}}}]}
                     for e in result.errors]
    for t in targets:
        if t.failed:
            notifications.append({"level": "error", "message": {
                "text": clean(f"target {t.name}: " + "; ".join(str(p) for p in t.problems))}})
    run: Dict[str, Any] = {
        "tool": {"driver": {"name": "shapelint", "version": __version__, "informationUri": INFO_URI,
                            "rules": [_rule(r) for r in rules.values()]}},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": _file_uri(root, directory=True)},
                               **({LIBRARY: {"description": {"text": "an installed library outside "
                                                                       "the repository"}}}
                                  if any(f.library for f in result.all_findings()) else {})},
        "results": results,
        "invocations": [{"executionSuccessful": not result.errors,
                         "toolExecutionNotifications": notifications}],
    }
    if targets:
        run["properties"] = {"targets": [dict({k: dump(getattr(t, k)) for k in (
            "name", "torch_version", "device", "backend", "dynamic", "compiles", "per_shape", "error",
            "problems")}, remedies=[r.to_json() for r in t.remedies], failed=t.failed)
            for t in targets]}
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def render(result: CheckResult, *, rules, targets, color=False, statistics=False) -> str:
    return defuse_json(json.dumps(document(result, rules, targets), indent=2)) + "\n"
