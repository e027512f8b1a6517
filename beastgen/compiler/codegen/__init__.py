"""Stage 6, code generation: one walk of a plan (:mod:`.nest`, target-neutral, reading the plan's
facts in :mod:`.facts` and the guards of :mod:`.guards`) printed by each target's builder, a folder
per target: :mod:`.numba` (the module the runtime imports) and :mod:`.c` (the shared library of the
count and enumeration)."""
