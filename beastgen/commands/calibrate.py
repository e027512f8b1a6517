"""``beastgen calibrate``: measure a device with microbenchmarks and write its profile."""
from ..errors import BeastError
from ..harness.calibrate import REPETITIONS, calibrate, parse_target, write_profile


def run(args) -> int:
    api, index = parse_target(args.device)
    output = args.output or f"calibrated-{api}{index}.toml"
    if not output.lower().endswith(".toml"):
        raise BeastError(f"the profile must be a .toml file (--device takes it by that extension), "
                         f"not {output!r}")
    if args.repetitions is not None and args.repetitions < 1:
        raise BeastError("--repetitions must be at least 1")
    calibration = calibrate(args.device, repetitions=args.repetitions or REPETITIONS,
                            progress=not args.no_progress)
    profile = write_profile(calibration, output)
    print(f"calibrated {calibration.name} ({args.device}) in {calibration.seconds:.1f} s:")
    for key, entry in calibration.fields.items():
        print(f"  {key} = {entry.value:.6g}")
    print(f"wrote {output}: use it with --device {output} (profile '{profile.key}')")
    return 0
