"""Chunks of a nest's work: ranges ``(lo, hi)`` of split nodes, balanced by estimates or claimed
one node at a time by threads (shared by the compiled plan and :mod:`beastgen.distributed`)."""
from __future__ import annotations


from ...errors import BeastError
from ...support.interrupt import POLL_SECONDS

WHOLE = (0, 2 ** 62)  # a chunk holding every split node
#: Knuth descents per split node of the census that balances chunks: a rough census is enough
#: for that, and costs little next to the work
CENSUS_SAMPLES_PER_NODE = 8


def balanced_chunks(estimates, n_chunks: int) -> list[tuple[int, int]]:
    """Contiguous ranges ``(lo, hi)`` covering ``range(len(estimates))``, at most ``n_chunks`` of
    them and never empty, with about equal sums of ``estimates``: the cuts are the prefix sums
    closest to the multiples of total / n_chunks. Negative and NaN estimates count as 0; when every
    estimate is 0, the nodes are cut into equal numbers."""
    import numpy as np
    values = np.nan_to_num(np.asarray(estimates, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
    values = np.maximum(values, 0.0)
    n = len(values)
    if n == 0:
        return []
    m = max(1, min(int(n_chunks), n))
    prefix = np.concatenate([[0.0], np.cumsum(values)])
    total = prefix[-1]
    if total <= 0:
        cuts = [round(j * n / m) for j in range(1, m)]
    else:
        cuts = []
        for j in range(1, m):
            target = total * j / m
            i = int(np.searchsorted(prefix, target))  # prefix[i - 1] < target <= prefix[i]
            if 0 < i <= n and target - prefix[i - 1] < prefix[i] - target:
                i -= 1
            cuts.append(i)
    # strictly increasing, inside [1, n - 1], leaving room for the chunks after each cut
    for j in range(len(cuts)):
        low = cuts[j - 1] + 1 if j else 1
        cuts[j] = min(max(cuts[j], low), n - (m - 1 - j))
    bounds = [0, *cuts, n]
    return [(bounds[j], bounds[j + 1]) for j in range(m)]


def claiming(jobs: int, work, next_node, progress=None) -> list:
    """``work(thread)`` on threads 0 to ``jobs - 1``, which claim split nodes from ``next_node[0]``
    (see :class:`.codegen.c.functions.CClaimingWriter`); their results in order. ``progress()`` is
    called every :data:`POLL_SECONDS` while they run; Ctrl-C leaves them no node to claim (each
    ends with its node) and raises."""
    import concurrent.futures  # here: a count in the calling thread never needs it (logging...)

    pool = concurrent.futures.ThreadPoolExecutor(jobs)
    futures = [pool.submit(work, thread) for thread in range(jobs)]
    try:
        while concurrent.futures.wait(futures, POLL_SECONDS).not_done:
            if progress is not None:
                progress()
    except KeyboardInterrupt:
        next_node[0] = WHOLE[1]
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return [future.result() for future in futures]


def as_chunk(chunk: tuple[int, int] | None) -> tuple[int, int]:
    """``chunk`` (None: every split node) as a checked ``(lo, hi)``."""
    lo, hi = chunk or WHOLE
    if not 0 <= lo <= hi:
        raise BeastError(f"a chunk is a range of split nodes lo <= i < hi, got {chunk!r}")
    return int(lo), int(hi)
