"""``beastgen export-results``: a tune run's results as a Kernel Tuner cache file or T4 results."""
from ..harness.store import read_run
from ..interop.results import kernel_tuner_cache, t4_results, write_results


def run(args) -> int:
    description, rows = read_run(args.results, args.run)
    if args.format == "kernel_tuner":
        document = kernel_tuner_cache(description, rows, args.kernel_name, args.device_name,
                                      args.results)
    else:
        document = t4_results(description, rows)
    write_results(document, args.output)
    print(f"wrote {len(rows):,} results of run {description['run']} ({description['space']} on "
          f"{description['device']}) to {args.output} ({args.format}, times in ms)")
    return 0
