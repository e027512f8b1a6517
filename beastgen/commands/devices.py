"""``beastgen devices``: the built-in device profiles and the architecture bases; with ``--device``,
one profile's every property (``auto``: the GPU the driver reports)."""
import json

from ..devices import load_profile
from ..devices.profiles import (GPU_OWN_PROPERTIES, format_architectures_table, format_profile,
                                format_profiles_table)


def run(args) -> int:
    if args.device is not None:
        profile = load_profile(args.device)
        print(format_profile(profile))
        if args.json:
            print(json.dumps({"key": profile.key, "name": profile.name, "source": profile.source,
                              "properties": profile.properties}))
        return 0
    print(format_profiles_table())
    print(f"\narchitecture bases: a profile with base = \"KEY\" sets {', '.join(GPU_OWN_PROPERTIES)} "
          "(docs/devices.md)")
    print(format_architectures_table())
    return 0
