"""Stage 6, code generation: one walk of a plan (:mod:`.nest`, target-neutral) printed by each
target's builder. Numba: :mod:`.module` writes the module (header, constants, helpers) around the
functions of :mod:`.numba_functions` and :mod:`.estimator`, printed by :mod:`.numba_nest`. C:
:mod:`.c_nest` (expressions by :mod:`.c_expression`, helpers in ``prelude.h``).
"""
