"""How the guided search shares its proposals among its proposers.

An opening proposer takes every proposal until ``opening`` configurations are measured. After
that, the models that other proposers rank by are refitted when due, and the stages are asked in
order: a stage counts the proposals that reach it (while it is active: ``after`` <= measured <
``until``), and on its t-th, each of its ``(proposer, share)`` entries whose share falls on t
(:func:`falls_to`: ``share`` of the turns, evenly spread) proposes, the first answer winning;
otherwise the next stage. A last entry with share 1 answers whatever is left.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


def falls_to(turn: int, share: float) -> bool:
    """Whether the ``turn``-th turn (1-based) falls to an entry taking ``share`` of them."""
    return int(turn * share) > int((turn - 1) * share)


@dataclass
class Stage:
    entries: list  # [(proposer, share)], asked in this order
    after: int = 0  # active once this many configurations are measured ...
    until: float = math.inf  # ... and while fewer than this many are
    turns: int = field(default=0, init=False)


class Mixer:
    """The proposals of ``opening`` (until ``opening_count`` configurations are measured), then of
    the ``stages``, with the models of ``kept_fitted`` refitted when due before each."""

    def __init__(self, history, opening, opening_count: int, kept_fitted: list, stages: list[Stage]):
        self.history, self.opening, self.opening_count = history, opening, opening_count
        self.kept_fitted, self.stages = kept_fitted, stages
        self.proposers = [opening] + [p for stage in stages for p, _ in stage.entries]

    def propose(self, best: float) -> int | None:
        """The next candidate to measure, or None when every candidate is measured or cut."""
        history = self.history
        if not history.alive(best).any():
            return None
        if len(history.measured) < self.opening_count:
            return self.opening.propose(best)
        for model in self.kept_fitted:
            if model.ready(history):
                model.refresh(history)
        for stage in self.stages:
            if not stage.after <= len(history.measured) < stage.until:
                continue
            stage.turns += 1
            for proposer, share in stage.entries:
                if falls_to(stage.turns, share):
                    i = proposer.propose(best)
                    if i is not None:
                        return i
        return None

    def observe(self, i: int, time: float | None) -> None:
        """Candidate ``i`` was measured in ``time`` seconds (inf: failed; None: no time)."""
        self.history.observe(i, time)
        for proposer in self.proposers:
            proposer.observe(i, time)
