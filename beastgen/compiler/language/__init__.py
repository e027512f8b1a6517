"""Stage 1, the language: the objects a space file builds, an expression tree with Python semantics."""
