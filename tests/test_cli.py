"""The command line as users run it: exit codes, formats, config, suppressions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys


from conftest import write_tree

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


def run(args, cwd, **kw):
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
    assert run(["bad"], tmp_path).returncode == 1
    assert run(["bad", "--exit-zero"], tmp_path).returncode == 0


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
    assert run(["check", ".", "--no-cache"], tmp_path).returncode == 0  # off by default
    assert run(["check", ".", "--select", "ALL", "--no-cache"], tmp_path).returncode == 0
    on = run(["check", ".", "--preview", "--no-cache"], tmp_path)
    assert on.returncode == 1 and "m.py:4:9: CU002" in on.stdout
    assert run(["check", ".", "--extend-select", "CU002", "--no-cache"], tmp_path).returncode == 1
    (tmp_path / "shapelint.toml").write_text(config + "preview = true\n")
    assert run(["check", ".", "--no-cache"], tmp_path).returncode == 1
    listing = run(["rule", "--all"], tmp_path).stdout
    row = next(ln for ln in listing.splitlines() if ln.startswith("CU002"))
    assert "preview" in row and "0.62" in row
    assert re.search(r"SL105 .* off by default", listing) and re.search(r"SL900 .* runtime-only", listing)
    assert re.search(r"SL101 .* stable", listing)
    one = run(["rule", "CU002"], tmp_path).stdout
    assert "Status: preview" in one and "--preview" in one and "0.62" in one
    described = json.loads(run(["rule", "--format", "json", "--all"], tmp_path).stdout)
    assert {d["code"]: d["status"] for d in described}["CU002"] == "preview"
    sarif = json.loads(run(["check", ".", "--format", "sarif", "--no-cache"], tmp_path).stdout)
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["CU002"]
    enabled = {r["id"]: r["defaultConfiguration"]["enabled"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert enabled["CU002"] is False and enabled["SL105"] is False and enabled["SL101"] is True


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
