"""``beastgen enumerate``: every valid configuration to a .csv, .parquet or .npy file
(``--scheduler``: :mod:`.on_cluster`)."""
import os

import numpy as np

from ..errors import BeastError
from ..output import AtomicOutput, write_csv
from ..progress import Elapsed
from .common import compile_target, describe_target, jobs, shows_progress


def run(args) -> int:
    plan = compile_target(args)
    output = args.output
    extension = os.path.splitext(output)[1].lower()
    if extension not in (".csv", ".parquet", ".npy"):
        raise BeastError(f"unknown output format '{extension}': use .csv, .parquet or .npy", output)
    if extension == ".parquet":
        try:  # optional dependencies (beastgen[data]), imported only for a .parquet file
            import pandas as pd
            import pyarrow  # noqa: F401
        except ImportError:
            raise BeastError("writing .parquet needs pandas and pyarrow: pip install 'beastgen[data]'") from None
    target = AtomicOutput(output)  # the path is checked before the work
    try:
        print(describe_target(plan))
        with Elapsed("enumerating", shows_progress(args)):
            configs = plan.enumerate(jobs=jobs(args))
    except BaseException:
        target.discard()
        raise
    seconds = plan.last_seconds
    with target as temporary, Elapsed(f"writing {output}", shows_progress(args)):
        if extension == ".npy":
            with open(temporary, "wb") as f:
                np.save(f, configs)
        elif extension == ".csv":
            write_csv(temporary, configs.dtype.names, configs.tolist())
        else:
            pd.DataFrame(configs).to_parquet(temporary, index=False)
    print(f"wrote {len(configs):,} configurations to {output} (enumeration {seconds:.3f} s)")
    return 0
