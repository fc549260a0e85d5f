"""The README is a newcomer's (short, both commands), the design contract is in the repository,
and every link between the documents leads somewhere."""

import re

from .test_architecture import ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a document's headings: lower case, punctuation dropped, spaces to '-'."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def test_the_readme_is_short_and_gives_both_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    assert "make demo" in text and "make test" in text
    assert "docs/design.md" in text


def test_nothing_cites_a_design_document_outside_the_repository():
    cited = [
        str(path.relative_to(ROOT))
        for folder in (
            "experiments",
            "recovery_lab_cli",
            "workers",
            "runner",
            "webapp",
            "templates",
            "scripts",
            "docs",
        )
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".md", ".html", ".sh") and "DESIGN.md" in path.read_text(errors="replace")
    ]
    assert cited == [] and "DESIGN.md" not in (ROOT / "README.md").read_text()
    assert (ROOT / "docs" / "design.md").exists()


def test_every_link_between_the_documents_leads_somewhere():
    broken = []
    for document in DOCUMENTS:
        for target in LINK.findall(document.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            linked = (document.parent / path).resolve() if path else document
            if not linked.exists():
                broken.append(f"{document.name}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked.read_text()):
                broken.append(f"{document.name}: {target} (no such heading)")
    assert broken == []
