"""How many examples a property test draws: ``@settings(..., max_examples=examples(44))``.

The README's whole suite (``python -m pytest``) and any targeted run draw the full number. The quick
set (``python -m pytest -m 'not slow'``) runs every property test too, on a quarter of its examples
(at least 2), so that it stays within minutes; tests/conftest.py decides which run this is, before
the test modules are imported."""
import math

#: True in a run that leaves out the tests marked ``slow`` but runs the unmarked ones (set by
#: tests/conftest.py's pytest_configure)
QUICK = False
#: the share of its full number of examples a property test draws in the quick set
QUICK_SHARE = 0.25


def examples(full: int) -> int:
    """``full`` examples, or the quick set's share of them."""
    return max(2, math.ceil(full * QUICK_SHARE)) if QUICK else full


def leaves_out_slow(mark_expression: str) -> bool:
    """Whether ``-m mark_expression`` runs the unmarked tests but not those marked only ``slow``
    (``not slow``, ``not slow and not opencl``; not the default ``not full``, not ``gpu``)."""
    if not mark_expression:
        return False
    from _pytest.mark.expression import Expression  # pytest's own reading of -m
    expression = Expression.compile(mark_expression)
    return (expression.evaluate(lambda name, **_: False)
            and not expression.evaluate(lambda name, **_: name == "slow"))
