"""The command line as users run it: exit codes, formats, config, suppressions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys


from conftest import write_tree
from fault_support import with_preview

HAZARD = """
import torch
class M(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 8:
            return x * 2
        return x
"""
CLEAN = """
import torch
class M(torch.nn.Module):
    def forward(self, x):
        return x.view(x.shape[0], -1) * 2
"""


def run(args, cwd, preview=True, **kw):
    """``shapelint ARGS``; ``preview``: with ``--preview`` added (see fault_support.with_preview)."""
    args = with_preview(args) if preview else list(args)
    return subprocess.run([sys.executable, "-m", "shapelint.cli", *args], cwd=str(cwd),
                          capture_output=True, text=True, **kw)


def test_exit_codes_and_text(tmp_path):
    write_tree(tmp_path, {"clean/m.py": CLEAN, "bad/m.py": HAZARD})
    ok = run(["check", "clean"], tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "All checks passed" in ok.stdout
    bad = run(["check", "bad", "--no-cache"], tmp_path)
    assert bad.returncode == 1
    assert "bad/m.py:4:12: SL101 [size-branch]" in bad.stdout
    assert "help:" in bad.stdout
    # the shorthand used by the pre-commit hook
    assert run(["bad", "--preview"], tmp_path).returncode == 1
    assert run(["bad"], tmp_path).returncode == 0  # SL101 is a preview rule
    assert run(["bad", "--preview", "--exit-zero"], tmp_path).returncode == 0


def test_json_contract(tmp_path):
    write_tree(tmp_path, {"pkg/m.py": HAZARD, "pkg/broken.py": "def f(:\n    pass\n"})
    res = run(["check", "pkg", "--format", "json", "--no-cache"], tmp_path)
    assert res.returncode == 1
    doc = json.loads(res.stdout)
    assert set(doc) >= {"version", "files_checked", "findings", "errors"}
    assert doc["files_checked"] == 2
    f = doc["findings"][0]
    assert {k: f[k] for k in ("rule", "path", "line", "column", "end_line", "end_column", "symbol")} == {
        "rule": "SL101", "path": "pkg/m.py", "line": 4, "column": 12, "end_line": 4,
        "end_column": 25, "symbol": "M.forward"}
    assert f["evidence"] == ["recompile", "specialization"] and f["hint"] and f["severity"] == "warning"
    assert "`x.shape[0]` (line 4)" in f["message"]
    err = doc["errors"][0]
    assert err["path"] == "pkg/broken.py" and err["line"] == 1 and "syntax error" in err["message"]


def test_output_file_and_statistics(tmp_path):
    write_tree(tmp_path, {"m.py": HAZARD})
    res = run(["check", ".", "--statistics", "-o", "out.txt", "--no-cache"], tmp_path)
    assert res.returncode == 1 and res.stdout == ""
    text = (tmp_path / "out.txt").read_text()
    assert "SL101  size-branch" in text


def test_select_ignore_prefixes(tmp_path):
    write_tree(tmp_path, {"m.py": HAZARD})
    assert run(["check", ".", "--ignore", "SL1", "--no-cache"], tmp_path).returncode == 0
    assert run(["check", ".", "--select", "SL2", "--no-cache"], tmp_path).returncode == 0
    assert run(["check", ".", "--select", "ALL", "--ignore", "SL10", "--no-cache"],
               tmp_path).returncode == 0
    # the most specific selector wins, as in ruff
    assert run(["check", ".", "--select", "ALL", "--ignore", "SL10", "--extend-select", "SL101",
                "--no-cache"], tmp_path).returncode == 1
    assert run(["check", ".", "--select", "SL1", "--no-cache"], tmp_path).returncode == 1


def test_unknown_code_and_config_typos_exit_2(tmp_path):
    write_tree(tmp_path, {"m.py": HAZARD})
    res = run(["check", ".", "--select", "SL109x"], tmp_path)
    assert res.returncode == 2 and "unknown rule code" in res.stderr
    (tmp_path / "shapelint.toml").write_text('selct = ["SL1"]\n')
    res = run(["check", "."], tmp_path)
    assert res.returncode == 2
    assert "shapelint.toml" in res.stderr and "`selct`" in res.stderr and "`select`" in res.stderr
    (tmp_path / "shapelint.toml").write_text('ignore = ["SL9999"]\n')
    res = run(["check", "."], tmp_path)
    assert res.returncode == 2 and "SL9999" in res.stderr
    (tmp_path / "shapelint.toml").write_text('ignore = "SL101"\n')
    assert run(["check", "."], tmp_path).returncode == 2
    (tmp_path / "shapelint.toml").write_text('module-mode = "evl"\n')
    res = run(["check", "."], tmp_path)
    assert res.returncode == 2 and "`module-mode`" in res.stderr and "`eval`" in res.stderr
    (tmp_path / "shapelint.toml").write_text("")  # an empty config is fine
    assert run(["check", ".", "--no-cache"], tmp_path).returncode == 1


def test_pyproject_config_and_nearest_wins(tmp_path):
    write_tree(tmp_path, {"sub/m.py": HAZARD})
    (tmp_path / "pyproject.toml").write_text('[tool.shapelint]\nignore = ["SL101"]\n')
    assert run(["check", "sub", "--no-cache"], tmp_path).returncode == 0
    (tmp_path / "sub" / "shapelint.toml").write_text('ignore = []\n')
    assert run(["check", "sub", "--no-cache"], tmp_path).returncode == 1
    (tmp_path / "pyproject.toml").write_text('[tool.shapelint]\nunknown-key = 1\n')
    res = run(["check", ".", "--no-cache"], tmp_path)
    assert res.returncode == 2 and "[tool.shapelint]" in res.stderr


def test_suppressions(tmp_path):
    src = HAZARD.replace("if x.shape[0] > 8:", "if x.shape[0] > 8:  # noqa: SL101")
    write_tree(tmp_path, {"a.py": src,
                          "b.py": HAZARD.replace("if x.shape[0] > 8:", "if x.shape[0] > 8:  # shapelint: ignore[SL101]"),
                          "c.py": "# shapelint: noqa\n" + HAZARD,
                          "d.py": CLEAN.replace("* 2", "* 2  # noqa: SL101"),
                          "e.py": HAZARD.replace("if x.shape[0] > 8:", "if x.shape[0] > 8:  # NOQA"),
                          "f.py": HAZARD.replace("if x.shape[0] > 8:", "if x.shape[0] > 8:  # noqa: E501"),
                          "g.py": HAZARD.replace("if x.shape[0] > 8:", "if x.shape[0] > 8:  # noqa:E501,sl1")})
    res = run(["check", ".", "--format", "json", "--no-cache"], tmp_path)
    doc = json.loads(res.stdout)
    got = [(f["path"], f["rule"]) for f in doc["findings"]]
    assert got == [("d.py", "SL001"), ("f.py", "SL101")], got
    assert "SL101" in doc["findings"][0]["message"]


def test_the_suppression_prefilter_keeps_every_suppression(monkeypatch):
    # files whose comments cannot matter skip the tokenizer; on every comment here the result
    # must equal reading the file's comments without that shortcut
    import re

    from shapelint.static import suppress

    comments = ["# noqa", "# NOQA", "# noqa : E501", "# noqa:", "# noqa:  ", "# noqa: E501",
                "# noqa: SL101", "# noqa:sl1", "# noqa: E501, SL", "# noqa: S", "# noqa: S101",
                "# noqa: E501 SL105", "#noqa:SL1,E1", "# shapelint: ignore[SL101]",
                "# shapelint: ignore", "# shapelint: noqa", "# shapelint: noqa: SL1",
                "# noqa: E501  # shapelint: ignore", "# a comment", "'# noqa' in a string"]

    def read(text):
        s = suppress.Suppressions(text)
        return ([(x.line, x.column, x.codes) for xs in s.by_line.values() for x in xs],
                [(x.line, x.codes) for x in s.file_level])

    for comment in comments:
        text = f"x = 1  {comment}\n" if not comment.startswith("'") else f"y = {comment}\n"
        filtered = read(text)
        monkeypatch.setattr(suppress, "MAY_MATTER", re.compile(""))
        everything = read(text)
        monkeypatch.undo()
        relevant = [r for r in everything[0] if r[2] is None or
                    any("SL101".startswith(c) or "SL205".startswith(c) for c in r[2])]
        assert set(relevant) <= set(filtered[0]) and everything[1] == filtered[1], comment


def test_per_file_ignores(tmp_path):
    write_tree(tmp_path, {"tests/m.py": HAZARD, "src/m.py": HAZARD})
    (tmp_path / "shapelint.toml").write_text('per-file-ignores = { "tests/*" = ["SL1"] }\n')
    doc = json.loads(run(["check", ".", "--format", "json", "--no-cache"], tmp_path).stdout)
    assert [f["path"] for f in doc["findings"]] == ["src/m.py"]
    res = run(["check", ".", "--per-file-ignores", "src/*:SL101", "--no-cache"], tmp_path)
    assert res.returncode == 0


def test_rule_docs(tmp_path):
    res = run(["rule", "SL101"], tmp_path)
    assert res.returncode == 0
    for section in ("What it does", "Why is this bad?", "Example", "Use instead"):
        assert section in res.stdout
    listing = run(["rule", "--all"], tmp_path).stdout
    assert "SL101" in listing and "SL401" in listing and "off by default" in listing
    bad = run(["rule", "SL10"], tmp_path)
    assert bad.returncode == 2 and "did you mean" in bad.stderr


def test_bad_files_are_reported_not_fatal(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    (tmp_path / "nul.py").write_bytes(b"x = 1\n\x00\n")
    (tmp_path / "latin.py").write_bytes(b"s = '\xff\xfe'\n")
    os.symlink(str(tmp_path), str(tmp_path / "loop"))
    deep = "x = " + "-" * 300000 + "1\n"  # ast gives up (MemoryError on 3.11)
    (tmp_path / "deep.py").write_text(deep)
    (tmp_path / "deep_model.py").write_text("def forward(x):\n    return x\n" + deep)
    res = run(["check", ".", "--format", "json", "--no-cache"], tmp_path, timeout=60)
    doc = json.loads(res.stdout)
    assert res.returncode == 1
    msgs = {e["path"]: e["message"] for e in doc["errors"]}
    assert "NUL" in msgs["nul.py"] and "decode" in msgs["latin.py"]
    # the same fault reads the same whether the file was summarized or only syntax-checked
    assert msgs["deep.py"] == msgs["deep_model.py"] == "file is too deeply nested to parse"
    assert [f["path"] for f in doc["findings"]] == ["ok.py"]


def test_cache_round_trip(tmp_path):
    write_tree(tmp_path, {"m.py": HAZARD})
    first = run(["check", ".", "--format", "json"], tmp_path).stdout
    assert any(p.name.startswith("check-") for p in (tmp_path / ".shapelint_cache").iterdir())
    second = run(["check", ".", "--format", "json"], tmp_path).stdout
    assert first == second
    (tmp_path / "m.py").write_text(CLEAN)
    assert run(["check", ".", "--format", "json"], tmp_path).returncode == 0


USER_RULE = '''
from shapelint.api import Call, Rule


class NoCudaSync(Rule):
    """
    ## What it does
    Finds torch.cuda.synchronize() in a compiled region.
    ## Why is this bad?
    It graph-breaks.
    ## Example
    torch.cuda.synchronize()
    ## Use instead
    Nothing.
    """
    code = "SL950"
    name = "cuda-synchronize"
    summary = "torch.cuda.synchronize() inside a compiled region"
    evidence = ("graph-break",)
    VALID = []
    INVALID = []

    def on_call(self, site: Call) -> None:
        if site.callee == "torch.cuda.synchronize":
            self.report(site, "synchronizes inside the compiled region")
'''


def test_user_rules_from_rule_paths(tmp_path):
    write_tree(tmp_path, {"my_rules/sync.py": USER_RULE,
                          "m.py": "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
                                  "        torch.cuda.synchronize()\n        return x\n"})
    # the built-in rules that also see the call (SL403) are not what this test is about
    (tmp_path / "shapelint.toml").write_text('rule-paths = ["my_rules"]\nignore = ["SL1", "SL4"]\n')
    res = run(["check", "m.py", "--format", "json", "--no-cache"], tmp_path)
    doc = json.loads(res.stdout)
    assert [(f["rule"], f["line"]) for f in doc["findings"]] == [("SL950", 4)]
    assert run(["check", "m.py", "--ignore", "SL950", "--no-cache"], tmp_path).returncode == 0
    (tmp_path / "shapelint.toml").write_text('rule-paths = ["nowhere"]\n')
    bad = run(["check", "m.py", "--no-cache"], tmp_path)
    assert bad.returncode == 2 and "nowhere" in bad.stderr


def test_editing_a_rule_invalidates_the_cache(tmp_path):
    """The cache key holds the code that makes the findings: a user's rule edited in place
    (or shapelint's own, in a checkout) must not replay what the old code found."""
    write_tree(tmp_path, {"my_rules/sync.py": USER_RULE,
                          "m.py": "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
                                  "        torch.cuda.synchronize()\n        return x\n"})
    (tmp_path / "shapelint.toml").write_text('rule-paths = ["my_rules"]\nignore = ["SL1", "SL4"]\n')
    first = run(["check", "m.py"], tmp_path)
    assert "synchronizes inside the compiled region" in first.stdout, first.stdout + first.stderr
    rule = tmp_path / "my_rules" / "sync.py"
    rule.write_text(USER_RULE.replace("synchronizes inside", "syncs inside"))
    second = run(["check", "m.py"], tmp_path)
    assert "syncs inside the compiled region" in second.stdout, second.stdout + second.stderr


def test_huge_and_unreadable_files(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    with open(tmp_path / "huge.py", "w") as fh:  # 50 MB of valid Python
        line = "x = 1  # " + "pad " * 20 + "\n"
        fh.write(line * (50 * 1024 * 1024 // len(line)))
    locked = tmp_path / "locked.py"
    locked.write_text("x = 1\n")
    locked.chmod(0)
    res = run(["check", ".", "--format", "json", "--no-cache"], tmp_path, timeout=120)
    doc = json.loads(res.stdout)
    msgs = {e["path"]: e["message"] for e in doc["errors"]}
    assert "too large" in msgs["huge.py"]
    if os.geteuid() != 0:  # root reads anything
        assert "cannot read" in msgs["locked.py"]
    assert [f["path"] for f in doc["findings"]] == ["ok.py"] and res.returncode == 1


def test_preview_and_default_off_rules_are_selected_in_one_place():
    from shapelint.config import enabled_codes

    class R:
        default_enabled, preview = True, False

    class Preview(R):
        preview = True

    class Off(R):
        default_enabled = False

    rules = {"SL101": R, "SL102": R, "SL105": Off, "SL150": Preview, "SL999": Preview}
    assert enabled_codes(rules) == ["SL101", "SL102"]
    assert enabled_codes(rules, preview=True) == ["SL101", "SL102", "SL150", "SL999"]
    # selecting a preview rule's exact code turns it on; ALL or a prefix does not, without preview
    assert enabled_codes(rules, extend_select=["SL150"]) == ["SL101", "SL102", "SL150"]
    assert enabled_codes(rules, select=["SL150"]) == ["SL150"]
    assert enabled_codes(rules, select=["ALL"]) == ["SL101", "SL102", "SL105"]
    assert enabled_codes(rules, select=["SL1"]) == ["SL101", "SL102", "SL105"]
    assert enabled_codes(rules, select=["ALL"], preview=True) == list(rules)
    assert enabled_codes(rules, preview=True, ignore=["SL150"]) == ["SL101", "SL102", "SL999"]
    assert enabled_codes(rules, extend_select=["SL150"], ignore=["SL1"]) == ["SL150"]


PREVIEW_RULE = USER_RULE.replace('code = "SL950"', 'code = "CU002"\n    preview = True\n'
                                 '    measured_precision = 0.62')


def test_preview_rules_from_the_command_line_and_the_config(tmp_path):
    write_tree(tmp_path, {"my_rules/sync.py": PREVIEW_RULE,
                          "m.py": "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
                                  "        torch.cuda.synchronize()\n        return x\n"})
    # only the user's preview rule CU002 is under test: every built-in (SL...) one is ignored
    config = 'rule-paths = ["my_rules"]\nexclude = ["my_rules"]\nignore = ["SL"]\n'
    (tmp_path / "shapelint.toml").write_text(config)
    assert run(["check", ".", "--no-cache"], tmp_path, preview=False).returncode == 0  # off by default
    assert run(["check", ".", "--select", "ALL", "--no-cache"], tmp_path, preview=False).returncode == 0
    on = run(["check", ".", "--preview", "--no-cache"], tmp_path)
    assert on.returncode == 1 and "m.py:4:9: CU002" in on.stdout
    assert run(["check", ".", "--extend-select", "CU002", "--no-cache"], tmp_path,
               preview=False).returncode == 1
    (tmp_path / "shapelint.toml").write_text(config + "preview = true\n")
    assert run(["check", ".", "--no-cache"], tmp_path, preview=False).returncode == 1
    listing = run(["rule", "--all"], tmp_path).stdout
    row = next(ln for ln in listing.splitlines() if ln.startswith("CU002"))
    assert "preview" in row and "0.62" in row
    assert re.search(r"SL105 .* off by default", listing) and re.search(r"SL900 .* runtime-only", listing)
    assert re.search(r"SL204 .* stable", listing) and re.search(r"SL101 .* preview", listing)
    one = run(["rule", "CU002"], tmp_path).stdout
    assert "Status: preview" in one and "--preview" in one and "0.62" in one
    described = json.loads(run(["rule", "--format", "json", "--all"], tmp_path).stdout)
    assert {d["code"]: d["status"] for d in described}["CU002"] == "preview"
    sarif = json.loads(run(["check", ".", "--format", "sarif", "--no-cache"], tmp_path,
                           preview=False).stdout)
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["CU002"]
    enabled = {r["id"]: r["defaultConfiguration"]["enabled"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert enabled["CU002"] is False and enabled["SL105"] is False and enabled["SL101"] is False
    assert enabled["SL204"] is True


def test_rule_examples_as_a_pytest_helper(tmp_path):
    rule = USER_RULE.replace("    VALID = []", '    VALID = ["import torch\\nx = 1\\n"]').replace(
        "INVALID = []", 'INVALID = ["import torch\\nclass M(torch.nn.Module):\\n    def forward(self, x):\\n'
                        '        torch.cuda.synchronize()  # error: SL950\\n        return x\\n",'
                        ' "import torch\\nclass M(torch.nn.Module):\\n    def forward(self, x):\\n'
                        '        torch.cuda.synchronize()\\n        return x\\n"]')
    write_tree(tmp_path, {"my_rules/sync.py": rule,
                          "tests/test_my_rules.py": "from shapelint.testing import rule_example_tests\n"
                                                    "test_my_rules = rule_example_tests('../my_rules')\n"})
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                         cwd=str(tmp_path), capture_output=True, text=True)
    assert "2 passed" in res.stdout and "1 failed" in res.stdout, res.stdout
    assert "SL950-INVALID-1: an INVALID example must mark each line SL950 reports" in res.stdout
    cli = run(["test-rules", "my_rules"], tmp_path)
    assert cli.returncode == 1 and "FAIL SL950-INVALID-1" in cli.stdout and "ok   SL950-VALID-0" in cli.stdout
    assert "2 of 3 examples of 1 rule passed; 1 failed" in cli.stdout
    none = run(["test-rules", "tests"], tmp_path)
    assert none.returncode == 2 and "no rules" in none.stderr


def test_test_rules_runs_the_built_in_examples(tmp_path):
    res = run(["test-rules", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rules")],
              tmp_path, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "FAIL" not in res.stdout and " passed" in res.stdout.splitlines()[-1]


# ---------------------------------------------------------------------------------------------
# ruff's conventions (issue 20 item 8)
# ---------------------------------------------------------------------------------------------

TWO_HAZARDS = """
import torch
class M(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 8:
            return x * 2
        if x.shape[0] > 4:
            return x * 3
        return x
"""


def test_summary_counts_the_files_with_findings(tmp_path):
    write_tree(tmp_path, {"a.py": TWO_HAZARDS, "b.py": HAZARD, "c.py": CLEAN})
    res = run(["check", ".", "--no-cache"], tmp_path)
    assert res.stdout.rstrip().splitlines()[-1] == "Found 3 findings in 2 of 3 files.", res.stdout
    res = run(["check", "c.py", "--no-cache"], tmp_path)
    assert res.stdout.rstrip().splitlines()[-1] == "All checks passed (1 file).", res.stdout
    md = run(["check", ".", "--no-cache", "--format", "markdown"], tmp_path).stdout
    assert "**3** findings in 2 of 3 files" in md, md


def test_quiet_prints_only_the_findings(tmp_path):
    write_tree(tmp_path, {"a.py": HAZARD, "c.py": CLEAN})
    res = run(["check", ".", "--quiet", "--no-cache"], tmp_path)
    assert res.returncode == 1 and res.stderr == "", res.stderr
    assert "a.py:4:12: SL101" in res.stdout and "Found" not in res.stdout, res.stdout
    res = run(["check", "c.py", "-q", "--no-cache"], tmp_path)
    assert res.returncode == 0 and res.stdout == "" and res.stderr == "", res
    res = run(["check", ".", "-q", "--write-baseline", "b.json", "--no-cache"], tmp_path)
    assert res.returncode == 0 and res.stdout == "" and res.stderr == "", res
    # run: no progress on stderr, no summary; a target that passed is not mentioned
    from shapelint.finding import CheckResult, ShapeRow, TargetResult
    from shapelint.harness.command import Progress
    from shapelint.report import render

    ok = TargetResult(name="fine", torch_version="2.13", device="cpu", backend="eager",
                      dynamic="auto", compiles=1,
                      per_shape=[ShapeRow(batch=1, seq_len=None, new_compiles=1)])
    bad = TargetResult(name="bad", torch_version="2.13", device="cpu", backend="eager",
                       dynamic="auto", error="model `m.py:b`: the factory failed: boom",
                       problems=["model `m.py:b`: the factory failed: boom"])
    text = render("text", CheckResult(files_checked=1), rules={}, targets=[ok, bad], quiet=True)
    assert text == "target bad: FAILED: model `m.py:b`: the factory failed: boom\n", text
    assert render("text", CheckResult(), rules={}, targets=[ok], quiet=True) == ""
    import io
    import contextlib

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        from shapelint.harness.target import TargetSpec

        spec = TargetSpec(name="fine", model="m.py:b", inputs="m.py:i")
        p = Progress(1, quiet=True)
        p.start(spec)
        p.shape(spec, ok.per_shape[0])
        p.note("measuring")
        p.done(spec, ok)
    assert err.getvalue() == ""


def test_statistics_prints_only_the_table(tmp_path):
    write_tree(tmp_path, {"a.py": TWO_HAZARDS, "b.py": HAZARD})
    res = run(["check", ".", "--statistics", "--no-cache"], tmp_path)
    assert res.returncode == 1
    assert res.stdout.splitlines() == ["    3  SL101  size-branch"], res.stdout
    doc = json.loads(run(["check", ".", "--statistics", "--format", "json", "--no-cache"],
                         tmp_path).stdout)
    assert doc == [{"code": "SL101", "name": "size-branch", "count": 3}], doc
    run(["check", ".", "--format", "json", "-o", "r.json", "--no-cache"], tmp_path)
    res = run(["report", "r.json", "--statistics"], tmp_path)
    assert res.stdout.splitlines() == ["    3  SL101  size-branch"], res.stdout


def test_concise_format_is_one_line_per_finding(tmp_path):
    write_tree(tmp_path, {"a.py": HAZARD, "broken.py": "def f(:\n    pass\n"})
    res = run(["check", ".", "--format", "concise", "--no-cache"], tmp_path)
    assert res.returncode == 1
    lines = res.stdout.splitlines()
    assert re.fullmatch(r"a\.py:4:12: SL101 `x\.shape\[0\] > 8` depends on .*", lines[0]), lines
    assert lines[1].startswith("broken.py:1:") and ": error syntax error" in lines[1], lines
    assert lines[2:] == ["Found 1 finding in 1 of 2 files; 1 file error."], lines
    assert run(["check", ".", "--format", "concise", "-q", "--no-cache"],
               tmp_path).stdout.splitlines() == lines[:2]
    (tmp_path / "shapelint.toml").write_text('output-format = "concise"\n')
    assert run(["check", ".", "--no-cache"], tmp_path).stdout.splitlines() == lines


def test_stdin_is_checked_as_the_named_file(tmp_path):
    helper_call = ("import torch\nfrom utils import length\nclass M(torch.nn.Module):\n"
                   "    def forward(self, x):\n        if length(x) > 8:\n            return x * 2\n"
                   "        return x\n")
    write_tree(tmp_path, {"pkg/utils.py": "def length(x):\n    return x.shape[0]\n",
                          "pkg/model.py": CLEAN})  # on disk: clean; on stdin: the hazard
    res = run(["check", "-", "--stdin-filename", "pkg/model.py"], tmp_path, input=helper_call)
    assert res.returncode == 1, res.stderr
    assert res.stdout.startswith("pkg/model.py:5:12: SL101"), res.stdout  # the helper resolved
    assert "in 1 of 1 file" in res.stdout
    res = run(["check", "-", "--stdin-filename", "new/unsaved.py", "--format", "concise"],
               tmp_path, input=HAZARD.lstrip())
    assert res.stdout.startswith("new/unsaved.py:4:12: SL101"), (res.stdout, res.stderr)
    res = run(["check", "-"], tmp_path, input=HAZARD.lstrip())
    assert res.returncode == 1 and res.stdout.startswith("-:4:12: SL101"), (res.stdout, res.stderr)
    res = run(["check", "-", "--stdin-filename", "x.py"], tmp_path, input="def f(:\n")
    assert res.returncode == 1 and "x.py:1:" in res.stdout and "syntax error" in res.stdout
    assert not (tmp_path / "x.py").exists() and not (tmp_path / "new").exists()
    res = run(["check", "-", "pkg"], tmp_path, input=HAZARD)
    assert res.returncode == 2 and "standard input" in res.stderr, res.stderr


def test_cache_dir_flag(tmp_path):
    write_tree(tmp_path, {"m.py": HAZARD})
    res = run(["check", ".", "--cache-dir", "cache/here"], tmp_path)
    assert res.returncode == 1
    assert any(p.name.startswith("check-") for p in (tmp_path / "cache" / "here").iterdir())
    assert not (tmp_path / ".shapelint_cache").exists()


def test_show_settings(tmp_path):
    write_tree(tmp_path, {"m.py": HAZARD, "shapelint.toml": """
        ignore = ["SL2"]
        exclude = ["gen"]
        [[targets]]
        name = "dec"
        model = "m.py:build"
        inputs = "m.py:inputs"
        batch-sizes = [1, 2]
        """})
    res = run(["check", ".", "--show-settings", "--extend-select", "SL105"], tmp_path)
    assert res.returncode == 0 and "SL101" not in res.stdout.split("rules:")[0], res.stdout
    out = res.stdout
    assert "config file: shapelint.toml" in out, out
    rules = next(ln for ln in out.splitlines() if ln.startswith("rules:"))
    assert "SL101" in rules and "SL105" in rules and "SL201" not in rules, rules
    assert "gen" in next(ln for ln in out.splitlines() if ln.startswith("exclude:")), out
    assert "dec" in out and "m.py:build" in out, out
    res = run(["run", "--show-settings", "--batch-sizes", "4,8", "--dynamic", "true"], tmp_path)
    assert res.returncode == 0 and res.stderr == "", res.stderr  # nothing replayed
    target = next(ln for ln in res.stdout.splitlines() if "dec" in ln)
    assert "[4, 8]" in target and "dynamic true" in target, res.stdout
    (tmp_path / "shapelint.toml").unlink()
    res = run(["check", ".", "--show-settings"], tmp_path)
    assert res.returncode == 0 and "config file: none" in res.stdout, res.stdout


def test_every_flag_has_help_and_the_readme_names_it():
    import argparse

    from shapelint.cli import build_parser

    readme = open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "README.md"),
                  encoding="utf-8").read()
    usage = readme.split("## Usage", 1)[1].split("\n## Where people use it", 1)[0]
    subs = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    missing, undocumented = [], []
    for name, sub in subs.items():
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{name} {action.option_strings or action.dest}")
            longs = [o for o in action.option_strings if o.startswith("--")]
            if name in ("check", "run") and longs and not any(f"`{o}" in usage for o in longs):
                undocumented.append(f"{name} {longs[0]}")
    assert not missing, missing
    assert not undocumented, undocumented
    for command in ("check", "run"):
        res = run([command, "--help"], ".")
        assert res.returncode == 0 and "example" in res.stdout.lower(), res.stdout


def test_readme_says_how_ruff_keeps_shapelints_noqa():
    readme = open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "README.md"),
                  encoding="utf-8").read()
    assert "RUF100" in readme and 'lint.external = ["SL"]' in readme


def test_markdown_renders_in_a_step_summary(tmp_path):
    """GitHub renders $GITHUB_STEP_SUMMARY as CommonMark with tables and raw HTML: the heading,
    the tables and each <details> must come out as such (a table right after <summary> with
    no blank line stays text)."""
    markdown_it = __import__("pytest").importorskip("markdown_it")
    files = {f"m{i:02}.py": HAZARD for i in range(25)}
    write_tree(tmp_path, files)
    run(["check", ".", "--format", "json", "-o", "r.json", "--no-cache"], tmp_path)
    doc = json.loads((tmp_path / "r.json").read_text())
    doc["targets"] = [{"name": "dec", "compiles": 7, "max_compiles": 4, "torch_version": "2.13",
                       "per_shape": [{"batch": b, "new_compiles": 1} for b in (1, 2, 3)],
                       "problems": ["7 compiles exceed max-compiles 4"]},
                      {"name": "ok", "compiles": 1, "torch_version": "2.13",
                       "per_shape": [{"batch": 1, "new_compiles": 1}]}]
    (tmp_path / "r.json").write_text(json.dumps(doc))
    text = run(["report", "r.json", "--format", "markdown"], tmp_path).stdout
    md = markdown_it.MarkdownIt("commonmark").enable("table")
    tokens = md.parse(text)
    html = md.render(text)
    assert tokens[0].type == "heading_open", text[:200]
    assert html.count("<table>") == 3, html  # targets, findings, the folded findings
    assert html.count("<details>") == html.count("</details>") >= 3, html
    assert "7 compiles exceed max-compiles 4" in html, html  # why the target failed
    assert "<strong>25</strong> findings in 25 of 25 files" in html
    for block in html.split("<details>")[1:]:  # each fold opens with its summary
        assert block.lstrip().startswith("<summary>"), block[:200]
