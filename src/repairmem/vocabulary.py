"""The words an agent reads: what the JSON roads (the CLI's JSON verbs, MCP) answer in place of the
benchmark's vocabulary (issue 43, item 5).

The gate speaks in its actions (``top1_resolution``, ``ask_feedback``, ...), failure families and
root causes (``module_not_found/wrong_virtualenv``) and the reasons its audit log keeps ("safety
override: injection forbidden (family_confidence=0.075)"). An agent needs three things: whether to
use what came back (``inject``, ``ask`` or ``none``), why in one sentence, and the cause in words.
The gate's own action and reason stay in each answer's ``explain`` field, and in ``explain``.
"""

from __future__ import annotations

AGENT_ACTIONS = {"top1_resolution": "inject", "top3_summary": "inject", "high_precision_retrieval": "inject",
                 "high_recall_retrieval": "inject", "always_inject": "inject", "ask_feedback": "ask"}
                 # anything else (no_memory, abstain) is "none"

FAMILY_WORDS = {
    "module_not_found": "a Python module cannot be imported", "import_error": "an import fails",
    "dependency_conflict": "the dependencies conflict", "config_key_error": "a configuration value is missing",
    "missing_file": "a file or folder is missing", "command_not_found": "a command is not found",
    "permission_denied": "permission is denied", "port_in_use": "the port is already in use",
    "out_of_memory": "the process ran out of memory", "disk_full": "the disk is full",
    "syntax_error": "a syntax error", "network_error": "a network error", "timeout": "the command timed out",
    "test_failure": "a test fails", "sqlite_locked": "the SQLite database is locked or out of date",
    "schema_migration": "the database schema is behind its migrations",
    "lockfile_drift": "the lockfile does not match the dependencies",
    "missing_env_var": "an environment variable is not set",
}
ROOT_WORDS = {"unknown": "", "wrong_virtualenv": "the wrong virtual environment is used",
              "unapplied_migration": "migrations have not been applied",
              "other_listener": "another process listens on it", "env_var_unset": "the variable is unset"}


def agent_action(gate_action: str) -> str:
    """``inject``, ``ask`` or ``none``: what the agent does with the answer."""
    return AGENT_ACTIONS.get(gate_action, "none")


def cause_words(family: str, root_cause: str = "") -> str:
    """A failure's cause in words ("a Python module cannot be imported: the wrong virtual environment
    is used"); "not recognised" for a failure the rules could not name."""
    if not family or family == "unknown":
        return "not recognised from the output"
    head = FAMILY_WORDS.get(family, family.replace("_", " "))
    root = ROOT_WORDS.get(root_cause, (root_cause or "").replace("_", " "))
    return f"{head}: {root}" if root else head


def plain_why(action: str, reason: str, *, shown: int, candidates: int, foreign: str = "") -> str:
    """One plain sentence for an agent: why the answer is ``action`` (``agent_action``'s word), from
    the gate's ``reason``, how many memories were shown and how many candidates there were;
    ``foreign``: the project of an asked or injected memory from another project."""
    where = f" It comes from project {foreign}." if foreign else ""
    if action == "inject":
        return (f"{'An earlier fix' if shown == 1 else f'{shown} earlier fixes'} for the same kind of failure: "
                f"check the cause matches before following {'it' if shown == 1 else 'one'}.{where}")
    if action == "ask":
        if foreign and "has not been verified outside it" in reason:
            return (f"An earlier fix from project {foreign} may apply, but it was never verified in this project: "
                    "check it yourself, then answer with feedback.")
        doubt = ("the cause could not be recognised with confidence" if "family_confidence" in reason
                 else "the failing command or error differs from the one it fixed" if "structural_match" in reason
                 else "it is not sure enough to put it in your prompt")
        return f"An earlier fix may apply, but {doubt}: check it yourself, then answer with feedback.{where}"
    if not candidates:
        return "Nothing like this failure is in memory yet."
    if "rejection" in reason:
        return "Earlier fixes were already rejected in this task, so none is offered again."
    if "over budget" in reason:
        return "The earlier fix is too long for the prompt budget left."
    return "No earlier fix matches this failure's cause closely enough to use."
