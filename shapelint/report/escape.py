"""Text quoted from analysed code (source lines, paths, messages that quote expressions) and
from targets (exception messages, torch's reasons) is hostile input for a terminal or a CI log:
an ESC byte starts a terminal escape sequence (colours, OSC 8 links, title changes), a newline
followed by ``::error file=...::`` is a GitHub workflow command, a raw control byte makes XML
ill-formed, a bidi override reorders what a reviewer reads.

Every reporter passes such text through :func:`clean`, which writes each of those characters as
a visible Python-style escape (``\\x1b``, ``\\n``, ``\\u202e``), and text meant for a log
through :func:`defuse_commands`. The JSON format needs neither: JSON escapes control characters
itself and keeps the data exact."""

from __future__ import annotations

import re

#: C0 controls but tab, DEL, C1 controls, and the Unicode format characters that reorder or
#: hide text or break lines (zero-width, bidi embeddings, overrides and isolates, line and
#: paragraph separators, the BOM, interlinear annotations)
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069"
                     "\ufeff\ufff9-\ufffb\ud800-\udfff]")
_UNSAFE_KEEP_NL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069"
                             "\ufeff\ufff9-\ufffb\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(m: "re.Match[str]") -> str:
    ch = m.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object, keep_newlines: bool = False) -> str:
    """``text`` with every control or invisible formatting character written as an escape;
    ``\\n`` is kept when ``keep_newlines`` (the caller escapes it its own way)."""
    s = str(text) if text is not None else ""
    rx = _UNSAFE_KEEP_NL if keep_newlines else _UNSAFE
    if keep_newlines:
        s = s.replace("\r\n", "\n")
    return rx.sub(_escape, s)


#: a workflow command: ``::name ...::`` at the start of a line (GitHub trims leading
#: whitespace first), or the older ``##[name ...]`` anywhere in a line
_COMMAND_START = re.compile(r"^(\s*):(?=:)", re.M)
_OLD_COMMAND = re.compile(r"##\[")


def defuse_commands(text: str) -> str:
    """Lines that a CI runner would read as workflow commands, made inert: a line starting
    with ``::`` gets its first colon escaped (``\\x3a:``), and ``##[`` becomes ``##\\[``."""
    return _OLD_COMMAND.sub("##\\\\[", _COMMAND_START.sub(r"\1\\x3a", text))


def defuse_json(text: str) -> str:
    """JSON text with ``##[`` written ``##\\u005b`` (the same data once parsed): JSON escapes
    control characters itself, so no line of it can start with ``::``, but the older
    ``##[command]`` form is read anywhere in a line."""
    return text.replace("##[", "##\\u005b")
