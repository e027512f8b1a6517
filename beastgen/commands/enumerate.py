"""``beastgen enumerate``: every valid configuration to a .csv, .parquet or .npy file
(``--scheduler``: :mod:`.on_cluster`). The size is known first (counted when that is cheap, else
estimated), and a result that would not fit in memory is refused with the numbers."""
import itertools
import os
import time

import numpy as np

from ..errors import BeastError
from ..output import AtomicOutput, write_csv, write_parquet
from ..progress import Elapsed
from .common import compile_target, describe_target, jobs, shows_progress


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
        check_fits(plan, extension)
        with Elapsed("enumerating", shows_progress(args)):
            configs = plan.enumerate(jobs=jobs(args))
    except BaseException:
        target.discard()
        raise
    seconds = plan.last_seconds
    writing = time.perf_counter()
    with target as temporary, Elapsed(f"writing {output}", shows_progress(args)):
        if extension == ".npy":
            with open(temporary, "wb") as f:
                np.save(f, configs)
        elif extension == ".csv":
            write_csv(temporary, configs.dtype.names, itertools.chain.from_iterable(
                configs[i:i + CSV_BLOCK].tolist() for i in range(0, len(configs), CSV_BLOCK)))
        else:
            write_parquet(temporary, configs)
    print(f"wrote {len(configs):,} configurations to {output} (enumeration {seconds:.3f} s, "
          f"writing {time.perf_counter() - writing:.3f} s)")
    return 0


#: rows converted to Python values at a time for a .csv file (all at once took 5 times the array)
CSV_BLOCK = 1 << 16
#: seconds spent learning the size before enumerating (an exact count when it fits, else Knuth)
SIZE_SECONDS = 0.5


def check_fits(plan, extension: str) -> None:
    """Refuse an enumeration whose rows (8 bytes a value; twice that for Parquet, whose columns are
    copied) will not fit in the memory available, even at the low end of the size's estimate."""
    available = available_memory()
    if available is None:
        return
    size = plan.estimate(seconds=SIZE_SECONDS, method="knuth")
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
