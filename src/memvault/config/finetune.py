"""``memory.fine_tune``: the embedding fine-tune section of ``memvault.yaml``.

It lives with the other section models so that :mod:`memvault.config` needs no feature
package; the lifecycle's records (runs, plans, checkpoints) stay in
:mod:`memvault.finetune.config`. Every path an operator gives is checked here, before any runner
or mount could see it: parent-directory segments, backslashes and Windows drive letters are
rejected.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints, field_validator, model_validator

__all__ = ["EmbeddingFineTuneConfig", "NotBlank", "check_safe_path"]

NotBlank = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]

_DRIVE_RE = re.compile(r"^[A-Za-z]:")


def check_safe_path(value: str, field: str) -> str:
    """Reject ``..`` segments, backslashes and drive letters (they could escape a mount).

    Raises:
        ValueError: the path is unsafe (pydantic turns it into a validation error).
    """
    if "\\" in value:
        raise ValueError(f"{field} must not contain backslashes (Windows-style paths)")
    if _DRIVE_RE.match(value):
        raise ValueError(f"{field} must not start with a drive letter")
    if ".." in value.split("/"):
        raise ValueError(f"{field} must not contain '..' segments")
    return value


class EmbeddingFineTuneConfig(BaseModel):
    """``memory.fine_tune``: where checkpoints live and which one serves (disabled by default).

    ``checkpoint_path`` is the checkpoint registry: runs write their checkpoints under it and
    deploys record the active one there, so an embedder configured as
    ``finetuned:<checkpoint_path>`` follows deploys and rollbacks. When ``enabled`` is true,
    ``checkpoint_path`` and ``base_model`` are required.
    """

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid")

    enabled: bool = False
    checkpoint_path: NotBlank | None = None
    base_model: NotBlank | None = None
    training_data_dir: NotBlank | None = None
    runner: Literal["in-process", "subprocess"] = "in-process"

    @field_validator("checkpoint_path", "training_data_dir")
    @classmethod
    def _safe(cls, value: str | None, info: object) -> str | None:
        name = getattr(info, "field_name", "path")
        return None if value is None else check_safe_path(value, name)

    @model_validator(mode="after")
    def _required_when_enabled(self) -> EmbeddingFineTuneConfig:
        if self.enabled and (self.checkpoint_path is None or self.base_model is None):
            missing = [n for n in ("checkpoint_path", "base_model") if getattr(self, n) is None]
            raise ValueError(f"fine_tune.enabled needs {' and '.join(missing)}")
        return self

    @property
    def embedder_spec(self) -> str | None:
        """The embedder spec to use instead of ``memory.embedder`` (None when disabled)."""
        if not self.enabled or self.checkpoint_path is None:
            return None
        return f"finetuned:{self.checkpoint_path}"
