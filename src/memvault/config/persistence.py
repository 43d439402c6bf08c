"""The ``persistence:`` section: where operational records live, and what model calls cost.

Spelled as seed 001 writes it, beside ``memory:`` at the top of ``memvault.yaml`` (or inside the
``memory:`` section, the same keys)::

    persistence:
      backend: sqlite              # sqlite | postgresql; unset: wherever the memories are
      sqlite:
        path: ./data/operations.db # unset: the memory store's own file
        wal_mode: true
        journal_size_limit: 67108864
      postgresql:
        url: postgresql://user:pass@host:5432/db?schema=ops
        pool_size: 10
      costs:
        record: true               # a cost record for each of memvault's own model calls
        prices:                    # per million tokens, in one currency of your choice
          gpt-4o-mini: {input: 0.15, output: 0.60}
        agent_budget: 5.0          # per agent and UTC day, in that currency
        agent_token_budget: 2000000
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "CostsConfig",
    "ModelPrice",
    "PersistenceConfig",
    "PostgresPersistenceConfig",
    "SQLitePersistenceConfig",
]


class SQLitePersistenceConfig(BaseModel):
    """``persistence.sqlite``: the file and its journal."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str | None = None
    """The file (``{tenant}`` is replaced by a tenant's name); unset: the memory store's file."""
    wal_mode: bool = True
    """WAL journal (concurrent readers); ``false`` only for a file of its own."""
    journal_size_limit: int = Field(default=64 * 1024 * 1024, ge=0)
    """Bytes the WAL file is truncated to after a checkpoint."""


class PostgresPersistenceConfig(BaseModel):
    """``persistence.postgresql``: the server and the pool."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str | None = None
    """``postgresql://...`` (``?schema=`` for a schema); unset: the memory store's URL."""
    pool_size: int = Field(default=10, ge=1, le=200)


class ModelPrice(BaseModel):
    """What one model costs per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(default=0.0, ge=0)


class CostsConfig(BaseModel):
    """``persistence.costs``: cost records of memvault's own calls, prices, per-agent budgets."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: bool = True
    """Write a cost record for every LLM and embedding call memvault makes for an agent."""
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    """Model name -> price; records of other models carry tokens and no cost."""
    agent_budget: float | None = Field(default=None, gt=0)
    """Cost per agent per UTC day after which LLM-backed memory work takes its offline path."""
    agent_token_budget: int | None = Field(default=None, gt=0)
    """The same as a token count (works without prices)."""

    def __hash__(self) -> int:
        # Configurations are hashable values; the prices dict alone would make this one not.
        return hash(
            (
                self.record,
                tuple(sorted(self.prices.items())),
                self.agent_budget,
                self.agent_token_budget,
            )
        )

    def price(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """The cost of a call, or None when no price is configured for ``model``."""
        found = self.prices.get(model)
        if found is None:
            return None
        return (input_tokens * found.input + output_tokens * found.output) / 1_000_000


class PersistenceConfig(BaseModel):
    """The ``persistence:`` section (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Literal["sqlite", "postgresql", "postgres"] | None = None
    sqlite: SQLitePersistenceConfig = Field(default_factory=SQLitePersistenceConfig)
    postgresql: PostgresPersistenceConfig = Field(default_factory=PostgresPersistenceConfig)
    costs: CostsConfig = Field(default_factory=CostsConfig)

    @property
    def configured(self) -> bool:
        """True if a backend or a location is written (else the records follow the memories)."""
        return bool(self.backend or self.sqlite.path or self.postgresql.url)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.backend == "postgres":
            object.__setattr__(self, "backend", "postgresql")
        if self.backend == "postgresql" and "sqlite" in self.model_fields_set:
            msg = "persistence.sqlite is set but persistence.backend is postgresql"
            raise ValueError(msg)
        if self.backend == "sqlite" and "postgresql" in self.model_fields_set:
            msg = "persistence.postgresql is set but persistence.backend is sqlite"
            raise ValueError(msg)
        return self
