"""``beastgen generate``: write the generated enumerator."""
import os
import time

from .common import compile_target


def run(args) -> int:
    start = time.time()
    plan = compile_target(args)
    if plan.plan is None:
        print(f"nothing to generate: {plan.empty_reason}")
        return 0
    plan.write()
    print(f"{_written(plan.path, start)} {_shown(plan.path)} "
          f"(loop order: {', '.join(plan.plan.order)})")
    if plan.native is not None:
        print(f"{_written(plan.native.source_path, start)} {_shown(plan.native.source_path)} "
              "(the count as C, compiled beside it)")
    return 0


def _written(path: str, start: float) -> str:
    """"wrote" for a file this command wrote, "unchanged" for one that already held the source."""
    return "wrote" if os.path.getmtime(path) >= start - 1e-3 else "unchanged:"


def _shown(path: str) -> str:
    relative = os.path.relpath(path)
    return os.path.abspath(path) if relative.startswith(os.pardir) else relative
