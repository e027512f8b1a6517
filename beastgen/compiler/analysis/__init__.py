"""Stage 4, analysis of the specialized expressions: sympy proofs and 64-bit interval checks."""
