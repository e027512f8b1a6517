"""The C target: :mod:`.builder` prints the walk as C, one class per function in :mod:`.functions`,
:mod:`.module` the library's source around them; expressions with Python's semantics in
:mod:`.expression` (helpers in the package data files ``prelude.h`` and ``divisors.h``)."""
