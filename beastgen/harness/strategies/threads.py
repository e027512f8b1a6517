"""The BLAS threads of a strategy's model work. NumPy's BLAS starts as many threads as the machine
has cores; on the small matrices of a search's models they mostly wait for each other (on a busy
2-core machine one proposal took ten times the CPU of one thread), so the models run on the
threads the user asked for: one by default, or, when the environment sets a BLAS thread count
before beastgen starts (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ...), that one
(threadpoolctl sets and restores the count around each piece of model work)."""
from __future__ import annotations

import contextlib
import os

#: the environment variables through which a user sets the BLAS libraries' threads
VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS")


class BlasThreads:
    """``with threads():`` runs its block on ``count`` BLAS threads (0: one, unless the
    environment sets a count: then as it says)."""

    def __init__(self, count: int = 0):
        if count == 0 and any(os.environ.get(name) for name in VARIABLES):
            self.count = None  # the user's environment decides
        else:
            self.count = count or 1
        self.controller = None

    def __call__(self):
        if self.count is None:
            return contextlib.nullcontext()
        if self.controller is None:
            from threadpoolctl import ThreadpoolController  # imported where used: start-up
            self.controller = ThreadpoolController()
        return self.controller.limit(limits=self.count, user_api="blas")
