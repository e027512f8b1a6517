"""Loading: a space file opened (:mod:`.load`), and the plan cache that lets an unchanged command
skip it (:mod:`.plancache`; :mod:`.warm_count`, the short way of a warm count). Nothing is imported
here, so that a warm count imports only what it runs."""
