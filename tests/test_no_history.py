"""No history in the product: its comments, docstrings and strings say what the code does and why, never
when it changed, where a change came from or how fast this project measured it. The history lives in git,
the issues, docs/measured.md and bench/runs/.

Scanned: the pack's ``__init__.py``, ``nodes/``, ``patches/`` (every module below it) and ``web/js/``.
In Python the comments, docstrings and string literals are read; in JavaScript the comments.

History, anywhere in them:

- a pull request or issue number: "#1234", "PR 12", "issue 42", a ``/pull/``, ``/issues/`` or ``/commit/``
  address (an upstream bug a workaround is for included: say what the workaround does instead);
- a date: "2026-12-07", "2026-12", a month with a year ("February 2026");
- a commit: 7 to 40 lowercase hex digits holding both a letter and a digit, as a word of its own ("61518f8");
  a hex constant in code is no comment, and "0x..." is no word of its own;
- this project's timings: "12 ms", "3 µs", "2x faster", "1.31×", "15% slower".

A release of ComfyUI (or of a library the pack calls) may be named in a comment or docstring only where code
branches on what that release has: within ``BRANCH_WINDOW`` lines of the comment block or docstring, a line
of code reads a version or tests for what a release added (``hasattr``, ``getattr``, a signature's
``parameters``, an ImportError or AttributeError handler, a ``"name" in obj`` or ``typeof`` test in
JavaScript). A release is named by a name followed by a version ("ComfyUI 0.33", "front end 1.49",
"sageattention 1.0.6", "torch 2.11"; "SageAttention 2", a generation, is no release), or, in a block that
names ComfyUI, by a bare 0.x release ("0.3.75", "0.33's", "0.12 on", "up to 0.12"). Strings are not held to
this rule: a message may tell the user which release to install.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import NamedTuple

import pytest

from sas_harness import ROOT

PRODUCT = [ROOT / "__init__.py", *sorted((ROOT / "nodes").rglob("*.py")), *sorted((ROOT / "patches").rglob("*.py")),
           *sorted((ROOT / "web" / "js").rglob("*.js"))]
BRANCH_WINDOW = 3

_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
          r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
HISTORY = {
    "a pull request or issue": re.compile(r"(?<![\w&])#\d+\b|\b(?:PR|pull request|issue|bug)\s*#?\d+\b"
                                          r"|/(?:pull|issues|commit)/\w+", re.I),
    "a date": re.compile(rf"\b20\d\d-[01]\d\b|\b{_MONTH}\.?\s+(?:\d{{1,2}},?\s+)?20\d\d\b"),
    "a commit": re.compile(r"(?<![\w#])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?!\w)"),
    "a timing": re.compile(r"\d\s*(?:ms|µs|us|ns)\b|\d\s*[x×]\s*(?:faster|slower)\b|\d\.\d+\s*×"
                           r"|\d\s*%\s*(?:faster|slower)\b", re.I),
}
RELEASE = re.compile(r"(?i:\bComfyUI|\bfront ?end|\bSageAttention|\bcomfy-kitchen|\bPyTorch|\btorch|\bTriton|\bcuDNN)"
                     r"\s*(?:>=|≥|<=|<|>)?\s*v?\d+\.\d+")
BARE_RELEASE = re.compile(r"\b0\.\d+\.\d+\b|\b0\.\d+'s\b|\b0\.\d+\s+(?:on|read|and newer|or newer|and older|or older)\b"
                          r"|\b(?:up to|from|since|before|after|until)\s+0\.\d+\b")
NAMES_COMFYUI = re.compile(r"\bComfyUI\b|\bfront ?end\b", re.I)
BRANCH = re.compile(r"\bhasattr\(|\bgetattr\(|\bsignature\(|\.parameters\b|\bImportError\b|\bModuleNotFoundError\b"
                    r"|\bAttributeError\b|\bfind_spec\(|\bversion\(|\bcomfyui_version\b|__version__|\btypeof\b"
                    r"|[\"'][\w.]+[\"']\s+in\s+\w")


class Text(NamedTuple):
    """A comment block, a docstring or a string literal: its lines from ``first`` on."""
    kind: str  # "comment", "docstring" or "string"
    first: int
    lines: list[str]

    @property
    def last(self) -> int:
        return self.first + len(self.lines) - 1


def _python_texts(source: str) -> tuple[list[Text], set[int]]:
    """The comment blocks (consecutive commented lines), docstrings and other string literals of a Python
    module, and the lines that hold code."""
    comments: dict[int, str] = {}
    code: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string
        elif token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                tokenize.ENDMARKER, tokenize.STRING):
            code.update(range(token.start[0], token.end[0] + 1))
    texts = _blocks(comments)
    nodes = list(ast.walk(ast.parse(source)))
    docstrings = [node.value for node in nodes if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                  and isinstance(node.value.value, str)]
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            kind = "docstring" if any(node is docstring for docstring in docstrings) else "string"
            texts.append(Text(kind, node.lineno, node.value.splitlines() or [""]))
    return texts, code


def _javascript_texts(source: str) -> tuple[list[Text], set[int]]:
    """The comment blocks of a JavaScript module, and the lines that hold code. Strings are stepped over, so
    a "//" inside one is no comment."""
    comments: dict[int, str] = {}
    code: set[int] = set()
    for match in re.finditer(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`|\S",
                             source, re.S):
        line = source.count("\n", 0, match.start()) + 1
        if match.group().startswith(("//", "/*")):
            for offset, text in enumerate(match.group().splitlines()):
                comments[line + offset] = comments.get(line + offset, "") + text
        else:
            code.update(range(line, line + match.group().count("\n") + 1))
    return _blocks(comments), code


def _blocks(comments: dict[int, str]) -> list[Text]:
    """Comments on consecutive lines, one block each."""
    blocks: list[Text] = []
    for line in sorted(comments):
        if blocks and blocks[-1].last == line - 1:
            blocks[-1].lines.append(comments[line])
        else:
            blocks.append(Text("comment", line, [comments[line]]))
    return blocks


def findings(source: str, javascript: bool = False) -> list[tuple[int, str, str]]:
    """(line, what, the line's text) for each piece of history in ``source``, a Python or JavaScript module."""
    texts, code = _javascript_texts(source) if javascript else _python_texts(source)
    source_lines = source.splitlines()
    found = []
    for text in texts:
        branch_near = any(BRANCH.search(source_lines[n - 1]) for n in range(max(1, text.first - BRANCH_WINDOW),
                                                                              min(len(source_lines), text.last
                                                                                  + BRANCH_WINDOW) + 1)
                          if n in code)
        names_comfyui = any(NAMES_COMFYUI.search(line) for line in text.lines)
        for offset, line in enumerate(text.lines):
            whats = [what for what, pattern in HISTORY.items() if pattern.search(line)]
            if text.kind != "string" and not branch_near and (
                    RELEASE.search(line) or (names_comfyui and BARE_RELEASE.search(line))):
                whats.append("a release with no branch of code for it near")
            found += [(text.first + offset, what, line.strip()) for what in whats]
    return sorted(set(found))


@pytest.mark.parametrize("path", PRODUCT, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_product_names_no_history(path):
    found = [f"{path.relative_to(ROOT)}:{line}: {what}: {text}"
             for line, what, text in findings(path.read_text(), javascript=path.suffix == ".js")]
    assert found == [], "\n".join(found)


# -- the scan finds what it looks for, and leaves what it should --------------------------------------------------

HISTORIED = '''"""The mask path (ComfyUI PR 12432, February 2026), 1.31× faster on the CPU."""
import torch

# Fixes upstream #9773: see commit 61518f8 (2026-12-07); it costs 12 ms a call.
X = 1


def f():
    """Up to ComfyUI 0.12 the text comes last."""
    return torch.zeros(1)


MESSAGE = "fixed in issue 42"
'''

CLEAN = '''"""The mask path: the padded keys are sliced off, 16x16 patches, SageAttention 2 at head size 128."""
import inspect

MASK = 0x7fffffffe  # a hex constant in code, and a word "deadbeef" with no digit


def text_position(block):
    """Last where ComfyUI 0.3.75's block takes flipped_img_txt, first from 0.18 on."""
    if "flipped_img_txt" in inspect.signature(block).parameters:
        return "last"
    return "first"


NEEDS = "needs ComfyUI 0.16.0 or newer"  # a message may name the release to install
'''


def test_the_scan_finds_each_kind_of_history():
    found = findings(HISTORIED)
    assert {what for _, what, _ in found} == {*HISTORY, "a release with no branch of code for it near"}
    assert {line for line, _, _ in found} == {1, 4, 9, 13}


def test_the_scan_leaves_code_words_and_a_release_beside_its_branch():
    assert findings(CLEAN) == []


def test_the_scan_reads_javascript_comments_and_not_its_strings():
    source = ('const URL = "https://example.com//#12"; // front end 1.49 folds them (#15263)\n'
              'function f(app) {\n  return app.x;\n}\n'
              '// front end 1.49 hands them over; 1.32 has only the getter\n'
              'const errors = "lastNodeErrors" in app ? app.lastNodeErrors : null;\n')
    assert findings(source, javascript=True) == [
        (1, "a pull request or issue", "// front end 1.49 folds them (#15263)"),
        (1, "a release with no branch of code for it near", "// front end 1.49 folds them (#15263)")]
