"""The compiler: a space file to a compiled exact enumerator, one stage after another.

language -> model -> specialize -> analysis -> plan -> codegen -> runtime. A stage imports only
the stages before it (``tests/test_architecture.py`` keeps it so); ``ARCHITECTURE.md`` tells what
each passes to the next.
"""
