"""The shape of the package (ARCHITECTURE.md): every import goes forward through the stages, no
import circle, and no ``_private`` name crosses a module line. Read from the source with ``ast``,
function-level imports included, so a cycle cannot hide inside a function."""
import ast
import os

import networkx as nx

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "beastgen")

#: the layers, lowest first: a module may import its own layer and those below, never one above
LAYERS = [
    ("foundations", ["errors", "table", "version", "devices", "bounds", "nestlib", "quoting", "interrupt", "progress",
                     "output", "trust", "deep"]),
    ("language", ["compiler.language"]),
    ("model", ["compiler.model"]),
    ("specialize", ["compiler.specialize"]),
    ("analysis", ["compiler.analysis"]),
    ("plan", ["compiler.plan"]),
    ("codegen", ["compiler.codegen"]),
    ("runtime", ["compiler.runtime", "compiler"]),
    ("users of the compiler", ["reference", "interop"]),
    ("loading", ["loading", "plancache"]),
    ("harness", ["harness"]),
    ("distributed", ["distributed"]),
    ("command line", ["cli", "commands", "__main__", ""]),
]


def _modules() -> dict[str, str]:
    """Dotted module name (without ``beastgen.``; "" for the package) -> file path."""
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, PACKAGE)[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                found[".".join(parts)] = path
    return found


def _layer(module: str) -> int:
    best, index = -1, None
    for position, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".") or prefix == "") and len(prefix) > best:
                best, index = len(prefix), position
    return index


def _imports(module: str, path: str, modules: dict) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken, line) for every import of a beastgen module in the file."""
    package = module.split(".") if path.endswith("__init__.py") else module.split(".")[:-1]
    package = [p for p in package if p]
    found = []
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "beastgen" or alias.name.startswith("beastgen."):
                    found.append((alias.name[len("beastgen."):], [], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and (node.module == "beastgen" or node.module.startswith("beastgen.")):
                target = node.module[len("beastgen."):] if node.module != "beastgen" else ""
            else:
                continue
            names = [a.name for a in node.names]
            submodules = [f"{target}.{n}".lstrip(".") for n in names if f"{target}.{n}".lstrip(".") in modules]
            if submodules:
                found.extend((sub, [], node.lineno) for sub in submodules)
            else:
                found.append((target, names, node.lineno))
    return found


def test_every_module_has_a_layer():
    assert [m for m in _modules() if _layer(m) is None] == []


def test_imports_only_go_forward_and_no_private_name_crosses_a_module():
    modules = _modules()
    problems = []
    for module, path in modules.items():
        for target, names, line in _imports(module, path, modules):
            where = f"beastgen/{os.path.relpath(path, PACKAGE)}:{line}"
            if _layer(target) > _layer(module):
                problems.append(f"{where}: {LAYERS[_layer(module)][0]} imports {target} "
                                f"({LAYERS[_layer(target)][0]}), a later stage")
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                problems.append(f"{where}: imports private {', '.join(private)} from {target}")
    assert problems == []


def test_no_import_cycle():
    modules = _modules()
    graph = nx.DiGraph()
    for module, path in modules.items():
        for target, _, _ in _imports(module, path, modules):
            if target != module and not module.startswith(target + ".") and target != "":
                graph.add_edge(module, target)  # a module's own package __init__ runs first anyway
    assert list(nx.simple_cycles(graph)) == []
