"""Search strategies on the same results store and budget, each registered under its module's
name: ``guided`` (the default: a learnt order, warm-started by priors, with branch and bound's
proof when the space has bound terms), ``bound_order`` (Telamon's Algorithm 2: increasing bound)
and the HPL paper's baselines (``exhaustive``, ``random_search``, ``genetic``)."""
from .base import Candidate, SearchState, Strategy
from .bound_order import BoundOrder
from .exhaustive import Exhaustive
from .genetic import Genetic
from .guided import Guided
from .random_search import RandomSearch

STRATEGIES = {"guided": Guided, "bound_order": BoundOrder, "exhaustive": Exhaustive,
              "random_search": RandomSearch, "genetic": Genetic}
#: earlier names, still accepted
ALIASES = {"branch_and_bound": "guided", "random": "random_search"}
DEFAULT = "guided"

__all__ = ["Candidate", "SearchState", "Strategy", "STRATEGIES", "ALIASES", "DEFAULT", "BoundOrder",
           "Guided", "Exhaustive", "RandomSearch", "Genetic"]
