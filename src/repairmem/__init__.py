"""repairmem: an experience memory for LLM agents that repair their own failures.

The public surface is ``Memory`` (record finished episodes, recall for a failure, feedback) with
the failure values ``SqlFailure`` and ``TerminalFailure``; the data model lives in ``types``.
"""

__version__ = "0.1.0"

from .errors import ImportFormatError, InvalidInputError, PromptLeakError, RepairmemError, StoreError  # noqa: E402
from .types import (  # noqa: E402
    Attempt, Counters, Episode, MemoryVariant, Outcome, Pattern, Polarity, Provenance, Scope,
    SqlFailureType, memory_from_episode, normalize_command, normalize_sql,
)
from .memory import Memory, Recall, SqlFailure, TerminalFailure  # noqa: E402

__all__ = [
    "Attempt", "Counters", "Episode", "ImportFormatError", "InvalidInputError", "Memory", "MemoryVariant",
    "Outcome", "Pattern", "Polarity", "PromptLeakError", "Provenance", "Recall", "RepairmemError", "Scope",
    "SqlFailure", "SqlFailureType", "StoreError", "TerminalFailure", "memory_from_episode", "normalize_command",
    "normalize_sql",
]
