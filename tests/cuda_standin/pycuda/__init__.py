"""A STAND-IN for pycuda, for tests only (see driver.py): not pycuda, and no evidence that a GPU run
works."""
VERSION = (2026, 1)
VERSION_TEXT = "2026.1 (stand-in)"
