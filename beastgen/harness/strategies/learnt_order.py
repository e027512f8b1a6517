"""The order in which the default search visits configurations, learnt during the run.

Branch and bound proves the best once every configuration whose lower bound is below the best
time is measured or cut; the order in which they are measured is free (on a space without bound
terms nothing is ever cut, and the order is the whole search). Measuring fast ones first lowers the
best time early, so more configurations are cut and the proof comes sooner.

:class:`LearntOrder` ranks the configurations still open (not measured, not cut) by a Bayesian
ridge regression of log run time, refitted on this run's own measurements:

- features: one-hot per parameter value and per pair of parameter values (interactions such as
  tile size x thread count), each numeric parameter's log value and the products of those (a
  smooth trend that reaches values not yet measured), the log of the lower bound, and per prior
  source (below) its value and whether it lacks the configuration;
- proposal: the open configuration with the smallest prediction under weights drawn from the
  posterior (Thompson sampling), so uncertain regions are tried too; a prediction never goes
  below the configuration's own valid lower bound;
- a second model of another kind: a share of the proposals (``forest_share``) comes from an
  extra-trees forest (:mod:`.extra_trees`) grown on the parameters' codes (and the bound and the
  prior sources), the open configuration with the smallest mean minus ``forest_kappa`` spreads
  of its trees. Trees capture what the additive regression cannot (an island of fast
  configurations whose other members are slow) and fail differently, so the two together rarely
  both miss the optimum for long; without priors the forest also splits on the pairwise sums and
  differences of the numeric parameters' log values (log products and ratios: threads = block x
  times block y, work per thread = tile x times tile y), computed alike for every space;
- without priors, a share of the model's proposals (``gp_share``) comes from a Gaussian process
  (:mod:`.gaussian_process`: Matern-5/2 with a length scale per parameter on the value indices
  scaled to [0, 1], hyperparameters by marginal likelihood refitted after ``gp_refit`` more
  measurements, trained on the best half of at most ``gp_training`` measurements and a random
  rest, failures left out): the open configuration, of at most ``gp_candidates`` drawn at random,
  with the smallest mean minus ``gp_kappa`` standard deviations, refitted for every proposal,
  while fewer than ``gp_until`` configurations are measured (the budget it was chosen on).
  The smooth kernel reaches what neither the additive regression nor the axis-aligned trees
  rank well (the convolution needles, the W6600's dedispersion optimum);
- without priors, a share of the model's proposals (``cross_share``) is a genetic crossover: of
  256 children of two of the best 8 measured configurations (each parameter's value from either
  parent, one in d redrawn at random), the open one the regression predicts fastest. Kernel
  Tuner's best strategies on the replay files (genetic, pso, diff_evo) are such recombinations;
- every ``local_every``-th proposal is the predicted fastest among the open neighbours (one
  parameter changed) of the best few measured configurations: the last percent is found there;
- without priors, the first proposal has the smallest bound and the next few are drawn uniformly
  at random among the open configurations.

Priors (``prior``: one column per source, the normal score of each configuration's rank in another
GPU's or problem size's measurements, nan where the source lacks it) warm-start it: the first
proposals are the best by the sources' mean, and each source is a feature whose weight starts at
an equal share of one and is then learnt from this run's measurements, so a source that disagrees
with what is measured here loses its weight. A share of the model's proposals (``transfer_share``)
follows the sources' consensus, each source trusted by its rank correlation with this run's
measurements (:mod:`.prior_transfer`), the forest learns the residual of a ridge regression of
this run's log times on the sources' scores and adds it back (``prior_residual``,
:mod:`.prior_residual`: it extrapolates "this parameter value is relatively better on this GPU" to
configurations not measured yet, which rank transfer cannot), and the local proposals look around
more of the best measured (``prior_local_top``). Priors only order the search: they cut nothing.

The certificate at any moment: the true optimum is at least the smallest valid bound among the
open configurations (a configuration whose dominating term was violated has no valid bound: 0), so
``best / lower`` bounds how far the best time is from optimal; the best is optimal when nothing is
open with a bound below it.

Every constant below was chosen by leave-one-GPU-out cross-validation over the eight replay files
in ``data/replay/`` (``benchmarks/tune_search_constants.py``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .extra_trees import ExtraTrees
from .gaussian_process import GaussianProcess
from .prior_residual import linear_part
from .prior_transfer import Transfer


@dataclass(frozen=True)
class Constants:
    #: uniform random proposals before the model is used (no priors)
    initial: int = 8
    #: proposals taken in the priors' order before the model is used
    initial_prior: int = 2
    #: prior precision of every weight (ridge penalty) on standardized features
    ridge: float = 1.0
    #: extra shrinkage of the pairwise one-hot features
    pair_ridge: float = 1.0
    #: prior precision of the prior sources' weights around their equal share
    prior_ridge: float = 0.1
    #: refit after this fraction more measurements (at least one)
    refit_fraction: float = 0.05
    #: scale of the posterior spread in the proposals (0: always the predicted fastest)
    exploration: float = 0.3
    #: at most this many measurements (drawn at random) train the model
    training: int = 512
    #: every how many proposals one is the predicted fastest among the open neighbours (one
    #: parameter changed) of the best measured configurations (0: never)
    local_every: int = 2
    #: neighbours of at most this many of the best measured configurations
    local_top: int = 3
    #: the same with priors
    prior_local_top: int = 6
    #: log times above this quantile of those measured are trained as that quantile: the model
    #: tells fast configurations apart rather than the very slow ones (1: no clipping)
    clip_quantile: float = 1.0
    #: share of the model's proposals (those not local) taken from the extra-trees forest instead
    #: of the regression (0: never)
    forest_share: float = 0.5
    #: the same with priors
    prior_forest_share: float = 0.5
    #: trees in the forest
    forest_trees: int = 16
    #: the forest proposes the smallest mean - ``forest_kappa`` x spread over its trees
    forest_kappa: float = 2.0
    #: refit the forest after this fraction more measurements (at least 4)
    forest_refit: float = 0.1
    #: the forest ranks at most this many open configurations (drawn at random) per refit
    forest_candidates: int = 16384
    #: share of the model's proposals (without priors) taken from crossover children of the
    #: best measured configurations, screened by the regression (0: never)
    cross_share: float = 0.2
    #: parents are drawn among this many of the best measured configurations
    cross_top: int = 8
    #: children drawn per crossover proposal (the predicted fastest open one is proposed)
    cross_children: int = 256
    #: without priors, the forest also splits on derived features: pairwise sums and differences
    #: of the numeric parameters' log values (log products and ratios, such as threads = block x
    #: by block y; 0: never)
    forest_derived: int = 1
    #: with priors: share of the model's proposals taken in the order of the sources' consensus,
    #: each source trusted by its rank correlation with this run's measurements (0: never)
    transfer_share: float = 0.5
    #: trust falls by e for every ``transfer_temperature`` of a source's rank correlation below
    #: the best source's
    transfer_temperature: float = 0.3
    #: with priors, the forest learns the residual of a ridge regression on the sources' scores
    #: (:mod:`.prior_residual`; 0: it learns the log times themselves, the sources as features)
    prior_residual: int = 1
    #: ridge penalty of the sources' weights in that regression
    residual_ridge: float = 1.0
    #: without priors: share of the model's proposals taken from a Gaussian process
    #: (:mod:`.gaussian_process`; 0: never)
    gp_share: float = 0.25
    #: it proposes the smallest mean - ``gp_kappa`` x its standard deviation (lower confidence bound)
    gp_kappa: float = 2.0
    #: at most this many measurements train it (the best half of them, the rest drawn at random)
    gp_training: int = 256
    #: it ranks at most this many open configurations (drawn at random) per proposal
    gp_candidates: int = 4096
    #: its hyperparameters are refitted after this fraction more measurements (at least 8)
    gp_refit: float = 0.1
    #: it proposes only while fewer than this many configurations are measured: every constant
    #: was chosen on searches of at most 1,000, and a search run to its proof (thousands more)
    #: would pay its fit for every proposal
    gp_until: int = 1000


DEFAULT = Constants()


class LearntOrder:
    """Chooses the next configuration to measure among ``n`` candidates.

    ``codes[i, j]``: index of candidate i's value of parameter j among that parameter's values (in
    increasing order); ``bounds[i]``: its lower bound in seconds (nan: none); ``terms[i]``: the
    index of its dominating bound term; ``values[i, j]``: the value itself where numeric (nan
    otherwise); ``prior``: see the module docstring. Call :meth:`next` for an index, then
    :meth:`observe` with its time (``math.inf`` for a failure, ``None`` when it gave no time)."""

    def __init__(self, codes: np.ndarray, bounds: np.ndarray, terms: np.ndarray, seed: int = 0,
                 values: np.ndarray | None = None, prior: np.ndarray | None = None,
                 constants: Constants = DEFAULT):
        n = len(bounds)
        self.c = constants
        self.rng = np.random.default_rng(seed)
        self.bounds = np.where(np.isnan(bounds), 0.0, np.asarray(bounds, dtype=float))
        self.terms = np.asarray(terms, dtype=np.int64)
        self.open = np.ones(n, dtype=bool)
        self.violated = np.zeros(int(self.terms.max(initial=0)) + 1, dtype=bool)
        codes = np.asarray(codes, dtype=np.int64).reshape(n, -1)
        self.prior = None if prior is None or not np.size(prior) else \
            np.asarray(prior, dtype=float).reshape(n, -1)
        self._features(codes, values)
        self.valid = self.valid_bounds()
        self.measured: list[int] = []  # candidates with a time, in measurement order
        self.log_times: list[float] = []
        self.fitted_at = -1
        self.queue = np.zeros(0, dtype=np.int64)
        self.position = 0
        self._neighbour_index(codes)
        self.predicted = np.zeros(n)
        self.proposals = 0
        self.model_turns = self.transfer_turns = 0
        self.forest_queue, self.forest_position, self.forest_fitted = np.zeros(0, np.int64), 0, -1
        self.gp, self.gp_turns, self.gp_tuned = GaussianProcess(), 0, -1
        self.top: list[tuple[float, int]] = []  # (time, candidate) of the fastest measured
        if self.prior is not None:  # the sources' mean, missing ones left out; none: last
            known = ~np.isnan(self.prior)
            total = np.where(known, self.prior, 0.0).sum(axis=1)
            mean = np.where(known.any(axis=1), total / np.maximum(known.sum(axis=1), 1), np.inf)
            self.prior_order = np.argsort(mean, kind="stable")
            self.transfer = Transfer(self.prior, self.c.transfer_temperature)

    # -- features ------------------------------------------------------------------------------
    def _features(self, codes: np.ndarray, values: np.ndarray | None) -> None:
        """Sparse one-hot indices (``self.hot``, n x h) and dense columns (``self.dense``)."""
        varying = [j for j in range(codes.shape[1]) if codes[:, j].max(initial=0) > 0]
        sizes = [int(codes[:, j].max()) + 1 for j in varying]
        hot, offset = [], 0
        for j, size in zip(varying, sizes):
            hot.append(offset + codes[:, j])
            offset += size
        main_width = offset
        for a in range(len(varying)):
            for b in range(a + 1, len(varying)):
                hot.append(offset + codes[:, varying[a]] * sizes[b] + codes[:, varying[b]])
                offset += sizes[a] * sizes[b]
        n = len(codes)
        self.hot = np.stack(hot, axis=1).astype(np.int32) if hot else np.zeros((n, 0), np.int32)
        dense = [codes[:, j] / (size - 1) for j, size in zip(varying, sizes)]
        logs = [_standard(np.log2(np.maximum(values[:, j], 0) + 1)) for j in varying
                if values is not None and not np.isnan(values[:, j]).any()]
        dense += logs
        dense += [logs[a] * logs[b] for a in range(len(logs)) for b in range(a, len(logs))]
        positive = self.bounds > 0
        bound = [_standard(np.log(np.where(positive, self.bounds, self.bounds[positive].min())))] \
            if positive.any() else []
        dense += bound
        self.prior_columns = 0
        if self.prior is not None:
            missing = np.isnan(self.prior)
            dense += [column for column in missing.T.astype(float) if column.any()]  # lacking: learnt
            dense += list(np.where(missing, 0.0, self.prior).T)
            self.prior_columns = self.prior.shape[1]
        self.dense = np.stack(dense, axis=1) if dense else np.zeros((n, 0))
        trees = [codes[:, j] for j in varying] + bound  # the forest: codes, bound, sources
        if self.c.forest_derived and values is not None and self.prior is None:
            logs = [np.log2(np.maximum(values[:, j], 0) + 1) for j in varying
                    if not np.isnan(values[:, j]).any()]
            trees += [logs[a] + sign * logs[b] for a in range(len(logs))
                      for b in range(a + 1, len(logs)) for sign in (1, -1)]
        if self.prior is not None:  # lacking: past the source's slowest
            trees += [np.where(np.isnan(c), np.nanmax(c, initial=0.0) + 1, c) for c in self.prior.T]
        self.tree_x = np.stack(trees, axis=1).astype(float) if trees else np.zeros((n, 1))
        self.hot_width = offset
        self.codes = codes[:, varying]
        self.sizes = np.array(sizes, dtype=np.int64)
        if self.prior is None and self.c.gp_share:  # the Gaussian process's inputs: indices in [0, 1]
            self.gp_x = self.codes / np.maximum(self.sizes - 1, 1)
        self.width = offset + self.dense.shape[1]
        self.prior_variance = np.full(self.width, 1.0 / self.c.ridge)
        self.prior_variance[main_width:offset] /= self.c.pair_ridge  # pairs: shrunk harder
        self.prior_mean = np.zeros(self.width)
        if self.prior_columns:
            self.prior_variance[-self.prior_columns:] = 1.0 / self.c.prior_ridge
            self.prior_mean[-self.prior_columns:] = 1.0 / self.prior_columns

    # -- the search ----------------------------------------------------------------------------
    def valid_bounds(self) -> np.ndarray:
        """Each candidate's bound, 0 where its dominating term was violated."""
        return np.where(self.violated[self.terms], 0.0, self.bounds)

    def lower_bound(self, best: float) -> float:
        """The smallest valid bound among the open candidates not cut by ``best`` (inf: none)."""
        alive = self.open & (self.valid < best)
        return float(self.valid[alive].min()) if alive.any() else math.inf

    def next(self, best: float) -> int | None:
        """The next candidate to measure, or None when every candidate is measured or cut."""
        if self.prior is not None and len(self.measured) < self.c.initial_prior:
            alive = self.open[self.prior_order] & (self.valid[self.prior_order] < best)
            if alive.any():  # the sources' best first
                return int(self.prior_order[np.argmax(alive)])
        elif self.prior is None and len(self.measured) < self.c.initial:
            alive = np.flatnonzero(self.open & (self.valid < best))
            if not len(alive):
                return None
            if not self.measured and self.valid[alive].max() > 0:  # Telamon's: the smallest bound
                return int(alive[np.argmin(self.valid[alive])])
            return int(self.rng.choice(alive))
        if len(self.measured) >= self.fitted_at + max(1, int(self.c.refit_fraction * len(self.measured))):
            self._refit()
        self.proposals += 1
        if self.c.local_every and self.proposals % self.c.local_every == 0:
            i = self._local(best)
            if i is not None:
                return i
        if self.prior is not None:  # the priors' consensus takes its share first
            self.transfer_turns += 1
            if _turn(self.transfer_turns, self.c.transfer_share):
                i = self._from_transfer(best)
                if i is not None:
                    return i
        if self.prior is None and self.c.gp_share and len(self.measured) < self.c.gp_until:
            self.gp_turns += 1
            if _turn(self.gp_turns, self.c.gp_share):
                i = self._from_gp(best)
                if i is not None:
                    return i
        self.model_turns += 1
        share = self.c.forest_share if self.prior is None else self.c.prior_forest_share
        cross = self.c.cross_share if self.prior is None else 0.0
        if _turn(self.model_turns, cross):
            i = self._crossover(best)
            if i is not None:
                return i
        if _turn(self.model_turns, share):
            i = self._from_forest(best)
            if i is not None:
                return i
        for _ in range(2):
            while self.position < len(self.queue):  # every open candidate, by predicted time
                i = int(self.queue[self.position])
                self.position += 1
                if self.open[i] and self.valid[i] < best:
                    return i
            if not (self.open & (self.valid < best)).any():
                return None
            self._refit()  # the queue ran dry (failures give no time): queue what is open again
        return None

    def _neighbour_index(self, codes: np.ndarray) -> None:
        """Per parameter j, the candidates sorted by a hash of all their codes but j's: those
        sharing a hash with i differ from i in parameter j alone (a collision of the random
        64-bit hash would only add a far candidate to the proposals, never change a result)."""
        weights = np.random.default_rng(0).integers(1, 2**63, codes.shape[1], dtype=np.uint64) | np.uint64(1)
        varying = codes.max(axis=0, initial=0) > 0
        with np.errstate(over="ignore"):
            full = (codes.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
            self.hashes = [full - codes[:, j].astype(np.uint64) * weights[j] for j in np.flatnonzero(varying)]
        self.by_hash = [np.argsort(h, kind="stable") for h in self.hashes]
        self.full_weights = weights[varying]
        self.full_order = np.argsort(full, kind="stable")
        self.full_sorted = full[self.full_order]
        self.sorted_hashes = [h[order] for h, order in zip(self.hashes, self.by_hash)]
        self.near: dict[int, np.ndarray] = {}

    def _neighbours(self, i: int) -> np.ndarray:
        """The candidates one parameter away from candidate ``i``."""
        if i in self.near:
            return self.near[i]
        parts = []
        for h, order, ordered in zip(self.hashes, self.by_hash, self.sorted_hashes):
            low, high = np.searchsorted(ordered, h[i], "left"), np.searchsorted(ordered, h[i], "right")
            parts.append(order[low:high])
        near = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        self.near[i] = near[near != i]
        return self.near[i]

    def _local(self, best: float) -> int | None:
        """The predicted fastest open configuration one parameter away from one of the
        ``local_top`` (with priors ``prior_local_top``) best measured ones (the best first), or
        None."""
        for _, i in self.top:
            near = self._neighbours(i)
            near = near[self.open[near] & (self.valid[near] < best)]
            if len(near):
                return int(near[np.argmin(self.predicted[near])])
        return None

    def _crossover(self, best: float) -> int | None:
        """The predicted fastest open child of two of the ``cross_top`` best measured
        configurations (each parameter's value from either parent, one in d of them redrawn at
        random), or None when no child is an open candidate."""
        if len(self.measured) < 2 or not self.codes.shape[1]:
            return None
        k = min(self.c.cross_top, len(self.measured))
        top = np.asarray(self.measured)[np.argsort(self.log_times, kind="stable")[:k]]
        m, d = self.c.cross_children, self.codes.shape[1]
        first = self.codes[top[self.rng.integers(k, size=m)]]
        second = self.codes[top[self.rng.integers(k, size=m)]]
        child = np.where(self.rng.random((m, d)) < 0.5, first, second)
        redrawn = self.rng.random((m, d)) < 1.0 / d
        child = np.where(redrawn, (self.rng.random((m, d)) * self.sizes).astype(np.int64), child)
        with np.errstate(over="ignore"):
            hashes = (child.astype(np.uint64) * self.full_weights).sum(axis=1, dtype=np.uint64)
        at = np.minimum(np.searchsorted(self.full_sorted, hashes), len(self.full_sorted) - 1)
        found = self.full_order[at[self.full_sorted[at] == hashes]]
        found = found[self.open[found] & (self.valid[found] < best)]
        return int(found[np.argmin(self.predicted[found])]) if len(found) else None

    def _from_forest(self, best: float) -> int | None:
        """The open configuration with the smallest lower confidence bound of the forest, or None."""
        if not self.measured:
            return None
        due = self.forest_fitted + max(4, int(self.c.forest_refit * len(self.measured)))
        if len(self.measured) >= due:
            self._refit_forest(best)
        for _ in range(2):
            while self.forest_position < len(self.forest_queue):
                i = int(self.forest_queue[self.forest_position])
                self.forest_position += 1
                if self.open[i] and self.valid[i] < best:
                    return i
            self._refit_forest(best)  # ran dry (failures give no time): queue what is open again
        return None

    def _from_gp(self, best: float) -> int | None:
        """The open configuration with the smallest lower confidence bound of the Gaussian process
        (never below a valid bound), or None. Trained on the best half of at most ``gp_training``
        measurements and a random rest; failures are left out."""
        candidates = np.flatnonzero(self.open & (self.valid < best))
        if len(self.measured) < 2 or not len(candidates) or not self.codes.shape[1]:
            return None
        y = np.asarray(self.log_times)
        chosen = np.argsort(y, kind="stable")
        if len(chosen) > self.c.gp_training:
            half = self.c.gp_training // 2
            rest = self.rng.choice(chosen[half:], self.c.gp_training - half, replace=False)
            chosen = np.concatenate([chosen[:half], rest])
        due = self.gp_tuned + max(8, int(self.c.gp_refit * len(self.measured)))
        steps = 20 if len(self.measured) >= due else 0
        self.gp.fit(self.gp_x[np.asarray(self.measured)[chosen]], y[chosen], steps)
        if steps:
            self.gp_tuned = len(self.measured)
        if len(candidates) > self.c.gp_candidates:
            candidates = self.rng.choice(candidates, self.c.gp_candidates, replace=False)
        mean, spread = self.gp.predict(self.gp_x[candidates])
        with np.errstate(divide="ignore"):
            score = np.maximum(mean - self.c.gp_kappa * spread, np.log(self.valid[candidates]))
        return int(candidates[np.argmin(score)])

    def _from_transfer(self, best: float) -> int | None:
        """The open configuration first in the priors' trust-weighted consensus, or None."""
        if len(self.measured) > self.transfer.fitted:
            self.transfer.refit(self.measured, self.log_times)
        return self.transfer.next(self.open & (self.valid < best))

    def _refit_forest(self, best: float) -> None:
        """Grow the forest on every measurement and queue the open candidates not cut by
        ``best`` (at most ``forest_candidates`` of them) by mean minus ``forest_kappa`` spreads
        of its trees' predictions (never below a valid bound). With priors (``prior_residual``)
        the trees learn the residual of the sources' linear part (:mod:`.prior_residual`), which
        is added back to their predictions."""
        y = np.asarray(self.log_times)
        base = linear_part(self.prior, np.asarray(self.measured), y, self.c.residual_ridge) \
            if self.prior is not None and self.c.prior_residual else np.zeros(len(self.open))
        forest = ExtraTrees(self.c.forest_trees, rng=self.rng)
        forest.fit(self.tree_x[self.measured], y - base[self.measured])
        candidates = np.flatnonzero(self.open & (self.valid < best))
        if len(candidates) > self.c.forest_candidates:
            candidates = self.rng.choice(candidates, self.c.forest_candidates, replace=False)
        each = forest.predict_all(self.tree_x[candidates])
        score = base[candidates] + each.mean(axis=0) - self.c.forest_kappa * each.std(axis=0)
        with np.errstate(divide="ignore"):
            score = np.maximum(score, np.log(self.valid[candidates]))
        self.forest_queue = candidates[np.argsort(score, kind="stable")]
        self.forest_position, self.forest_fitted = 0, len(self.measured)

    def observe(self, i: int, time: float | None) -> None:
        """Candidate ``i`` was measured in ``time`` seconds (inf: failed; None: no time)."""
        self.open[i] = False
        if time is not None and math.isfinite(time) and time > 0:
            self.measured.append(i)
            self.log_times.append(math.log(time))
            top = self.c.local_top if self.prior is None else self.c.prior_local_top
            if len(self.top) < top or time < self.top[-1][0]:
                self.top = sorted(self.top + [(time, i)])[:top]

    def violate(self, term: int) -> None:
        """A measurement proved term ``term`` wrong: it cuts nothing any more."""
        if not self.violated[term]:
            self.violated[term] = True
            self.valid = self.valid_bounds()
            self.fitted_at = self.forest_fitted = -1  # requeue: those cut on that term are open again

    def _rows(self, indices: np.ndarray) -> np.ndarray:
        x = np.zeros((len(indices), self.width))
        np.put_along_axis(x, self.hot[indices], 1.0, axis=1)
        x[:, self.hot_width:] = self.dense[indices]
        return x

    def _refit(self) -> None:
        """Draw weights from the posterior (dual form: the measurements, at most ``training`` of
        them drawn at random, are few next to the features) and queue the open candidates by
        predicted time. Prior: weights N(prior_mean, noise^2 * prior_variance); noise: the
        residual spread."""
        if not self.measured:
            candidates = np.flatnonzero(self.open)
            self.queue = candidates[self.rng.permutation(len(candidates))] if self.prior is None \
                else self.prior_order[self.open[self.prior_order]]
            self.position, self.fitted_at = 0, 0
            return
        chosen = np.arange(len(self.measured))
        if len(chosen) > self.c.training:
            chosen = np.sort(self.rng.choice(chosen, self.c.training, replace=False))
        x = self._rows(np.asarray(self.measured)[chosen])
        y = np.asarray(self.log_times)[chosen]
        y = np.minimum(y, np.quantile(y, self.c.clip_quantile)) - x @ self.prior_mean
        offset = y.mean()
        y = y - offset
        spread = np.sqrt(self.prior_variance)
        draw_weights = spread * self.rng.standard_normal(self.width)
        draw_noise = self.rng.standard_normal(len(y))
        scaled = x * self.prior_variance
        solved = np.linalg.solve(scaled @ x.T + np.eye(len(y)),
                                 np.stack([y, x @ draw_weights, draw_noise], axis=1))
        noise = math.sqrt((y @ solved[:, 0] + 1e-4) / len(y))  # residual spread
        # a posterior draw (Matheron's rule): a prior draw, corrected towards the data
        explore = self.c.exploration * noise
        dual = solved[:, 0] - explore * (solved[:, 1] + solved[:, 2])
        weights = explore * draw_weights + scaled.T @ dual + self.prior_mean
        predicted = (weights[self.hot].sum(axis=1) + self.dense @ weights[self.hot_width:]
                     + offset)
        with np.errstate(divide="ignore"):
            predicted = np.maximum(predicted, np.log(self.valid))  # never below a valid bound
        candidates = np.flatnonzero(self.open)
        self.queue = candidates[np.argsort(predicted[candidates], kind="stable")]
        self.predicted = predicted
        self.position = 0
        self.fitted_at = len(self.measured)


def _turn(turn: int, share: float) -> bool:
    """Whether the ``turn``-th proposal (1-based) falls to an arm taking ``share`` of them."""
    return int(turn * share) > int((turn - 1) * share)


def _standard(column: np.ndarray) -> np.ndarray:
    """``column`` shifted to mean 0 and scaled to spread 1 (constant: zeros)."""
    spread = column.std()
    return (column - column.mean()) / spread if spread > 0 else column * 0.0
