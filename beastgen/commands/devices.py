"""``beastgen devices``: the built-in device profiles and the architecture bases."""
from ..devices import GPU_OWN_PROPERTIES, format_architectures_table, format_profiles_table


def run(args) -> int:
    print(format_profiles_table())
    print(f"\narchitecture bases: a profile with base = \"KEY\" sets {', '.join(GPU_OWN_PROPERTIES)} "
          "(docs/devices.md)")
    print(format_architectures_table())
    return 0
