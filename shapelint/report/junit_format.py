"""``--format junit``: JUnit XML for CI systems that read test reports: one suite per file with
findings (one failing case per finding), and one case per harness target."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict

from shapelint.finding import CheckResult
from shapelint.report.escape import clean, defuse_commands


def _x(text: object) -> str:
    """An attribute value: XML 1.0 cannot hold most control characters at all (not even as
    character references), so they are written as escapes (report/escape.py)."""
    return defuse_commands(clean(text, keep_newlines=True))


def _t(text: object) -> str:
    """A field of a text node: one line of it, never the start of a workflow command."""
    return defuse_commands(clean(text))


def render(result: CheckResult, *, rules, targets, color=False, statistics=False) -> str:
    root = ET.Element("testsuites", name="shapelint")
    per_file = defaultdict(list)
    library = [f for f in result.all_findings() if f.library]  # not the project's to fix
    for f in result.all_findings():
        if not f.library:
            per_file[f.path].append(f)
    total = failures = 0
    for path, items in sorted(per_file.items()):
        suite = ET.SubElement(root, "testsuite", name=_x(path), tests=str(len(items)),
                              failures=str(len(items)), errors="0")
        for f in items:
            case = ET.SubElement(suite, "testcase", name=_x(f"{f.rule} {f.name} line {f.line}"),
                                 classname=_x(path), file=_x(path), line=str(f.line))
            fail = ET.SubElement(case, "failure", message=_x(f.message), type=_x(f.rule))
            fail.text = (f"{_t(f.path)}:{f.line}:{f.column}: {_t(f.rule)} {_t(f.message)}\n"
                         f"{_t(f.source_line)}\nhelp: {_t(f.hint)}")
        total += len(items)
        failures += len(items)
    if library:
        suite = ET.SubElement(root, "testsuite", name="library code", tests=str(len(library)),
                              failures="0", errors="0", skipped=str(len(library)))
        for f in library:
            case = ET.SubElement(suite, "testcase", name=_x(f"{f.rule} {f.name} {f.path}:{f.line}"),
                                 classname="library")
            ET.SubElement(case, "skipped", message=_x(f"in library code: {f.message}"))
        total += len(library)
    if result.errors:
        suite = ET.SubElement(root, "testsuite", name="file errors", tests=str(len(result.errors)),
                              failures="0", errors=str(len(result.errors)))
        for e in result.errors:
            case = ET.SubElement(suite, "testcase", name=_x(e.path), classname="file-errors")
            err = ET.SubElement(case, "error", message=_x(e.message))
            err.text = f"{_t(e.path)}:{e.line}:{e.column}: {_t(e.message)}"
        total += len(result.errors)
    if targets:
        failed = [t for t in targets if t.failed]
        suite = ET.SubElement(root, "testsuite", name="shapelint run", tests=str(len(targets)),
                              failures=str(len(failed)), errors="0")
        for t in targets:
            case = ET.SubElement(suite, "testcase", name=_x(f"target {t.name}"), classname="targets",
                                 time=str(t.seconds or 0))
            if t.failed:
                why = "; ".join(str(p) for p in t.problems)
                ET.SubElement(case, "failure", message=_x(why)).text = _t(why)
        total += len(targets)
        failures += len(failed)
    if total == 0:
        suite = ET.SubElement(root, "testsuite", name="shapelint", tests="1", failures="0", errors="0")
        ET.SubElement(suite, "testcase", name="no findings", classname="shapelint")
    root.set("tests", str(max(total, 1)))
    root.set("failures", str(failures))
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
