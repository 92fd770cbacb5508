"""MkDocs hook: fills the options page from cookiecutter.json while the site builds, so the page can
never disagree with the questions cookiecutter asks. docs/options.md holds the marker below."""

from __future__ import annotations

import html
import json
from pathlib import Path

MARKER = "<!-- OPTIONS-TABLE -->"
DERIVED_MARKER = "<!-- DERIVED-TABLE -->"


def _cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return html.escape(str(value))


def _code(value) -> str:
    return f"<code>{_cell(value)}</code>"


def _choice(choice: str, label: str) -> str:
    """A choice and its prompt label, without the label's own repetition of the choice."""
    label = label.removeprefix(f"{choice}:").strip()
    return _code(choice) + (f": {_cell(label)}" if label and label != choice else "")


def options_table(context: dict) -> str:
    prompts = context.get("__prompts__", {})
    rows = ["<table>", "<thead><tr><th>key</th><th>question</th><th>default</th><th>choices</th></tr></thead>",
            "<tbody>"]
    for key, value in context.items():
        if key.startswith("_"):
            continue
        prompt = prompts.get(key, "")
        if isinstance(value, list):
            labels = prompt if isinstance(prompt, dict) else {}
            question = labels.get("__prompt__", key)
            default = _code(value[0])
            choices = "<br>".join(_choice(choice, labels.get(choice, "")) for choice in value)
        else:
            question = prompt or key
            is_template = isinstance(value, str) and "{{" in value
            default = f"derived: {_code(value)}" if is_template else _code(value)
            choices = "yes / no" if isinstance(value, bool) else "free text"
        rows.append(f"<tr><td>{_code(key)}</td><td>{_cell(question)}</td><td>{default}</td><td>{choices}</td></tr>")
    rows += ["</tbody>", "</table>"]
    return "\n".join(rows)


def derived_table(context: dict) -> str:
    rows = ["<table>", "<thead><tr><th>private key</th><th>computed as</th></tr></thead>", "<tbody>"]
    for key, value in context.items():
        if key.startswith("__") and key != "__prompts__":
            rows.append(f"<tr><td>{_code(key)}</td><td>{_code(value)}</td></tr>")
    rows += ["</tbody>", "</table>"]
    return "\n".join(rows)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown and DERIVED_MARKER not in markdown:
        return markdown
    context = json.loads((Path(config["config_file_path"]).parent / "cookiecutter.json").read_text())
    return markdown.replace(MARKER, options_table(context)).replace(DERIVED_MARKER, derived_table(context))
