"""``beastgen export``: the space for another tool (Kernel Tuner's valid configurations, T1 JSON)."""
from ..interop.export import to_t1, write_kernel_tuner
from ..loading import load
from ..progress import Elapsed
from .common import compile_target, describe_target, parse_settings, shows_progress


def run(args) -> int:
    if args.format == "t1":
        space = load(args.space)
        document = to_t1(space, args.output, device=args.device, settings=parse_settings(args.settings))
        configuration = document["ConfigurationSpace"]
        print(f"wrote {args.output}: T1 space {space.name} with "
              f"{len(configuration['TuningParameters'])} parameters and "
              f"{len(configuration['Conditions'])} conditions")
        return 0
    plan = compile_target(args)
    print(describe_target(plan))
    with Elapsed("exporting", shows_progress(args)):
        count = write_kernel_tuner(plan, args.output)
    print(f"wrote {count:,} valid configurations and tune_params to {args.output} (Kernel Tuner: "
          "Searchspace(None, None, None, from_cache=json.load(open(FILE))))")
    return 0
