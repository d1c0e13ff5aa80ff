"""The repeat guard's sampling fallback, shared by the grounded SQL and terminal loops.

After a model repeats itself, greedy decoding would repeat again: the next calls are sampled
with a seed derived from a key (query or task, step) and a temperature that rises with each
further repeat, up to a cap. Both are recorded with the call, so a resumed run draws the same
samples and a replay matches.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from ..check import check_int, check_number
from ..errors import InvalidInputError
from ..llm.protocol import GenerationConfig


def check_repeat_sampling(before: int, start: float, step: float, cap: float) -> None:
    """Validate the fallback's settings (``repeat_sampling``); errors name the bad setting."""
    check_int(before, "repeats_before_sampling", low=1)
    GenerationConfig(temperature=start)      # validates the range
    GenerationConfig(temperature=cap)
    if not start > 0:
        raise InvalidInputError("sampling_temperature must be > 0: it is the fallback that makes attempts differ")
    check_number(step, "sampling_temperature_step", low=0, high=1)
    if cap < start:
        raise InvalidInputError(f"max_sampling_temperature ({cap}) must be >= sampling_temperature ({start})")


def repeat_sampling(base: GenerationConfig, key: str, repeats: int, *, before: int, start: float, step: float,
                    cap: float) -> GenerationConfig:
    """``base`` sampled after ``repeats`` repeats: seed = blake2b(key), temperature =
    min(cap, start + step · (repeats - before)); a fixed temperature kept repeating earlier answers."""
    digest = hashlib.blake2b(key.encode(), digest_size=4).digest()
    extra = max(0, repeats - before)
    temperature = min(cap, start + step * extra)
    return replace(base, temperature=round(temperature, 6), seed=int.from_bytes(digest, "little"))
