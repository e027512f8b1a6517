"""The subcommands of ``beastgen``: one module per command, each with ``run(args) -> int``.

``beastgen.cli`` builds the parser and imports only the chosen command's module, so ``--help`` and a
``count`` never import the harness, Dask, pandas or matplotlib. ``common`` holds what several
commands share; ``on_cluster`` runs ``count``, ``enumerate`` and ``tune`` with ``--scheduler``.
"""
