"""Stage 6, code generation: a plan printed as a readable Python module that Numba compiles.

:mod:`.module` writes the module (header, constants, helpers) and asks :mod:`.nest` for the loop
nests and :mod:`.estimator` for Chen's estimator; expressions are printed by the language's printer.
"""
