"""Measured figures stay out of the template's comments and the tutorial.

A comment keeps the rule and its reason (what the code does and why); the measurements behind it
(GPU, shape, dtype, before -> after) live on one page, docs/performance.md. This test scans the
comments and docstrings of the template's source files, of the golden render's, and the prose of
docs/tutorial.md for the patterns a measurement is quoted in, and names each hit as file:line.
It renders nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "{{cookiecutter.project_slug}}"
GOLDEN = ROOT / "tests" / "golden"
TUTORIAL = ROOT / "docs" / "tutorial.md"
C_SUFFIXES = (".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp")
PY_SUFFIXES = (".py",)

# The forms a measurement takes in prose. A threshold stated as "at least 90 %" is a rule, not a
# measurement, and stays allowed.
FIGURE_PATTERNS = {
    "before -> after": re.compile(r"\d(?:\.\d+)?\s*%?\s*->\s*\d"),
    "percentage": re.compile(r"(?<!least )(?<!>= )(?<![\w.])\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?\s?%(?![\w{(])"),
    "bandwidth": re.compile(r"\d(?:\.\d+)?\s*[GT]B/s"),
    "time": re.compile(r"\d(?:\.\d+)?\s*(?:us|µs|ms|ns)\b"),
    "points of copy": re.compile(r"\d(?:\.\d+)?\s+points?\b(?!\))"),  # "(0.1 point)": a resolution
    "measured figure": re.compile(r"\bmeasured\s+(?:at\s+)?\d", re.IGNORECASE),
    "figure pair or range": re.compile(r"\b\d+\.\d+\s*(?:-|/)\s*\d+\.\d+\b"),
    "shape and figure": re.compile(r"\b\d+x\d+:?\s+\d+\.\d+\b"),
    "GPU of a measurement": re.compile(r"(?:\bon (?:an?|the|one) |\()[HAB][12]00\b|\b[HAB][12]00(?: SXM)?:"),
}


def figures_in(line: str) -> list[str]:
    """The names of the figure patterns this piece of prose matches."""
    return [name for name, pattern in FIGURE_PATTERNS.items() if pattern.search(line)]


def c_comments(text: str) -> list[tuple[int, str]]:
    """(line number, comment text) of each // or /* */ comment line of C++ or CUDA source."""
    out = []
    in_block = False
    for number, line in enumerate(text.splitlines(), 1):
        if in_block:
            out.append((number, line))
            in_block = "*/" not in line
            continue
        # A // inside a string literal is rare in this template; asm strings hold none.
        code, sep, comment = line.partition("//")
        if sep:
            out.append((number, comment))
        elif "/*" in line:
            out.append((number, line[line.index("/*") :]))
            in_block = "*/" not in line[line.index("/*") :]
    return out


def py_comments(text: str) -> list[tuple[int, str]]:
    """(line number, text) of each # comment and each docstring line of Python source (a line
    inside a triple-quoted string counts as prose)."""
    out = []
    in_string = None
    for number, line in enumerate(text.splitlines(), 1):
        if in_string:
            out.append((number, line))
            if in_string in line:
                in_string = None
            continue
        stripped = line.lstrip()
        for quote in ('"""', "'''"):
            if stripped.startswith((quote, "r" + quote, "f" + quote)):
                out.append((number, line))
                rest = stripped[stripped.index(quote) + 3 :]
                if quote not in rest:
                    in_string = quote
                break
        else:
            if "#" in line and not stripped.startswith(("'", '"')):
                out.append((number, line[line.index("#") :]))
    return out


def md_prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each line of Markdown outside fenced code blocks."""
    out = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def scan(name: str, text: str) -> list[str]:
    """file:line: pattern names and the line, for each line of prose that quotes a figure."""
    if name.endswith(C_SUFFIXES):
        lines = c_comments(text)
    elif name.endswith(PY_SUFFIXES):
        lines = py_comments(text)
    elif name.endswith(".md"):
        lines = md_prose(text)
    else:
        return []
    hits = []
    for number, line in lines:
        found = figures_in(line)
        if found:
            hits.append(f"{name}:{number}: {', '.join(found)}: {line.strip()}")
    return hits


def source_files(root: Path) -> list[Path]:
    """The C++, CUDA and Python files under root (a template with Jinja names, or a render)."""
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.name.removesuffix("{% endif %}").endswith(C_SUFFIXES + PY_SUFFIXES)
    )


def scan_file(path: Path) -> list[str]:
    return scan(str(path.relative_to(ROOT)).removesuffix("{% endif %}"), path.read_text(encoding="utf-8"))


def test_scanner_catches_quoted_figures():
    """Lines as the template's comments and the tutorial used to quote measurements are caught;
    the same rules stated without figures are not."""
    caught = {
        "a.cu": "    // that lifted those rows 1.3-3.6 points of copy bandwidth (% of copy: float32 8192x8192 94.7 ->",
        "b.cu": "// - H100 (25 GB/s an SM): blocks of 512 threads taking one pack each (% of copy forward / backward",
        "c.h": "// them, not by memory (H200, % of copy forward / backward: 89-90 / 88-91 -> 96 / 102).",
        "d.cpp": "// of the 3.4 a call costs without this) even where it records nothing. (1.1 us",
        "e.py": "# through inspect.signature, about 12 us of Python a call (separate setup_context is what",
        "f.py": '"""Times it (H100: one capture of a bfloat16 forward read 84 % of copy bandwidth)."""',
        "g.md": "8192x8192: 90 -> 98 %, 4096x16384: 79 -> 97 %; float32 4096x16384: 95 -> 97 %); rows of up to 256",
        "h.md": "forward measured 100.2 % on one H100 and 98.6 on another, with `torch.compile`'s at 100.3-100.9 on",
        "j.cu": "//   102.3 and 96.1 / 101.4, at 1024 96.7 / 102.5 and 94.8 / 101.1; 2 packs lost 0.5 / 1.0). float64",
        "k.h": "//   16384x4096 101.3 -> 102.1-102.5, 8192x8192 101.2 -> 102.0; bfloat16 16384x4096 99.6 -> 100.3).",
        "l.md": "| elementwise (scaled GELU) | 99.0-99.2 / 102.5-102.9 | 96.6-97.1 / 101.4-102.0 |",
        "i.cu": "/* moved from 85.6-88.0 to 90.3 % of copy bandwidth at 4096x16384 on an H200. */",
    }
    for name, line in caught.items():
        assert scan(name, line), f"{name}: not caught: {line}"
    clean = {
        "a.cu": "    // kernels mark a tensor read again: that made those rows faster. x % kVec == 0",
        "b.cu": '    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));',
        "c.py": "# Two closing lines count the op's figures at least 90 % of copy bandwidth.",
        "d.py": '    print(f"{op}: >= {TARGET_PCT:.0f} % of copy bandwidth")',
        "e.py": "# Ampere (8.0: A100; 8.6: RTX 30), Hopper (9.0: H100, H200), Blackwell (10.0: B200)",
        "g.cu": "// compared as printed (0.1 point).",
        "h.h": "// differ from the exact value by less than 1.2e-38; TORCH_CUDA_ARCH_LIST 8.0;9.0+PTX, 8x8 tiles.",
        "f.md": "The table shows GB/s and the percentage of copy bandwidth; measured on a one-row tensor.",
    }
    for name, line in clean.items():
        assert not scan(name, line), f"{name}: flagged: {line}"


def test_no_figures_in_template_comments():
    """No comment or docstring of the template's or the golden render's source quotes a figure."""
    files = source_files(TEMPLATE) + source_files(GOLDEN)
    assert len(files) > 20
    hits = [hit for path in files for hit in scan_file(path)]
    assert not hits, "figures belong on docs/performance.md, not in comments:\n" + "\n".join(hits)


def test_no_figures_in_tutorial():
    """The tutorial is a lesson: its figures are on the performance page, which it links to."""
    text = TUTORIAL.read_text(encoding="utf-8")
    hits = scan(str(TUTORIAL.relative_to(ROOT)), text)
    assert not hits, "figures belong on docs/performance.md, not in the tutorial:\n" + "\n".join(hits)
    assert "performance.md" in text
