"""``beastgen enumerate``: every valid configuration to a .csv, .parquet or .npy file
(``--scheduler``: :mod:`.on_cluster`)."""
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
            write_csv(temporary, configs.dtype.names, configs.tolist())
        else:
            write_parquet(temporary, configs)
    print(f"wrote {len(configs):,} configurations to {output} (enumeration {seconds:.3f} s, "
          f"writing {time.perf_counter() - writing:.3f} s)")
    return 0
