"""The shape of the package (ARCHITECTURE.md): every import goes forward through the stages, no
import circle, and no ``_private`` name crosses a module line (imported by name, or reached through
a module: ``L._name``). Read from the source with ``ast``, function-level imports included, so a
cycle cannot hide inside a function. The layers are read from ARCHITECTURE.md's table, their one
place: a module it does not list fails."""
import ast
import os
import re

import networkx as nx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(REPO, "beastgen")


def _read_layers() -> list[tuple[str, list[str]]]:
    """(layer, module prefixes) for each row of the layer table in ARCHITECTURE.md, lowest first.

    In the "where" column, `folder/` is a package (every module under it), `name.py` a module
    (`__init__.py` its package), `folder/`: `a.py`, `b.py` modules of that folder; what is in
    parentheses, and files that are not Python, describe and are not read."""
    with open(os.path.join(REPO, "ARCHITECTURE.md"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = lines.index("| layer | where | passes on |") + 2  # past the header and |---|
    layers = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        layer, where = (cell.strip() for cell in line.split("|")[1:3])
        modules, folder = [], None
        for token, colon in re.findall(r"`([^`]+)`(:?)", re.sub(r"\([^)]*\)", "", where)):
            if token.endswith("/"):
                folder = token[:-1].replace("/", ".")
                modules.append(folder)
                folder = folder if colon else None
            elif token.endswith(".py"):
                path = token[:-3] if "/" in token or folder is None else f"{folder}/{token[:-3]}"
                modules.append(re.sub(r"\.?__init__$", "", path.replace("/", ".")))
        layers.append((layer, modules))
    return layers


#: the layers, lowest first: a module may import its own layer and those below, never one above
LAYERS = _read_layers()


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


def _layer(module: str) -> int | None:
    """The layer of ``module``: that of the longest listed prefix (``""`` is the package alone)."""
    best, index = -1, None
    for position, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or (prefix and module.startswith(prefix + "."))) and len(prefix) > best:
                best, index = len(prefix), position
    return index


def _package(module: str, path: str) -> list[str]:
    """The package a relative import in ``module`` (at ``path``) starts from."""
    package = module.split(".") if path.endswith("__init__.py") else module.split(".")[:-1]
    return [p for p in package if p]


def _from_target(node: ast.ImportFrom, package: list[str]) -> str | None:
    """The beastgen module a ``from ... import`` reads from (None: not beastgen)."""
    if node.level:
        base = package[:len(package) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))
    if node.module and (node.module == "beastgen" or node.module.startswith("beastgen.")):
        return node.module[len("beastgen."):] if node.module != "beastgen" else ""
    return None


def _imports(module: str, path: str, modules: dict) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken, line) for every import of a beastgen module in the file."""
    package = _package(module, path)
    found = []
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "beastgen" or alias.name.startswith("beastgen."):
                    found.append((alias.name[len("beastgen."):], [], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(node, package)
            if target is None:
                continue
            names = [a.name for a in node.names]
            submodules = [f"{target}.{n}".lstrip(".") for n in names if f"{target}.{n}".lstrip(".") in modules]
            if submodules:
                found.extend((sub, [], node.lineno) for sub in submodules)
            else:
                found.append((target, names, node.lineno))
    return found


def _private_attributes(path: str, modules: dict, module: str | None = None):
    """(module, private name, line) for every ``alias._name`` in the file where ``alias`` is a
    beastgen module bound by an import (``import beastgen.x as L``, ``from . import x``)."""
    if module is None:
        module = re.sub(r"\.?__init__$", "", os.path.relpath(path, PACKAGE)[:-3].replace(os.sep, "."))
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "beastgen" or alias.name.startswith("beastgen."):
                    aliases[alias.asname or "beastgen"] = alias.name[len("beastgen."):] \
                        if alias.asname else ""
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(node, _package(module, path))
            for alias in node.names if target is not None else []:
                if f"{target}.{alias.name}".lstrip(".") in modules:
                    aliases[alias.asname or alias.name] = f"{target}.{alias.name}".lstrip(".")
    return sorted((aliases[node.value.id], node.attr, node.lineno) for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id in aliases and node.attr.startswith("_")
                  and not node.attr.startswith("__"))


def test_every_module_has_a_layer():
    assert [m for m in _modules() if _layer(m) is None] == []


def test_the_layer_table_names_only_modules_that_exist():
    modules = _modules()
    assert len(LAYERS) >= 10 and all(prefixes for _, prefixes in LAYERS)
    assert [p for _, prefixes in LAYERS for p in prefixes
            if not any(m == p or m.startswith(p + ".") for m in modules)] == []


def test_an_unlisted_module_has_no_layer():
    """The package's own ``__init__`` is listed; that does not list every top-level module."""
    assert _layer("") is not None and _layer("not_a_listed_module") is None
    assert _layer("harness.a_new_backend") == _layer("harness")


def test_a_private_name_through_a_module_alias_is_found(tmp_path):
    path = os.path.join(PACKAGE, "harness", "kernel.py")
    probe = tmp_path / "probe.py"
    probe.write_text("from ..compiler.language import nodes as L\nfrom ..compiler import native\n"
                     "x = L._hidden()\ny = native._remove\nz = L.public\n")
    modules = _modules()
    found = _private_attributes(str(probe), modules, module="harness.probe")
    assert sorted(found, key=lambda f: f[2]) == [("compiler.language.nodes", "_hidden", 3),
                                                 ("compiler.native", "_remove", 4)]
    assert _private_attributes(path, modules) == []


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
        for target, name, line in _private_attributes(path, modules):
            if target != module:
                problems.append(f"beastgen/{os.path.relpath(path, PACKAGE)}:{line}: uses private "
                                f"{name} of {target}")
    assert problems == []


def test_no_import_cycle():
    modules = _modules()
    graph = nx.DiGraph()
    for module, path in modules.items():
        for target, _, _ in _imports(module, path, modules):
            if target != module and not module.startswith(target + ".") and target != "":
                graph.add_edge(module, target)  # a module's own package __init__ runs first anyway
    assert list(nx.simple_cycles(graph)) == []
