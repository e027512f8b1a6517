"""``beastgen enumerate``: every valid configuration to a .csv, .parquet or .npy file
(``--scheduler``: :mod:`.on_cluster`). The size is known first (counted when that is cheap, else
estimated), and a result that would not fit in memory is refused with the numbers."""
import itertools
import os
import time
from collections.abc import Iterator

import numpy as np

from ..errors import BeastError
from ..support.output import AtomicOutput, write_csv, write_parquet
from ..support.progress import Elapsed, ShareBar
from .common import compile_target, describe_target, jobs, learn_size, shows_progress, size_text


def run(args) -> int:
    plan = compile_target(args)
    output = args.output
    extension = os.path.splitext(output)[1].lower()
    if extension not in (".csv", ".parquet", ".npy"):
        raise BeastError(f"unknown output format '{extension}': use .csv, .parquet or .npy", output)
    if extension == ".parquet":
        try:  # an optional dependency (beastgen[data]), imported only for a .parquet file
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise BeastError("writing .parquet needs pyarrow: pip install 'beastgen[data]'") from None
    target = AtomicOutput(output)  # the path is checked before the work
    try:
        print(describe_target(plan))
        size = learn_size(plan)
        check_fits(plan, extension, size)
        with ShareBar(f"enumerating {size_text(size)}", shows_progress(args)) as bar:
            configs = plan.enumerate(jobs=jobs(args), progress=bar)
    except BaseException:
        target.discard()
        raise
    seconds = plan.last_seconds
    writing = time.perf_counter()
    description = f"writing {len(configs):,} configurations to {output}"
    with target as temporary:
        if extension == ".csv":
            with ShareBar(description, shows_progress(args)) as bar:
                write_csv(temporary, configs.dtype.names, itertools.chain.from_iterable(
                    _reporting(configs[i:i + CSV_BLOCK].tolist(), bar, (i + CSV_BLOCK) / len(configs))
                    for i in range(0, len(configs), CSV_BLOCK)),
                    [i for i, name in enumerate(configs.dtype.names)
                     if configs.dtype[name].kind in "UOS"])
        else:
            with Elapsed(description, shows_progress(args)):
                if extension == ".npy":
                    with open(temporary, "wb") as f:
                        np.save(f, configs)
                else:
                    write_parquet(temporary, configs)
    print(f"wrote {len(configs):,} configurations to {output} (enumeration {seconds:.3f} s, "
          f"writing {time.perf_counter() - writing:.3f} s)")
    return 0


#: rows converted to Python values at a time for a .csv file (all at once took 5 times the array)
CSV_BLOCK = 1 << 16


def _reporting(rows: list, bar, done: float) -> Iterator:
    """``rows``, telling ``bar`` that the share ``done`` of the work is done once they are written
    (the csv module takes the next block when it has written this one)."""
    yield from rows
    bar(min(done, 1.0), 0.0)


def check_fits(plan, extension: str, size) -> None:
    """Refuse an enumeration whose rows (8 bytes a value; twice that for Parquet, whose columns are
    copied) will not fit in the memory available, even at the low end of ``size``."""
    available = available_memory()
    if available is None:
        return
    row_bytes = 8 * len(plan.columns) * (2 if extension == ".parquet" else 1)
    if size.low * row_bytes <= available:
        return
    what = (f"{size.count:,.0f} valid configurations" if size.method == "exact" else
            f"about {size.count:,.0f} valid configurations (95% confidence interval "
            f"{size.low:,.0f} to {size.high:,.0f})")
    raise BeastError(f"the space has {what}: {_bytes(size.low * row_bytes)} in memory at "
                     f"{row_bytes} bytes a row, more than the {_bytes(available)} available; "
                     "narrow it (--set) or count it (beastgen count)")


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux's MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:,.1f} {unit}" if unit != "B" else f"{n:,.0f} B"
        n /= 1000
    return ""
