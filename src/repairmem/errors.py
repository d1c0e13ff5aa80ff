"""Exceptions. Each says what was wrong, where, and what to do; the CLI prints them and exits 2."""


class RepairmemError(Exception):
    """Base class of every error repairmem raises on purpose."""


class InvalidInputError(RepairmemError, ValueError):
    """Bad input: a value, a file, a line or an argument that cannot be used as given."""


class StoreError(RepairmemError):
    """The memory store cannot be opened or written (schema too new, corrupt file, conflict)."""


class CorruptStateError(StoreError):
    """A state file cannot be trusted (unreadable, truncated, edited, wrong shape)."""


class ImportFormatError(InvalidInputError):
    """A JSONL memory file is malformed; carries the file and line."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line


class PromptLeakError(RepairmemError):
    """A rendered prompt contains the reference answer of the current example."""
