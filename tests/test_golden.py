"""tests/golden/ is the project the default answers generate: a fresh rendering must equal it byte for
byte, and docs/template.md's layout tree must be the one listed from it. After a template change,
`python scripts/golden.py --update` refreshes both, so the review shows what users will get."""

from __future__ import annotations

import golden


def test_golden_tree_matches_a_fresh_rendering(tmp_path):
    fresh = golden.render(tmp_path)
    checked_in = golden.GOLDEN / fresh.name
    assert checked_in.is_dir(), "no tests/golden: run `python scripts/golden.py --update`"
    changes = golden.diff(checked_in, fresh)
    assert not changes, f"{changes[:20000]}\ntests/golden is stale: run `python scripts/golden.py --update`"
    assert len(golden.files(fresh)) > 25


def test_docs_layout_tree_is_listed_from_the_rendering(tmp_path):
    fresh = golden.render(tmp_path)
    doc = golden.DOC.read_text()
    tree = golden.layout(fresh)
    stale = "docs/template.md's tree is stale: run `python scripts/golden.py --update`"
    assert golden.doc_with_tree(doc, tree) == doc, stale
    # One line for the project, each folder and each file.
    assert tree.count("\n") + 1 == 1 + len(list(fresh.rglob("*")))


def test_every_note_names_a_rendered_path(tmp_path):
    fresh = golden.render(tmp_path)
    assert set(golden.LAYOUT_NOTES) <= set(golden.files(fresh)), set(golden.LAYOUT_NOTES) - set(golden.files(fresh))


def test_diff_shows_a_template_change(tmp_path):
    """The check can fail: a changed, an added and a removed file all show in the diff."""
    fresh = golden.render(tmp_path / "fresh")
    stale = tmp_path / "stale"
    stale.mkdir()
    for name, data in golden.files(fresh).items():
        (stale / name).parent.mkdir(parents=True, exist_ok=True)
        (stale / name).write_bytes(data)
    (stale / "README.md").write_text((fresh / "README.md").read_text().replace("## Build", "## Building"))
    (stale / "removed.txt").write_text("gone\n")
    (stale / "doctor.py").unlink()
    changes = golden.diff(stale, fresh)
    assert "-## Building\n+## Build\n" in changes
    assert "--- tests/golden/removed.txt\n+++ /dev/null" in changes
    assert "--- /dev/null\n+++ fresh/doctor.py" in changes
