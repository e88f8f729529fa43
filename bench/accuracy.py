"""Static-pass accuracy on the labelled cases (tests/cases/shared, or ../shared/cases): recall
and precision, per kind and in total.

recall    = expected (file, line, kind) entries that a finding of a matching rule hits
precision = findings on expected lines, or on lines torch blamed in measured.json / all
            findings (findings on decoys and on negative cases count against it)

Each case's ``varies`` says which input dims its replay varies ("batch (dim 0) and time
length (dim 1)"); the static pass is told the same through ``dynamic-dims = {"*" = [0, 1]}``,
as a user tells it which dims of their inputs change between calls (by default it assumes
dim 0, and dim 1 of ids and masks). ``--no-declared-dims`` checks with the defaults alone.
The rules are those on by default; ``--preview`` adds the preview rules.
The last line is ``TOTAL recall=R precision=P``; tests/test_accuracy.py fails if either drops
below bench/accuracy_baseline.json.

    python bench/accuracy.py [CASES_DIR] [--verbose]
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cases import KIND_RULES, load_cases  # noqa: E402

from shapelint.config import Settings  # noqa: E402
from shapelint.registry import all_rules, on_by_default  # noqa: E402
from shapelint.static.check import check  # noqa: E402


_DIMS = None


def declared_dims(folder: str) -> Dict[str, Tuple[int, ...]]:
    """``dynamic-dims`` from the case's ``varies``: "sequence length (dim 1 of input_ids)" ->
    ``{"input_ids": (1,)}``, "(dims 2 and 3)" -> ``{"*": (2, 3)}``, "(dim 2 of q, dim 1 of
    position_ids)" -> one entry per name."""
    import re

    from _cases import tomllib

    global _DIMS
    if _DIMS is None:
        name = r"(?!dims?\b)[A-Za-z_]\w*"
        _DIMS = re.compile(r"\bdims? (-?\d+)((?:(?:,| and) -?\d+)*)(?: of (%s(?:(?:, | and )%s)*))?"
                           % (name, name))
    with open(os.path.join(folder, "case.toml"), "rb") as fh:
        varies = str(tomllib.load(fh).get("varies", ""))
    out: Dict[str, set] = {}
    for m in _DIMS.finditer(varies):
        if re.match(r"\)?\s*(?:is|are) (?:always|constant)", varies[m.end():]):
            continue  # "the frame count (dim 2) is always 3": a dim that does not vary
        dims = {int(m.group(1))} | {int(d) for d in re.findall(r"-?\d+", m.group(2) or "")}
        names = re.split(r", | and ", m.group(3)) if m.group(3) else ["*"]
        for n in names:
            if n in ("the", "both", "every", "each"):
                continue
            out.setdefault(n, set()).update(dims)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def check_case(folder: str, rules, enabled, declare: bool = True):
    settings = Settings()
    if declare:
        settings.dynamic_dims = declared_dims(folder)
    result = check([folder], settings, rules=rules, enabled=enabled, root=folder, use_cache=False)
    out = []
    for f in result.findings:
        rel = os.path.relpath(os.path.abspath(f.path), folder)
        out.append((rel, f.line, f.rule))
    return out, result.errors


def torch_blamed(folder: str) -> set:
    """(file, line) that torch itself blamed a graph break, a recompile or an error on when the
    case was measured (``measured.json``): a finding there is right even where the label
    list leaves it out (a21's ``bincount`` breaks the graph before the ``tolist`` it labels)."""
    import json

    try:
        with open(os.path.join(folder, "measured.json")) as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return set()
    out = set()
    for mode in ((doc.get("case") or {}).get("modes") or {}).values():
        for key in ("graph_break_reasons", "recompile_reasons", "errors"):
            for item in mode.get(key) or ():
                for ref in item.get("lines") or ():
                    out.add((ref["file"], ref["line"]))
    return out


def measure(root=None, verbose=False, declare: bool = True,
            preview: bool = False) -> Tuple[float, float, List[str]]:
    rules = all_rules()
    enabled = [c for c, r in rules.items() if on_by_default(r) or (preview and r.preview)]
    per_kind_found: Dict[str, List[int]] = defaultdict(lambda: [0, 0])
    per_rule: Dict[str, List[int]] = defaultdict(lambda: [0, 0])  # [on expected lines, all]
    good = total = 0
    lines: List[str] = []
    for case in load_cases(root):
        findings, errors = check_case(case.path, rules, enabled, declare)
        expected_lines = {(e["file"], e["line"]) for e in case.expected}
        decoy_lines = {(d["file"], d["line"]) for d in case.decoys}
        blamed = torch_blamed(case.path) - decoy_lines
        for e in case.expected:
            wanted = KIND_RULES.get(e["kind"], ())
            hit = any((f, l) == (e["file"], e["line"]) and (not wanted or r in wanted)
                      for f, l, r in findings)
            per_kind_found[e["kind"]][0] += hit
            per_kind_found[e["kind"]][1] += 1
            if not hit:
                lines.append(f"MISS  {case.id}: {e['file']}:{e['line']} {e['kind']}")
        for f, l, r in findings:
            total += 1
            per_rule[r][1] += 1
            if (f, l) in expected_lines or (f, l) in blamed:
                good += 1
                per_rule[r][0] += 1
                if (f, l) not in expected_lines:
                    lines.append(f"TORCH {case.id}: {f}:{l} {r} (unlabelled, blamed in measured.json)")
            else:
                tag = "DECOY" if (f, l) in decoy_lines else "EXTRA"
                lines.append(f"{tag} {case.id}: {f}:{l} {r}")
        for err in errors:
            lines.append(f"ERROR {case.id}: {err.path}:{err.line} {err.message}")
    found = sum(v[0] for v in per_kind_found.values())
    expected = sum(v[1] for v in per_kind_found.values())
    recall = found / expected if expected else 1.0
    precision = good / total if total else 1.0
    for kind, (hit, n) in sorted(per_kind_found.items()):
        lines.append(f"kind {kind:<24} recall {hit}/{n} = {hit / n:.3f}")
    for rule, (hit, n) in sorted(per_rule.items()):
        lines.append(f"rule {rule:<24} precision {hit}/{n} = {hit / n:.3f}")
    lines.append(f"findings {total}, on expected lines {good}; expected {expected}, found {found}")
    lines.append(f"TOTAL recall={recall:.3f} precision={precision:.3f}")
    return recall, precision, lines


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in argv
    root = next((a for a in argv if not a.startswith("-")), None)
    recall, precision, lines = measure(root, verbose, "--no-declared-dims" not in argv,
                                       "--preview" in argv)
    for line in lines:
        if verbose or not line.startswith(("MISS", "DECOY", "EXTRA", "ERROR", "TORCH")):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
