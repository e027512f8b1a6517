"""The Numba target: :mod:`.builder` prints the walk as Numba functions, one class per function in
:mod:`.functions` and :mod:`.estimator` (Chen's), :mod:`.module` the module's text around them."""
