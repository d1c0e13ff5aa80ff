"""repairmem: an experience memory for LLM agents that repair their own failures."""

from .errors import ImportFormatError, InvalidInputError, PromptLeakError, RepairmemError, StoreError
from .types import (
    Attempt, Counters, Episode, MemoryVariant, Outcome, Pattern, Polarity, Provenance, Scope,
    SqlFailureType, memory_from_episode, normalize_command, normalize_sql,
)

__version__ = "0.1.0"

__all__ = [
    "Attempt", "Counters", "Episode", "ImportFormatError", "InvalidInputError", "MemoryVariant",
    "Outcome", "Pattern", "Polarity", "PromptLeakError", "Provenance", "RepairmemError", "Scope",
    "SqlFailureType", "StoreError", "memory_from_episode", "normalize_command", "normalize_sql",
]
