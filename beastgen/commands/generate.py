"""``beastgen generate``: write the generated enumerator."""
import os

from .common import compile_target


def run(args) -> int:
    plan = compile_target(args)
    if plan.plan is None:
        print(f"nothing to generate: {plan.empty_reason}")
        return 0
    plan.write()
    print(f"wrote {os.path.relpath(plan.path)} (loop order: {', '.join(plan.plan.order)})")
    if plan.native is not None:
        print(f"wrote {os.path.relpath(plan.native.source_path)} (the count as C, compiled beside it)")
    return 0
