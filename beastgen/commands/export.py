"""``beastgen export``: the space for another tool (Kernel Tuner's valid configurations, T1 JSON)."""
from ..interop.export import to_t1, write_kernel_tuner
from ..loading.load import load
from ..support.progress import ShareBar
from .common import (compile_target, describe_target, learn_size, parse_settings, shows_progress,
                     size_text)


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
    shown = shows_progress(args)
    with ShareBar(f"enumerating {size_text(learn_size(plan))}", shown) as bar:
        configs = plan.enumerate(progress=bar)
    with ShareBar(f"writing {len(configs):,} configurations to {args.output}", shown) as bar:
        count = write_kernel_tuner(plan, args.output, configs, bar)
    print(f"wrote {count:,} valid configurations and tune_params to {args.output} (Kernel Tuner: "
          "Searchspace(None, None, None, from_cache=json.load(open(FILE))))")
    return 0
