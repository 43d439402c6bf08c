"""SKILL.md materialisation: each lesson as a portable Agent Skills file, for git versioning.

One directory per skill under ``procedural.skill_md_directory`` holding ``SKILL.md``: YAML front
matter (``name``, ``description``, ``metadata``) and a Markdown body with the activation and
execution tiers. The name is a lowercase, hyphenated slug that also names the directory, so no
lesson text can reach outside the configured directory; files are replaced atomically.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from memvault.errors import MemoryValidationError
from memvault.learning.models import ProceduralMemoryProposal

__all__ = ["render_skill_md", "skill_name", "write_skill_md"]


def skill_name(proposal: ProceduralMemoryProposal, skill_id: str) -> str:
    """The skill's name: its slug plus the id's tail (unique; at most 64 characters)."""
    tail = "".join(c for c in skill_id.lower() if c.isalnum())[-8:] or "0"
    return f"{proposal.slug()[: 64 - len(tail) - 1].strip('-')}-{tail}"


def _yaml_str(value: str) -> str:
    # JSON strings are valid YAML scalars, and escape everything that could break the header.
    return json.dumps(" ".join(value.split()), ensure_ascii=False)


def render_skill_md(proposal: ProceduralMemoryProposal, skill_id: str) -> str:
    """The SKILL.md text of ``proposal`` (front matter + body)."""
    name = skill_name(proposal, skill_id)
    meta = {
        "id": skill_id,
        "scope": proposal.scope.value,
        "source": proposal.source,
        "confidence": f"{proposal.confidence:.2f}",
    }
    head = [
        "---",
        f"name: {name}",
        f"description: {_yaml_str(proposal.discovery)}",
        "metadata:",
        *(f"  {k}: {_yaml_str(v)}" for k, v in meta.items()),
        "---",
    ]
    body = [
        f"# {name}",
        "",
        proposal.discovery.strip(),
        "",
        "## When to use",
        proposal.condition.strip(),
        "",
        "## What to do",
        proposal.action.strip(),
    ]
    if proposal.rationale.strip():
        body += ["", "## Why", proposal.rationale.strip()]
    if proposal.execution_steps:
        body += [
            "",
            "## Steps",
            *(f"{i}. {s.strip()}" for i, s in enumerate(proposal.execution_steps, 1)),
        ]
    return "\n".join(head + body) + "\n"


def write_skill_md(
    directory: str | Path, proposal: ProceduralMemoryProposal, skill_id: str
) -> Path:
    """Write (or rewrite) the skill's ``SKILL.md`` atomically; returns its path.

    Raises:
        MemoryValidationError: the resulting path would leave ``directory``.
        OSError: the file cannot be written.
    """
    root = Path(directory).expanduser().resolve()
    name = skill_name(proposal, skill_id)
    target = (root / name / "SKILL.md").resolve()
    if root not in target.parents:
        msg = f"skill name {name!r} escapes {root}"
        raise MemoryValidationError(msg)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".SKILL.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(render_skill_md(proposal, skill_id))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
