"""The default search (:class:`Guided`): models learnt during the run, mixed by two recipes,
with branch and bound's proof where the space has bound terms (:mod:`.strategy`)."""
from .strategy import Guided, GuidedSearch

__all__ = ["Guided", "GuidedSearch"]
