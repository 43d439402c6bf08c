"""Every code block of README.md runs (the rules are in ``readme_harness``'s docstring).

One test per ``##`` section, so a new section (or a new block in one) is picked up without
touching this file. The harness tests at the end prove that a broken block fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from readme_harness import (
    CHECK_ONLY,
    README,
    REPO,
    RUN,
    SETUP_SKIPPED,
    SKIPPED_LANGUAGES,
    Block,
    SectionRunner,
    by_section,
    parse_blocks,
    plan_bash,
)

TEXT = README.read_text(encoding="utf-8")
BLOCKS = parse_blocks(TEXT)
SECTIONS = by_section(BLOCKS)


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "top"


def _run_section(blocks: list[Block], root: Path, readme: Path = README) -> SectionRunner:
    runner = SectionRunner(root, readme=readme)
    try:
        for block in blocks:
            runner.run(block)
    finally:
        runner.close()
    return runner


@pytest.mark.parametrize(
    "title", [t for t, b in SECTIONS.items() if any(x.lang in RUN for x in b)], ids=_slug
)
def test_readme_section_runs(title: str, tmp_path: Path) -> None:
    _run_section(SECTIONS[title], tmp_path)


def test_every_block_says_what_it_is() -> None:
    unknown = [b.where for b in BLOCKS if b.lang not in RUN | SKIPPED_LANGUAGES]
    assert unknown == [], "use ```python, ```bash, ```yaml (run) or ```text (not run)"
    assert sum(b.lang == "python" for b in BLOCKS) >= 5
    assert sum(b.lang == "bash" for b in BLOCKS) >= 5


def test_only_allow_listed_lines_are_not_run() -> None:
    """Set-up lines are skipped and benchmark lines checked only where an entry says why."""
    skipped = [c for b in BLOCKS if b.lang == "bash" for c in plan_bash(b.source).skipped]
    checked = [c for b in BLOCKS if b.lang == "bash" for c in plan_bash(b.source).checks]
    assert all(any(c.startswith(p) for p in SETUP_SKIPPED) for c in skipped)
    assert all(any(c.startswith(p) for p in CHECK_ONLY) for c in checked)
    # The two set-up commands of a fresh clone stay exactly as they are.
    assert "make demo" in TEXT and "make test" in TEXT


def test_links_stay_inside_the_repository() -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", TEXT):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (REPO / target.split("#")[0]).resolve()
        assert path.is_relative_to(REPO), f"README links outside the repository: {target}"
        assert path.exists(), f"README links to a missing file: {target}"


def test_no_promises_of_features_to_come() -> None:
    assert "(soon)" not in TEXT.lower()
    assert "pip install memvault" not in TEXT  # not on the package index


# -- the harness itself: a broken block fails, with the README line in the message ---------------


def _broken_readme(tmp_path: Path, body: str) -> tuple[list[Block], Path]:
    readme = tmp_path / "README.md"
    readme.write_text(body, encoding="utf-8")
    return parse_blocks(body), readme


def test_a_python_block_that_raises_fails_with_its_readme_line(tmp_path: Path) -> None:
    body = (
        "## Demo\n\n```python\nx = 1\n```\n\n"
        "```python\nassert x == 1\nundefined_name  # README line 9\n```\n"
    )
    blocks, readme = _broken_readme(tmp_path, body)
    with pytest.raises(
        AssertionError, match=r"(?s)line 8 \(Demo, python\).*README.md\", line 9.*NameError"
    ):
        _run_section(blocks, tmp_path / "run", readme)


def test_top_level_await_fails(tmp_path: Path) -> None:
    blocks, readme = _broken_readme(tmp_path, "## A\n\n```python\nawait something()\n```\n")
    with pytest.raises(AssertionError, match="SyntaxError"):
        _run_section(blocks, tmp_path / "run", readme)


def test_a_failing_bash_line_fails_and_exports_carry_over(tmp_path: Path) -> None:
    good = (
        "## B\n\n```bash\nexport GREETING=$(echo hi)\nmemvault --help > /dev/null\n```\n\n"
        "```python\nimport os\nassert os.environ['GREETING'] == 'hi'\n```\n"
    )
    blocks, readme = _broken_readme(tmp_path, good)
    _run_section(blocks, tmp_path / "ok", readme)
    bad = "## B\n\n```bash\nmemvault no-such-command\necho never\n```\n"
    blocks, readme = _broken_readme(tmp_path, bad)
    with pytest.raises(AssertionError, match=r"(?s)exited 2.*No such command"):
        _run_section(blocks, tmp_path / "bad", readme)


def test_unknown_languages_and_unknown_options_fail(tmp_path: Path) -> None:
    blocks, readme = _broken_readme(tmp_path, "## C\n\n```\nls\n```\n")
    with pytest.raises(AssertionError, match="say what the block is"):
        _run_section(blocks, tmp_path / "a", readme)
    body = "## C\n\n```bash\nmemvault bench locomo --data x.json --no-such-option\n```\n"
    blocks, readme = _broken_readme(tmp_path, body)
    with pytest.raises(AssertionError, match="--no-such-option not in its --help"):
        _run_section(blocks, tmp_path / "b", readme)
    body = "## C\n\n```bash\nmemvault bench locomo --data x.json [--json]\n```\n"
    blocks, readme = _broken_readme(tmp_path, body)
    with pytest.raises(AssertionError, match="is not shell"):
        _run_section(blocks, tmp_path / "c", readme)
