"""Search strategies on the same results store and budget: branch and bound (Telamon's Algorithm 2)
and the HPL paper's baselines (exhaustive, random, genetic)."""
from .base import Candidate, SearchState, Strategy
from .branch_and_bound import BranchAndBound
from .exhaustive import Exhaustive
from .genetic import Genetic
from .guided import GuidedBranchAndBound
from .random_search import RandomSearch

STRATEGIES = {"branch_and_bound": GuidedBranchAndBound, "bound_order": BranchAndBound, "exhaustive": Exhaustive, "random": RandomSearch,
              "genetic": Genetic}

__all__ = ["Candidate", "SearchState", "Strategy", "STRATEGIES", "BranchAndBound", "GuidedBranchAndBound", "Exhaustive",
           "RandomSearch", "Genetic"]
