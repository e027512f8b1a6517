"""``beastgen devices``: the built-in device profiles."""
from ..devices import format_profiles_table


def run(args) -> int:
    print(format_profiles_table())
    return 0
