"""The version of beastgen (the generated modules record it)."""
__version__ = "0.1.0"
