"""beastgen's default search as a Kernel Tuner strategy: one object in a ``tune_kernel`` call.

    import beastgen.kernel_tuner
    results, env = tune_kernel(name, source, size, args, tune_params, restrictions=restrictions,
                               strategy=beastgen.kernel_tuner.Strategy(priors=["old_gpu.json"]),
                               strategy_options={"max_fevals": 200})

:class:`Strategy` has what Kernel Tuner asks of a strategy, ``tune(searchspace, runner,
tuning_options)``. It builds beastgen's plan from the same definition (``tune_params``, the
restrictions, Kernel Tuner's block-size rule), checks that its configurations are exactly those of
Kernel Tuner's ``searchspace``, and runs beastgen's default search (``guided``, as ``beastgen
tune`` runs it: the same proposals for the same seed and measurements) on that plan. Every
configuration is measured through Kernel Tuner's own cost function and runner, so compile failures,
verification, observers, the cache, simulation mode, ``max_fevals`` and ``time_limit`` behave as
they do for Kernel Tuner's strategies, and it returns what they return: the list of result dicts.

Its options (:data:`_options`, Kernel Tuner's option table) come from the constructor or from
``strategy_options``; an unknown name is refused with Kernel Tuner's own message. ``priors`` are
Kernel Tuner cache files of the same kernel (any device; ``.json`` or ``.json.gz``) or beastgen
results stores, matched to the space by parameter names (:mod:`beastgen.harness.priors`).

What a Kernel Tuner script cannot give: bound terms (a script has no hardware model), so the search
proves nothing and gives no certificate; it optimises one objective, lower or higher is better
(times are read in seconds, any other objective as given, a higher-is-better one as its
reciprocal). In simulation mode, a configuration the cache lacks is skipped and costs nothing (as
in ``beastgen tune --backend replay``; Kernel Tuner's own strategies stop with an error there).

:func:`searchspace_options` hands Kernel Tuner a space enumerated by beastgen instead of building
its own (``strategy_options={"searchspace_construction_options": ...}``), which Kernel Tuner allows
only for devices of 1024 threads per block.
"""
from __future__ import annotations

import csv
import functools
import hashlib
import math
import os
import re
import sys
import warnings

from .errors import BeastError

#: the strategy's options as Kernel Tuner's strategies declare theirs: name -> (what, default)
_options = dict(
    priors=("measurements of the same kernel from elsewhere that warm-start the search: Kernel "
            "Tuner cache files of any device (.json, .json.gz) or beastgen results stores", None),
    seed=("seed of the search (default: tune_kernel's seed, else 0)", None),
    good_enough=("stop once a configuration's objective is this good or better (in the "
                 "objective's units: ms for time)", None),
)

#: Kernel Tuner's common options that this strategy refuses (it chooses its own first configuration)
_UNSUPPORTED = ["x0"]


class Strategy:
    """beastgen's default search for ``tune_kernel(..., strategy=Strategy(...))`` (see the module
    docstring); ``priors``, ``seed`` and ``good_enough`` as in :data:`_options`, also given through
    ``strategy_options`` (the same option in both places with two values is an error)."""

    def __init__(self, priors=None, seed=None, good_enough=None):
        self.options = {"priors": priors, "seed": seed, "good_enough": good_enough}
        _check_options(self.options)

    def __repr__(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.options.items() if v is not None)
        return f"beastgen.kernel_tuner.Strategy({given})"

    def tune(self, searchspace, runner, tuning_options):
        """Search Kernel Tuner's ``searchspace`` with ``runner``; the list of results (dicts) of the
        configurations measured, in order, as Kernel Tuner's strategies return it."""
        from kernel_tuner.strategies.common import CostFunc
        from kernel_tuner.util import StopCriterionReached

        from .harness.priors import prior_matrix
        from .harness.store import config_key
        from .harness.strategies import Guided, SearchState

        options = self.chosen(tuning_options)
        objective = Objective.of(tuning_options, options["good_enough"])
        cost_func = CostFunc(searchspace, tuning_options, runner, snap=False)  # times the strategy
        plan = beastgen_plan(searchspace, getattr(getattr(runner, "kernel_options", None),
                                                  "kernel_name", "kernel"))
        configuration = matched_configurations(plan, searchspace)
        uncached = (uncached_configurations(searchspace, tuning_options.cache)
                    if runner.simulation_mode else set())
        priors = [os.fspath(p) for p in options["priors"]]
        search = Guided(plan, seed=options["seed"],
                        priors=functools.partial(prior_matrix, priors) if priors else None)
        state = SearchState()
        try:
            for candidate in search.propose(state):
                config = configuration(candidate.config)
                if config in uncached:
                    continue  # not measured: costs nothing, and the search is told no time
                value = cost_func(config, check_restrictions=False)
                time = objective.time(value)
                key = config_key(candidate.config)
                state.times[key] = time
                if time < state.best_time:
                    state.best_time, state.best_key = time, key
                if objective.good_enough(value):
                    break
        except StopCriterionReached as e:
            if tuning_options.verbose:
                print(e)
        return cost_func.results

    def chosen(self, tuning_options) -> dict:
        """The options of this run: the constructor's, with ``strategy_options`` (checked as Kernel
        Tuner checks its strategies' options); ``priors`` a list, ``seed`` an int."""
        from kernel_tuner.strategies.common import get_options

        given = tuning_options.strategy_options or {}
        values = dict(zip(_options, get_options(given, _options, unsupported=list(_UNSUPPORTED))))
        _check_options(values)
        for name, value in self.options.items():
            if name in given and value is not None and given[name] != value:
                raise ValueError(f"strategy option {name} is {given[name]!r} in strategy_options but "
                                 f"{value!r} in beastgen.kernel_tuner.Strategy(): give it once")
            if name not in given:
                values[name] = value
        priors = values["priors"]
        values["priors"] = [] if priors is None else [priors] if isinstance(priors, (str, os.PathLike)) \
            else list(priors)
        if values["seed"] is None:
            values["seed"] = tuning_options.get("seed") or 0
        return values


def _check_options(options: dict) -> None:
    """A ValueError naming the option whose value cannot be used."""
    priors, seed, good_enough = options["priors"], options["seed"], options["good_enough"]
    if priors is not None and not isinstance(priors, (str, os.PathLike)) and (
            not isinstance(priors, (list, tuple))
            or not all(isinstance(p, (str, os.PathLike)) for p in priors)):
        raise ValueError(f"strategy option priors must be a file name or a list of file names, not "
                         f"{priors!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"strategy option seed must be an integer of at least 0, not {seed!r}")
    if good_enough is not None and (isinstance(good_enough, bool) or
                                    not isinstance(good_enough, (int, float)) or
                                    not math.isfinite(good_enough)):
        raise ValueError(f"strategy option good_enough must be a number, not {good_enough!r}")


class Objective:
    """Kernel Tuner's objective as the search reads it: a positive number to minimise."""

    def __init__(self, name: str, higher_is_better: bool, good_enough):
        self.name, self.higher_is_better, self.target = name, higher_is_better, good_enough

    @classmethod
    def of(cls, tuning_options, good_enough) -> Objective:
        objectives = tuning_options.objective
        higher = tuning_options.objective_higher_is_better
        if isinstance(objectives, (list, tuple)):
            if len(objectives) != 1:
                raise ValueError(f"beastgen's search optimises one objective, not {len(objectives)} "
                                 f"({', '.join(map(str, objectives))})")
            objectives, higher = objectives[0], higher[0]
        return cls(objectives, bool(higher), good_enough)

    def value(self, cost: float) -> float | None:
        """The objective's value from the cost function's answer (None: the configuration failed)."""
        if cost == sys.float_info.max:  # Kernel Tuner's cost of a failed configuration
            return None
        return -cost if self.higher_is_better else cost

    def time(self, cost: float) -> float:
        """What the search minimises: seconds for ``time`` (Kernel Tuner's are milliseconds), the
        reciprocal of a higher-is-better objective, any other as it is; inf for a failure or a
        value that is not positive."""
        value = self.value(cost)
        if value is None or not math.isfinite(value) or value <= 0:
            return math.inf
        if self.higher_is_better:
            return 1.0 / value
        return value / 1000.0 if self.name == "time" else value

    def good_enough(self, cost: float) -> bool:
        value = self.value(cost)
        if self.target is None or value is None:
            return False
        return value >= self.target if self.higher_is_better else value <= self.target


# --------------------------------------------------------------------------------------------------
# The space: beastgen's plan of Kernel Tuner's definition, and Kernel Tuner's configurations on it
# --------------------------------------------------------------------------------------------------
def beastgen_plan(searchspace, kernel_name: str = "kernel", generated_dir=None):
    """beastgen's compiled plan of the definition Kernel Tuner built ``searchspace`` from: its
    ``tune_params``, its restrictions as the user gave them, and its rule that the block size
    parameters' product is at most the device's ``max_threads`` (left out where it rejects
    nothing: simulation mode's device has a billion threads)."""
    from .interop import from_kernel_tuner

    tune_params = searchspace.tune_params
    names = [n for n in searchspace.block_size_names if n in tune_params]
    max_threads = searchspace.max_threads
    if not (names and max_threads is not None and _largest_product(tune_params, names) > max_threads):
        max_threads, names = None, None
    name = "kt_" + (re.sub(r"[^A-Za-z0-9_]+", "_", kernel_name)[:60] or "kernel")
    space = from_kernel_tuner(tune_params, searchspace.original_restrictions, max_threads=max_threads,
                              block_size_names=names, name=name)
    return space.specialize(generated_dir=generated_dir)


def _largest_product(tune_params: dict, names: list[str]) -> float:
    """The largest product of one value of each of ``names`` (inf where one is not a number)."""
    product = 1
    for name in names:
        try:
            product *= max(abs(v) for v in tune_params[name])
        except TypeError:
            return math.inf
    return product


def matched_configurations(plan, searchspace):
    """A function from a configuration of ``plan`` (dict) to Kernel Tuner's own tuple of it, after
    checking that the two hold the same configurations (a :class:`BeastError` naming some of the
    difference when they do not)."""
    names = list(searchspace.param_names)
    columns = plan.columns
    if sorted(columns) != sorted(names):
        raise BeastError(f"beastgen's space has the parameters {columns}, Kernel Tuner's "
                         f"{names}", "<kernel_tuner>")
    rows = plan.enumerate()
    index = searchspace.get_list_dict()
    ours = list(zip(*(rows[n].tolist() for n in names))) if len(rows) else []
    missing = [config for config in ours if config not in index]
    if missing or len(ours) != searchspace.size:
        known = set(ours)
        extra = [config for config in searchspace.list if config not in known][:3]
        raise BeastError(
            f"beastgen's enumeration of the definition holds {len(ours):,} configurations, Kernel "
            f"Tuner's searchspace {searchspace.size:,}"
            + (f"; only beastgen's: {_configs(names, missing[:3])}" if missing else "")
            + (f"; only Kernel Tuner's: {_configs(names, extra)}" if extra else "")
            + " (parameters in this order: " + ", ".join(names) + ")", "<kernel_tuner>")
    configurations = searchspace.list

    def configuration(config: dict) -> tuple:
        return configurations[index[tuple(config[n] for n in names)]]
    return configuration


def _configs(names, configs) -> str:
    return ", ".join(str(tuple(c)) for c in configs)


def uncached_configurations(searchspace, cache: dict) -> set:
    """The configurations of ``searchspace`` that Kernel Tuner's simulation ``cache`` lacks (its
    keys: the values joined by commas), with a warning giving their number."""
    missing = {config for config in searchspace.list
               if ",".join(str(v) for v in config) not in cache}
    if missing:
        warnings.warn(f"the simulation cache lacks {len(missing):,} of the {searchspace.size:,} "
                      "configurations of the searchspace: beastgen's search skips them (they cost "
                      "no evaluation)", stacklevel=3)
    return missing


def searchspace_options(tune_params: dict, restrictions=None, path: str | None = None) -> dict:
    """Kernel Tuner's ``searchspace_construction_options`` that give it beastgen's enumeration of
    ``tune_params`` and ``restrictions`` (with Kernel Tuner's rule: ``block_size_x/y/z``'s product
    at most 1024) instead of building its own: the configurations are written as the CSV file
    Kernel Tuner's ``ATF_cache`` framework reads (``path``, by default a file named by the
    definition's hash in beastgen's generated directory). Kernel Tuner accepts it only where the
    device allows 1024 threads per block (CUDA and HIP GPUs; not simulation mode) and reads it
    with pandas."""
    from .interop import from_kernel_tuner
    from .support.output import AtomicOutput
    from .support.generated_dir import generated_directory

    space = from_kernel_tuner(tune_params, restrictions, max_threads=1024, name="kt_searchspace")
    if path is None:
        digest = hashlib.sha256(space.source.encode()).hexdigest()[:16]
        path = os.path.join(generated_directory(), "kernel_tuner", f"searchspace_{digest}.csv")
    rows = space.specialize().enumerate()
    names = list(tune_params)
    with AtomicOutput(path) as temporary, open(temporary, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter=";")
        writer.writerow(names)
        writer.writerows(zip(*(rows[n].tolist() for n in names)) if len(rows) else [])
    return {"framework": "ATF_cache", "path_to_ATF_cache": path}


def _describe(options: dict) -> str:
    return "\n".join(f"     * {name}: {what}, default {default}." for name, (what, default) in options.items())


Strategy.tune.__doc__ += f"""
    Its strategy_options (also arguments of :class:`Strategy`):

{_describe(_options)}
     * max_fevals, time_limit, searchspace_construction_options: as for every Kernel Tuner strategy.
"""
