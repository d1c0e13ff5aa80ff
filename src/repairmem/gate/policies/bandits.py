"""Context-free bandits over the actions: epsilon-greedy, UCB1 and Gaussian Thompson sampling.

References: Auer, Cesa-Bianchi, Fischer (2002) "Finite-time analysis of the multiarmed bandit
problem" (UCB1, epsilon-greedy); Agrawal & Goyal (2012) (Thompson sampling).
``_PosteriorSampling`` (decisions and propensities from posterior draws) is shared with the
linear Thompson policy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...check import check_int
from ..actions import N_ACTIONS
from .base import ALL, _NEG_INF, CorruptStateError, Decision, Policy, _argmax, _check_x, _number, _seed


@dataclass
class _MeanBandit(Policy):
    _state_keys: ClassVar[tuple[str, ...]] = ("counts", "sums")

    def _init_state(self) -> None:
        super()._init_state()
        self.counts = [0] * N_ACTIONS
        self.sums = [0.0] * N_ACTIONS

    def _learn(self, decision, reward, false_positive) -> None:
        self.counts[decision.index] += 1
        self.sums[decision.index] += reward

    def _check_state(self, loaded, where: str) -> None:
        """Counts are >= 0, and an action never tried has no reward sum (else means are NaN or nonsense)."""
        for a, (n, total) in enumerate(zip(loaded["counts"], loaded["sums"])):
            if n < 0:
                raise CorruptStateError(f"{where}: counts[{a}] is {n}; a count is >= 0")
            if n == 0 and total != 0:
                raise CorruptStateError(f"{where}: sums[{a}] is {total} for an action never tried (counts[{a}] = 0)")

    def _means(self) -> list[float]:
        return [s / n if n else 0.0 for s, n in zip(self.sums, self.counts)]


@dataclass
class EpsilonGreedy(_MeanBandit):
    """With probability 1 - epsilon the feasible action of highest mean reward, else a uniform one.

    pi(a) = (1 - eps) 1[a = argmax_b mu_b] + eps / |A_feasible|  (Sutton & Barto 2018, 2.2).
    """

    name: ClassVar[str] = "epsilon_greedy"
    epsilon: float = 0.1
    seed: int = 0

    def _validate(self) -> None:
        _number(self.name, "epsilon", self.epsilon, low=0.0, high=1.0)
        _seed(self.name, self.seed)

    def decide(self, x, *, truth=None) -> Decision:
        x = _check_x(x)
        allowed = self._feasible(x)
        means = self._means()
        scores = tuple(means[j] if j in allowed else _NEG_INF for j in ALL)
        greedy = _argmax(scores, allowed)
        i = greedy
        if self.epsilon > 0 and self.rng.random() < self.epsilon:
            i = allowed[int(self.rng.integers(len(allowed)))]
        p = self.epsilon / len(allowed) + (1.0 - self.epsilon if i == greedy else 0.0)
        return Decision(i, scores, p, tuple(x), self.name)

    def action_distribution(self, x) -> list[float]:
        x = _check_x(x)
        allowed = self._feasible(x)
        means = self._means()
        greedy = _argmax(tuple(means[j] if j in allowed else _NEG_INF for j in ALL), allowed)
        return [(self.epsilon / len(allowed) if j in allowed else 0.0) + (1.0 - self.epsilon if j == greedy else 0.0)
                for j in ALL]


@dataclass
class UCB1(_MeanBandit):
    """UCB1: mu_a + c sqrt(2 ln t / n_a); every feasible action is tried once first.

    Rewards here are not in [0, 1] (about [-5, 3]), so ``c`` scales the bonus (Auer et al. 2002).
    """

    name: ClassVar[str] = "ucb1"
    c: float = 2.0
    seed: int = 0

    def _validate(self) -> None:
        _number(self.name, "c", self.c, low=0.0)
        _seed(self.name, self.seed)

    def decide(self, x, *, truth=None) -> Decision:
        x = _check_x(x)
        allowed = self._feasible(x)
        log_t = math.log(max(self.t, 1))
        scores = tuple((math.inf if self.counts[j] == 0 else
                        self.sums[j] / self.counts[j] + self.c * math.sqrt(2.0 * log_t / self.counts[j]))
                       if j in allowed else _NEG_INF for j in ALL)
        i = _argmax(scores, allowed)
        return Decision(i, tuple(1e300 if s == math.inf else s for s in scores), 1.0, tuple(x), self.name)


class _PosteriorSampling:
    """Thompson-style decisions over a policy's ``_sample(x, n)`` (n posterior draws of the action
    scores): act on the first draw; the propensity is the share of ``mc_samples`` draws whose argmax
    is that action (floored at 1 / mc_samples). Infeasible actions are masked to -inf."""

    def _check_mc_samples(self) -> None:
        check_int(self.mc_samples, "mc_samples", low=1, where=self.name)

    def _draws(self, x, n: int) -> np.ndarray:
        mask = np.full(N_ACTIONS, -np.inf)
        mask[list(self._feasible(x))] = 0.0
        return self._sample(x, n) + mask

    def action_distribution(self, x, n: int = 512) -> list[float]:
        return _share(self._draws(_check_x(x), n))

    def decide(self, x, *, truth=None) -> Decision:
        x = _check_x(x)
        draws = self._draws(x, self.mc_samples)
        first = draws[0].tolist()
        i = _argmax(first, self._feasible(x))
        share = float(np.mean(draws.argmax(axis=1) == i))
        return Decision(i, tuple(first), max(share, 1.0 / self.mc_samples), tuple(x), self.name)


@dataclass
class ThompsonSampling(_PosteriorSampling, _MeanBandit):
    """Gaussian Thompson sampling: mu_a ~ N(sum_a / (n_a + 1), sigma^2 / (n_a + 1)), pick the argmax.

    Prior N(0, sigma^2) per action, known noise sigma (Agrawal & Goyal 2012). The propensity is the
    share of ``mc_samples`` posterior draws (the decision's own draw first) won by the chosen action.
    """

    name: ClassVar[str] = "thompson"
    sigma: float = 2.0
    mc_samples: int = 64
    seed: int = 0

    def _validate(self) -> None:
        _number(self.name, "sigma", self.sigma, low=0.0, low_open=True)
        self._check_mc_samples()
        _seed(self.name, self.seed)

    def _sample(self, x, n: int) -> np.ndarray:
        counts = np.asarray(self.counts, dtype=np.float64) + 1.0
        mean = np.asarray(self.sums) / counts
        return mean + self.sigma / np.sqrt(counts) * self.rng.standard_normal((n, N_ACTIONS))


def _share(draws: np.ndarray) -> list[float]:
    """Share of Monte-Carlo draws won by each action (ties to the lowest index, as argmax does)."""
    wins = np.bincount(draws.argmax(axis=1), minlength=N_ACTIONS)
    return (wins / wins.sum()).tolist()
