"""The guided search's two recipes, "without priors" and "with priors": which models, which
proposers with which shares, and every constant in one option table per recipe
(``name: Option(description, default)``; ``beastgen tune --strategy-option NAME=VALUE`` sets one).
The defaults were chosen by leave-one-GPU-out cross-validation over the replay files
(``benchmarks/search/``: the research record, the script and its log).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models.base import Schedule
from ..models.extra_trees import Forest, no_baseline
from ..models.gaussian_process import Process
from ..models.residual import SourcesBaseline
from ..models.ridge import ThompsonRidge
from ..models.transfer import Transfer
from ..options import Option, markdown, resolve
from .confidence import Confidence
from .features import (derived_inputs, forest_inputs, process_inputs, regression_features,
                       source_inputs, source_process_inputs, stacked, with_sources)
from .mixer import Mixer, Stage
from .proposers import Crossover, Local, ModelMinimum, SmallestBoundThenRandom, SourcesFirst

POSITIVE = 1e-9

#: the regression (:class:`~..models.ridge.ThompsonRidge`), in both recipes
REGRESSION = {
    "ridge": Option("prior precision of every regression weight (ridge penalty) on standardised "
                    "features", 1.0, POSITIVE),
    "pair_ridge": Option("extra shrinkage of the pairwise one-hot features", 1.0, POSITIVE),
    "refit_fraction": Option("the regression is refitted after this fraction more measurements",
                             0.05),
    "refit_min": Option("... after at least this many more", 1, 1),
    "exploration": Option("scale of the posterior spread in the regression's draw (0: always its "
                          "predicted fastest)", 0.3),
    "training": Option("at most this many measurements (drawn at random) train the regression",
                       512, 1),
    "large_space": Option("on a space of more than this many configurations (the replay files' "
                          "spaces have at most 116,928) the regression predicts only what a "
                          "proposer scores, not every configuration at each fit, and its minimum "
                          "is sought among large_candidates open ones", 200000, 1),
    "large_candidates": Option("... drawn at random at each of its fits", 16384, 1),
}
#: the forest (:class:`~..models.extra_trees.Forest`) proposing by its lower confidence bound
FOREST = {
    "forest_share": Option("share of the last stage's turns taken by the extra-trees forest's "
                           "lower confidence bound (the regression's prediction takes the rest)",
                           0.5, 0, 1),
    "forest_trees": Option("trees in the forest", 16, 1),
    "forest_kappa": Option("the forest proposes the smallest mean minus this many spreads of its "
                           "trees", 2.0),
    "forest_refit": Option("the forest is refitted after this fraction more measurements", 0.1),
    "forest_refit_min": Option("... after at least this many more", 4, 1),
    "forest_candidates": Option("the forest ranks at most this many open configurations (drawn at "
                                "random) per fit", 16384, 1),
}
#: the Gaussian process (:class:`~..models.gaussian_process.Process`)
PROCESS = {
    "gp_training": Option("the Gaussian process is fitted on at most this many measurements (the "
                          "best half, the rest drawn at random); later ones join them until they "
                          "are twice as many", 256, 2),
    "gp_candidates": Option("the Gaussian process ranks at most this many open configurations, "
                            "drawn at random at each fit of its hyperparameters", 4096, 1),
    "gp_refit": Option("its hyperparameters are refitted after this fraction more measurements",
                       0.1),
    "gp_refit_min": Option("... after at least this many more", 8, 1),
    "gp_steps": Option("steps of Adam on the log marginal likelihood per hyperparameter fit", 20),
    "gp_until": Option("the Gaussian process proposes only while fewer than this many "
                       "configurations are measured (every constant was chosen on searches of at "
                       "most 1,000)", 1000),
}
CERTIFICATE = {
    "certificate_every": Option("proposals between updates of the certificate's lower bound (a "
                                "scan of every open configuration)", 16, 1),
    "tolerance": Option("the confidence is that no configuration left is more than this fraction "
                        "faster than the best measured", 0.01, POSITIVE),
    "model_threads": Option("BLAS threads of the models (0: one, or what the environment's "
                            "OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, ... say when set)", 0),
}


def confidence_options(spread: float, after: int, quiet: int) -> dict[str, Option]:
    """The confidence's rule (:mod:`.confidence`), each recipe's defaults chosen on the replay
    files by ``benchmarks/search/confidence.py calibrate`` (not calibrated yet: docs/search.md)."""
    return {
        "confidence_spread": Option("the Gaussian process's spread is scaled by this in the "
                                    "confidence", spread, POSITIVE),
        "confidence_after": Option("the confidence is 0 before this many measurements", after, 0),
        "confidence_quiet": Option("... and until this many measurements in a row have not "
                                   "improved the best by more than the tolerance", quiet, 0),
    }


WITHOUT_PRIORS = {
    "initial": Option("configurations measured before the models are used: the first the "
                      "smallest lower bound (where there are bound terms), the others drawn "
                      "uniformly at random", 8, 1),
    "local_share": Option("share of the proposals (after the initial ones) taken by the open "
                          "neighbour (one parameter changed) of the best measured configurations "
                          "that the regression predicts fastest", 0.5, 0, 1),
    "local_top": Option("those neighbours are of at most this many of the best measured "
                        "configurations (the best first)", 3, 1),
    "gp_share": Option("share of the proposals that are not local taken by the Gaussian "
                       "process's lower confidence bound", 0.25, 0, 1),
    "gp_kappa": Option("the Gaussian process proposes the smallest mean minus this many standard "
                       "deviations", 2.0),
    **PROCESS,
    "cross_share": Option("share of the last stage's turns taken by crossover: the child of two of "
                          "the best measured configurations that the regression predicts "
                          "fastest", 0.2, 0, 1),
    "cross_top": Option("crossover's parents are drawn among this many of the best measured "
                        "configurations", 8, 1),
    "cross_children": Option("children drawn per crossover proposal", 256, 1),
    **FOREST,
    **REGRESSION,
    **CERTIFICATE,
    **confidence_options(1.5, 0, 0),
}

WITH_PRIORS = {
    "initial": Option("configurations measured in the order of the sources' mean score before the "
                      "models are used", 2, 1),
    "local_share": WITHOUT_PRIORS["local_share"],
    "local_top": Option(WITHOUT_PRIORS["local_top"].description, 6, 1),
    "transfer_share": Option("share of the proposals that are not local taken in the order of the "
                             "sources' consensus, each source trusted by its rank correlation with "
                             "this run's measurements", 0.5, 0, 1),
    "transfer_temperature": Option("a source's trust falls by e for every this much of its rank "
                                   "correlation below the best source's", 0.3, POSITIVE),
    "gp_share": Option("share of the proposals that are neither local nor the transfer's taken by "
                       "the lower confidence bound of a Gaussian process on the parameters and the "
                       "sources' scores", 0.5, 0, 1),
    "gp_kappa": Option(WITHOUT_PRIORS["gp_kappa"].description, 1.0),
    "gp_after": Option("the Gaussian process proposes once this many configurations are measured "
                       "(where the sources are right, the optimum comes within about a dozen)", 12),
    **PROCESS,
    **FOREST,
    "residual_ridge": Option("ridge penalty of the sources' weights in the linear part whose "
                             "residual the forest learns", 1.0, POSITIVE),
    **REGRESSION,
    "prior_ridge": Option("prior precision of the regression's weights of the sources' scores "
                          "around their equal share", 0.1, POSITIVE),
    **CERTIFICATE,
    **confidence_options(0.7, 0, 80),
}


def table(priors: bool) -> dict[str, Option]:
    return WITH_PRIORS if priors else WITHOUT_PRIORS


def options(priors: bool, given: dict):
    """The options of the recipe (``given`` ones replacing the defaults); a clear error for a
    name it does not have."""
    chosen, other = (WITH_PRIORS, WITHOUT_PRIORS) if priors else (WITHOUT_PRIORS, WITH_PRIORS)
    what = f"the guided search {'with' if priors else 'without'} priors"
    elsewhere = f"the guided search {'without' if priors else 'with'} priors"
    return resolve(chosen, given, what, {name: elsewhere for name in other if name not in chosen})


@dataclass
class Recipe:
    mixer: Mixer  # the proposals
    process: Process  # the Gaussian process that the confidence reads
    confidence: Confidence | None = None  # how sure the search is of its best


def build(history, values: np.ndarray, sources: np.ndarray | None, chosen, rng,
          confidence_rng) -> Recipe:
    """The recipe's proposers over ``history`` (``values``: n x the varying parameters' numeric
    values; ``sources``: the priors' scores or None; ``chosen``: :func:`options`), drawing from
    ``rng``, and its confidence, drawing from ``confidence_rng`` alone."""
    if sources is None:
        recipe = without_priors(history, values, chosen, rng)
    else:
        recipe = with_priors(history, values, sources, chosen, rng)
    recipe.confidence = Confidence(history, recipe.process, chosen.gp_candidates, chosen.tolerance,
                                   chosen.confidence_spread, chosen.confidence_after,
                                   chosen.confidence_quiet, confidence_rng)
    return recipe


def without_priors(history, values, o, rng) -> Recipe:
    """Random initial configurations, then half local proposals; of the rest a quarter from the
    Gaussian process, and of what remains crossover children, the forest's and the regression's."""
    features = regression_features(history, values)
    regression = _regression(features, len(values), *_regression_prior(features, o), o, rng)
    forest = Forest(stacked(forest_inputs(history) + derived_inputs(values)),
                    o.forest_trees, Schedule(o.forest_refit, o.forest_refit_min), rng, no_baseline)
    process = Process(process_inputs(history), o.gp_training, o.gp_refit, o.gp_refit_min,
                      o.gp_steps, rng)
    return Recipe(Mixer(history, SmallestBoundThenRandom(history, rng), o.initial, [regression], [
        Stage([(Local(history, regression, o.local_top), o.local_share)]),
        Stage([(ModelMinimum(history, process, o.gp_kappa, o.gp_candidates, rng), o.gp_share)],
              until=o.gp_until),
        Stage([(Crossover(history, regression, o.cross_top, o.cross_children, rng), o.cross_share),
               (ModelMinimum(history, forest, o.forest_kappa, o.forest_candidates, rng), o.forest_share),
               (ModelMinimum(history, regression, 0.0, _everywhere(history, o), rng), 1.0)]),
    ]), process)


def with_priors(history, values, sources, o, rng) -> Recipe:
    """The sources' best first, then half local proposals; of the rest half in the sources'
    trusted consensus, then (from ``gp_after`` measurements on) the Gaussian process on the
    parameters and the sources, and the forest on the residual of the sources' linear part and the
    regression with the sources as features."""
    features = with_sources(regression_features(history, values), sources)
    variance, mean = _regression_prior(features, o)
    count = sources.shape[1]  # their weights, last: an equal share of one, shrunk by prior_ridge
    variance[-count:] = 1.0 / o.prior_ridge
    mean[-count:] = 1.0 / count
    regression = _regression(features, len(values), variance, mean, o, rng)
    forest = Forest(stacked(forest_inputs(history) + source_inputs(sources)),
                    o.forest_trees, Schedule(o.forest_refit, o.forest_refit_min), rng,
                    SourcesBaseline(sources, o.residual_ridge))
    process = Process(source_process_inputs(process_inputs(history), sources), o.gp_training,
                      o.gp_refit, o.gp_refit_min, o.gp_steps, rng)
    transfer = Transfer(sources, o.transfer_temperature)
    return Recipe(Mixer(history, SourcesFirst(history, sources), o.initial, [regression], [
        Stage([(Local(history, regression, o.local_top), o.local_share)]),
        Stage([(ModelMinimum(history, transfer, 0.0, None, rng), o.transfer_share)]),
        Stage([(ModelMinimum(history, process, o.gp_kappa, o.gp_candidates, rng), o.gp_share)],
              after=o.gp_after, until=o.gp_until),
        Stage([(ModelMinimum(history, forest, o.forest_kappa, o.forest_candidates, rng), o.forest_share),
               (ModelMinimum(history, regression, 0.0, _everywhere(history, o), rng), 1.0)]),
    ]), process)


def _everywhere(history, o) -> int | None:
    """How many open configurations the regression's minimum is sought among: all (None) unless
    the space is large."""
    return None if len(history.open) <= o.large_space else o.large_candidates


def _regression_prior(features, o) -> tuple[np.ndarray, np.ndarray]:
    """The prior variance and mean of the regression's weights: 1 / ``ridge``, the pairs' shrunk
    by ``pair_ridge`` more; mean 0."""
    variance = np.full(features.width, 1.0 / o.ridge)
    variance[features.pairs_from:features.hot_width] /= o.pair_ridge
    return variance, np.zeros(features.width)


def _regression(features, n, variance, mean, o, rng) -> ThompsonRidge:
    return ThompsonRidge(features.hot, features.hot_width, features.dense, n, variance, mean,
                         o.exploration, o.training, Schedule(o.refit_fraction, o.refit_min), rng,
                         o.large_space)


def documentation() -> str:
    """The two option tables in Markdown, as docs/search.md shows them."""
    return "\n\n".join(f"**{title}** ({len(chosen)} options):\n\n{markdown(chosen)}"
                       for title, chosen in (("Without priors", WITHOUT_PRIORS),
                                             ("With priors", WITH_PRIORS)))
