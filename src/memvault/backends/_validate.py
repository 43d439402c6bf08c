"""The shared validators, re-exported for the backend modules (see :mod:`memvault.validation`)."""

from __future__ import annotations

from memvault.validation import (
    append_only_error,
    as_dict,
    check_agent,
    check_id,
    check_stored_model,
    check_times,
    model_error,
)

__all__ = [
    "append_only_error",
    "as_dict",
    "check_agent",
    "check_id",
    "check_stored_model",
    "check_times",
    "model_error",
]
