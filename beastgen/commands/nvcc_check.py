"""``beastgen nvcc-check``: ptxas's registers of a sample of configurations against ``regs``."""
import json

from ..harness.nvcc_check import nvcc_check
from .common import parse_settings


def run(args) -> int:
    check, columns = nvcc_check(args.space, device=args.device, settings=parse_settings(args.settings),
                                samples=args.samples, seed=args.seed, generated_dir=args.generated_dir)
    print(check.report(columns))
    if args.json:
        print(json.dumps(check.as_dict(), default=str))
    return 0
