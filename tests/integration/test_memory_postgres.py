"""A gated ``Memory`` over a shared PostgreSQL store: the gate's state stays with the agent."""

from __future__ import annotations

import pytest

from repairmem import Attempt, Episode, InvalidInputError, Memory, TerminalFailure

LOG = "Traceback (most recent call last):\n  File \"app.py\", line 1, in <module>\nModuleNotFoundError: No module named 'yaml'"


def test_a_gated_memory_over_postgres_keeps_its_gate_in_its_state_path(postgres_url, tmp_path):
    with pytest.raises(InvalidInputError, match="state="):
        Memory.open(postgres_url, encoder="hashing")
    with pytest.raises(InvalidInputError) as err:                       # refused before connecting
        Memory.open("postgresql://agent:s3cret@db.example:5432/memory", encoder="hashing")
    assert "s3cret" not in str(err.value) and "agent:***@" in str(err.value)
    state = tmp_path / "agent1" / "gate"
    episode = Episode(episode_id="e1", query_id="t1", position=0, namespace="proj-a", question="run the app",
                      kind="terminal", finalized=True,
                      attempts=(Attempt("python app.py", "EXECUTION_ERROR", LOG), Attempt("pip install pyyaml", "CORRECT")))
    with Memory.open(postgres_url, encoder="hashing", state=state) as memory:
        assert memory.record(episode) is not None
        recall = memory.recall(TerminalFailure("python app.py", LOG, project="proj-b"), query_id="t2")
        memory.feedback(recall.id, **({"accepted": True, "verified": True} if recall.injected else {}))
        assert memory.explain(recall.id)["reward"] is not None
    assert (tmp_path / "agent1" / "gate.audit.db").is_file()   # decisions, rewards and the learned policy
    with Memory.open(postgres_url, encoder="hashing", state=state) as again:   # another process, same store
        assert again.policy.t == 1 and again.stats()["variants"] == 1
