"""Stage 6, code generation: a plan printed as a readable Python module that Numba compiles."""
