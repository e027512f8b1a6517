"""The plan cache: a command run again on an unchanged space file (``.py`` and the local files it
imports, or a T1 ``.json``), device profile, settings and beastgen answers from a JSON record
beside the generated module, so it neither reads the space nor imports the specializer, the
planner, sympy or networkx.

The record is data (JSON, never pickle) in the generated directory, read only after that
directory passes the trust check, through its descriptor (:class:`beastgen.support.generated_dir.PrivateDirectory`);
it names the generated module and the sha256 of its text, checked before the module is used.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys

from ..compiler import native
from ..compiler.model import display_path, imported_module_names
from ..compiler.runtime import (BuiltExecutable, CompiledPlan, Executable, Target, compile_space,
                                file_name_part)
from ..devices import load_profile
from ..devices.profiles import DEFAULT_DEVICE, DeviceProfile
from ..support.deep import deeply
from ..support.generated_dir import PrivateDirectory, generated_directory, open_private_directory, sha256_of
from ..version import __version__
from .warm_count import MAX_RECORD_BYTES, PACKAGE_DIR, index_name, package_digest, read_json

RECORD_SUFFIX = ".plan.json"


def compile_cached(path: str | os.PathLike, device=None, settings: dict | None = None,
                   generated_dir: str | None = None) -> CompiledPlan:
    """The compiled plan of the space file at ``path``, from the plan cache when nothing it depends
    on changed, else built (and recorded): ``.py`` space files and T1 ``.json`` files alike. Where
    nothing is recorded for the space and device at all (a cold run), the record's key is worked
    out while the C compiler runs (:meth:`Recorder.compiling`), not before the build."""
    shown = display_path(os.fspath(path))
    settings = settings or {}
    source = _read_bytes(shown)
    if source is None:  # the normal build reports why
        from .load import load
        return deeply(lambda: compile_space(load(path), device=device, settings=settings,
                                            generated_dir=generated_dir))
    # the default device's profile is package data (beastgen's source in the key covers it): it is
    # read (TOML) only for a build
    profile = device if isinstance(device, DeviceProfile) or device is None else load_profile(device)
    device_key = DEFAULT_DEVICE if profile is None else profile.key
    built_in = profile is None or (not isinstance(device, DeviceProfile) and profile.source == "built-in")
    fingerprint = ["built-in", device_key] if built_in else profile.fingerprint()
    directory = generated_directory(generated_dir)
    stem = f"{file_name_part(_space_name(shown))}__{file_name_part(device_key)}__"

    def build() -> CompiledPlan:
        from .load import load
        return deeply(lambda: compile_space(load(path), device=profile or load_profile(None),
                                            settings=settings, generated_dir=generated_dir))

    def key() -> tuple[str, str]:
        digest = _cache_key(shown, source, fingerprint, settings)
        return f"{stem}{digest[:16]}{RECORD_SUFFIX}", digest

    opened = open_private_directory(directory, create=False)  # None: not there yet
    # a default-device T1 count's short way (beastgen.loading.warm_count) finds the record by this index
    index = index_name(shown) if device is None and shown.endswith(".json") else None
    if opened is None or not _records_begin_with(opened, stem):
        return _recording(build(), key, index)
    record_name, digest = key()
    cached = _read_record(opened, record_name, digest, build)
    if cached is not None:
        _write_index(opened, index, digest, record_name)
        return CompiledPlan(cached)
    return _recording(build(), lambda: (record_name, digest), index)


class Recorder:
    """Records a freshly built plan in the plan cache each time its executable learns something
    (:class:`~beastgen.compiler.runtime.BuiltExecutable`'s ``recorder``): once its module is
    written (so that nothing lands in the generated directory before the command's own checks
    pass) and as its C libraries are known. ``key()`` is the record's name and key, asked once,
    when first needed: where nothing was recorded yet, while the C compiler runs."""

    def __init__(self, key, index: str | None = None):
        self._key, self._keyed, self.index = key, None, index

    def record_key(self) -> tuple[str, str]:
        """The record's file name and key (the sha256 of what the plan depends on), worked out once."""
        if self._keyed is None:
            self._keyed = self._key()
        return self._keyed

    def compiling(self, executable: BuiltExecutable) -> None:
        """While the C compiler runs: the record's key (beastgen's source and the space's local
        imports hashed)."""
        self.record_key()

    def learnt(self, executable: BuiltExecutable) -> None:
        """The record written again with what ``executable`` knows now."""
        record_name, digest = self.record_key()
        _write_record(executable.directory, record_name, digest, executable)
        _write_index(executable.directory, self.index, digest, record_name)


def _recording(plan: CompiledPlan, key, index: str | None) -> CompiledPlan:
    """``plan`` (freshly built), its executable recorded in the plan cache from now on."""
    if isinstance(plan.executable, BuiltExecutable):
        plan.executable.recorder = Recorder(key, index)
    return plan


class CachedExecutable(Executable):
    """The executable of a compiled plan known from its cache record: counting needs only the
    generated module or the C library the record names (each checked against the recorded sha256);
    the specialized space, plan and source are built on first use (``specialized``, ``plan``...)."""

    def __init__(self, record: dict, module_path: str | None, build, record_name: str,
                 directory: PrivateDirectory):
        super().__init__(module_path, directory)
        self._record, self._build, self._built = record, build, None
        self._record_name = record_name
        self._native_all = None  # the library of every C function, once loaded (False: none)

    @property
    def built(self) -> BuiltExecutable:
        """The executable built from the space (what the record does not hold), built once."""
        if self._built is None:
            self._built = self._build().executable
        return self._built

    specialized = property(lambda self: self.built.specialized)
    plan = property(lambda self: self.built.plan)
    source = property(lambda self: self.built.source)

    def native_source(self, functions=None) -> str | None:
        """The plan's count (or ``functions``) as C (built from the space: the record holds no plan)."""
        return self.built.native_source(functions)

    @property
    def empty_reason(self) -> str | None:
        return self._record["empty_reason"]

    @property
    def counted_tail(self) -> int:
        return int(self._record["counted_tail"])

    @property
    def columns(self) -> list[str]:
        return list(self._record["columns"])

    @property
    def target(self) -> Target:
        return Target(**self._record["target"])

    @property
    def iteration_bound(self) -> int | None:
        return self._record["iteration_bound"]

    @property
    def node_iteration_bound(self) -> int | None:
        return self._record["node_iteration_bound"]

    @property
    def split_iteration_bound(self) -> int | None:
        return self._record["split_iteration_bound"]

    def write(self) -> str | None:
        """The generated module's path: its text was checked against the record, or, when the
        record knows no module yet (the C library counted), it is built and written now."""
        if self.path and self._record["module_sha256"] is None:
            self._write_built()
        return self.path

    def module_text(self) -> str:
        """The module's text read through the directory's descriptor, once its sha256 is the
        recorded one; else built from the space and written again (and recorded)."""
        if self._built is None:
            data = self.directory.read(os.path.basename(self.path))
            if data is not None and sha256_of(data) == self._record["module_sha256"]:
                return data.decode("utf-8")
        self._write_built()
        return self.built.source

    def _write_built(self) -> None:
        """The module built from the space written, and its sha256 recorded."""
        self.built.write()
        self._record["module_sha256"] = hashlib.sha256(self.built.source.encode("utf-8")).hexdigest()
        _update_record(self.directory, self._record_name, self._record)

    def load_native(self):
        """The library the record names, once its sha256 matches; built (and recorded) when the
        record does not know it yet or the file no longer matches."""
        if self.path is None or not native.enabled():
            return None
        known = self._record.get("native")
        if known is not None and known["library"] is None:
            return None  # the C target does not print this plan, or there was no C compiler
        if (library := native.recorded_library(self.directory, known)) is not None:
            return native.load(library, known["functions"], self.every_native_function)
        nest = self.built.native  # compiled again where it changed since it was recorded
        self._record["native"] = _native_entry(nest)
        _update_record(self.directory, self._record_name, self._record)
        return nest

    def load_every_native_function(self) -> None:
        known = self._record.get("native")
        if known is None or known.get("library") is not None:  # (None: no library, recorded)
            super().load_every_native_function()

    def library_of_every_function(self):
        """The recorded library of every C function, once its sha256 matches; else built (and
        recorded) from the space."""
        if self._native_all is None:
            known = self._record.get("native_all")
            if (library := native.recorded_library(self.directory, known)) is not None:
                self._native_all = native.load(library)
            if not self._native_all:
                self._native_all = self.built.library_of_every_function() or False
                self._record["native_all"] = _native_entry(self._native_all)
                _update_record(self.directory, self._record_name, self._record)
        return self._native_all or None


def _read_bytes(path: str) -> bytes | None:
    """The content of the file at ``path``; None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _records_begin_with(directory: PrivateDirectory, stem: str) -> bool:
    """Whether ``directory`` holds a plan record whose name begins with ``stem``."""
    try:
        return any(n.startswith(stem) and n.endswith(RECORD_SUFFIX) for n in directory.names())
    except OSError:
        return False


def _cache_key(shown: str, source: bytes, device, settings: dict) -> str:
    """The sha256 of everything the compiled plan of the space file ``shown`` (its content:
    ``source``) depends on, on the device of that fingerprint (a built-in profile's: its key, the
    profile being package data, which beastgen's source covers)."""
    blob = json.dumps({
        "beastgen": [__version__, package_digest()],
        "path": shown,  # origins in the generated code name it
        "space": hashlib.sha256(source).hexdigest(),
        # a T1 file is data: it imports nothing
        "imports": {} if shown.endswith(".json") else _local_import_digests(source, shown),
        "device": device,
        "settings": sorted((k, repr(v)) for k, v in settings.items()),
    }, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _local_import_digests(source: bytes, path: str) -> dict[str, str]:
    """sha256 of every local file the space file imports, directly or through another local file:
    modules found on ``sys.path`` outside the standard library, site-packages and beastgen (found
    without being executed; a local package counts with all its ``.py`` files)."""
    import importlib.machinery

    installed = None  # sysconfig's paths: a few ms the first time, asked only for a module found
    digests: dict[str, str] = {}
    pending = [(source, path)]
    while pending:
        text, where = pending.pop()
        for name in _imported_names(text, where) - {"beastgen"}:
            spec = importlib.machinery.PathFinder.find_spec(name, sys.path)
            origin = getattr(spec, "origin", None)
            if not origin or not os.path.isfile(origin):
                continue
            origin = os.path.abspath(origin)
            installed = installed or _installed_roots()
            if any(origin.startswith(root + os.sep) for root in installed):
                continue
            files = [origin]
            if os.path.basename(origin) == "__init__.py":
                files = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.dirname(origin))
                               for f in fs if f.endswith(".py"))
            for file in files:
                if file in digests:
                    continue
                with open(file, "rb") as f:
                    content = f.read()
                digests[file] = hashlib.sha256(content).hexdigest()
                pending.append((content, file))
    return digests


#: the lines importing beastgen alone that space files begin with
_BEASTGEN_IMPORTS = frozenset({b"import beastgen", b"import beastgen as beast"})


def _imported_names(source: bytes, path: str) -> set[str]:
    """The top-level modules a file imports: ``{"beastgen"}`` at once when every line holding the
    word ``import`` is a plain import of beastgen (every import statement holds it), else from the
    file's syntax tree (:func:`~beastgen.compiler.model.imported_module_names`)."""
    if all(line.strip() in _BEASTGEN_IMPORTS for line in source.splitlines() if b"import" in line):
        return {"beastgen"}
    return imported_module_names(source, path)


def _installed_roots() -> set[str]:
    """The standard library's, site-packages' and beastgen's folders: modules there are not local."""
    import sysconfig

    roots = {os.path.abspath(p) for key, p in sysconfig.get_paths().items()
             if key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return roots | {PACKAGE_DIR}


def _space_name(shown: str) -> str:
    return os.path.splitext(os.path.basename(shown))[0]


def _read_record(directory: PrivateDirectory, record_name: str, digest: str,
                 build) -> CachedExecutable | None:
    """The cached executable the record describes, or None when there is none or it no longer holds
    (a record someone else could have written is no record)."""
    record = read_json(directory, record_name)
    if record is None:
        return None
    try:
        if record["key"] != digest:
            return None
        module = record["module"]
        if module is None:
            return CachedExecutable(record, None, build, record_name, directory)
        if os.path.basename(module) != module or not module.endswith(".py"):
            return None
        if record["module_sha256"] is not None:  # None: not written yet (see CachedExecutable.write)
            text = directory.read(module)
            if text is None or sha256_of(text) != record["module_sha256"]:
                return None
        Target(**record["target"])  # well formed
        int(record["counted_tail"])
        if not all(isinstance(record[name], (int, type(None))) for name in
                   ("iteration_bound", "node_iteration_bound", "split_iteration_bound")):
            return None
        return CachedExecutable(record, directory.file_path(module), build, record_name, directory)
    except (OSError, KeyError, TypeError, ValueError):
        return None


def _write_record(directory: PrivateDirectory, record_name: str, digest: str,
                  built: BuiltExecutable) -> None:
    """Record a freshly built executable: the sha256 of its module once written, its native
    library once that was looked for (a :class:`~beastgen.compiler.native.NativeNest` of the count,
    or False for none; None: not looked for), and the library of every C function once built."""
    nest, every = built.native_state
    record = {"key": digest,
              "module": os.path.basename(built.path) if built.path else None,
              "module_sha256": (hashlib.sha256(built.source.encode("utf-8")).hexdigest()
                                if built.written else None),
              "empty_reason": built.empty_reason, "columns": built.columns,
              "counted_tail": str(built.counted_tail),
              "target": built.target.as_dict(), "iteration_bound": built.iteration_bound,
              "node_iteration_bound": built.node_iteration_bound,
              "split_iteration_bound": built.split_iteration_bound}
    if nest is not None:
        record["native"] = _native_entry(nest)
    if every is not None:
        record["native_all"] = _native_entry(every)
    _update_record(directory, record_name, record)


def _write_index(directory: PrivateDirectory, index: str | None, digest: str, record_name: str) -> None:
    """The index of :mod:`beastgen.loading.warm_count` (when ``index`` is a name): the record's name and key."""
    if index is not None:
        _update_record(directory, index, {"key": digest, "record": record_name})


def _native_entry(nest) -> dict:
    if not nest:
        return {"library": None}
    return {"library": os.path.basename(nest.path), "sha256": nest.sha256,
            "functions": list(nest.functions)}


def _update_record(directory: PrivateDirectory, name: str, record: dict) -> None:
    """Write the record (nothing when the directory cannot be written: the module's own write
    reports that)."""
    try:
        text = json.dumps(record, indent=1) + "\n"
        if len(text) <= MAX_RECORD_BYTES:
            directory.write_if_changed(name, text)
    except (OSError, TypeError, ValueError):
        pass
