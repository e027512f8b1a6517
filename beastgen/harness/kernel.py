"""How a space declares the kernel it tunes (in the spirit of Kernel Tuner's ``tune_kernel``).

A space file binds one kernel to its space::

    kernel = beast.kernel(
        source="kernels/gemm.cl",            # relative to the space file ({"opencl": ..., "cuda": ...} for several)
        name="gemm",                          # the kernel function
        defines=lambda c: {"BLK_M": c["blk_m"], ...},   # or a list of names; default: every iterator
        block=(dim_m, dim_n),                 # work-group (thread-block) size: space expressions
        grid=((M + blk_m - 1) // blk_m, (N + blk_n - 1) // blk_n),   # number of work-groups
        arguments=lambda s: [...],            # s: the settings -> NumPy arrays and NumPy scalars
        reference=lambda args, s: [...],      # expected values of the outputs (None for the others)
        tolerance={"s": 1e-4, "d": 1e-10},    # by the setting `precision`, or one number
        timeout=10.0,                         # seconds for one configuration's runs (a hang is killed)
        problem_size=("M", "N"),              # settings a Kernel Tuner cache file's problem_size sets
    )

The loader ignores the Kernel object (it is no space variable). ``block`` and ``grid`` entries are
space expressions (iterators, settings, device properties, arithmetic on them), ints, or callables
of the configuration dict (iterators and settings).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from ..compiler.language import nodes as L
from ..compiler.language.evaluate import Evaluator
from ..errors import BeastError, a_type

LANGUAGES = ("opencl", "cuda")
_EXTENSIONS = {".cl": "opencl", ".cu": "cuda", ".cuh": "cuda"}


@dataclass
class Launch:
    """Everything a backend needs to compile and run one configuration."""

    config: dict
    language: str | None = None
    source: str = ""
    name: str = ""
    defines: dict = field(default_factory=dict)
    block: tuple = (1,)
    grid: tuple = (1,)

    def full_source(self) -> str:
        """The source with one ``#define NAME VALUE`` per define prepended (Kernel Tuner's way)."""
        lines = [f"#define {k} {_define_text(v)}" for k, v in self.defines.items()]
        return "\n".join(lines + ["#line 1", self.source])

    def key(self) -> str:
        return hashlib.sha256(repr((self.language, self.full_source(), self.name)).encode()).hexdigest()


def _define_text(value) -> str:
    import numpy as np  # only where arguments are made and checked

    if isinstance(value, (bool, np.bool_)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value.item() if hasattr(value, "item") else value)


class Kernel:
    """A kernel bound to a space (see the module docstring)."""

    def __init__(self, source, name: str, defines=None, block=(1,), grid=(1,), arguments=None,
                 reference=None, tolerance=None, timeout: float = 10.0, iterations: int = 7,
                 problem_size=()):
        self.origin = L.caller_origin()
        self.sources = self._sources(source)
        self.name = name
        self.defines = defines
        self.block = tuple(block) if isinstance(block, (tuple, list)) else (block,)
        self.grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
        if not 1 <= len(self.block) <= 3 or not 1 <= len(self.grid) <= 3:
            raise BeastError("block and grid take 1 to 3 dimensions", self.origin)
        self.arguments = arguments
        self.reference = reference
        self.tolerance = tolerance
        self.timeout = float(timeout)
        self.iterations = int(iterations)
        self.problem_size = tuple(problem_size)
        self.space_path: str | None = None  # set by find_kernel

    def _sources(self, source) -> dict:
        if isinstance(source, dict):
            unknown = [k for k in source if k not in LANGUAGES]
            if unknown:
                raise BeastError(f"unknown kernel language {unknown}: use {list(LANGUAGES)}", self.origin)
            return dict(source)
        language = _EXTENSIONS.get(os.path.splitext(str(source))[1].lower())
        if language is None:
            raise BeastError(f"cannot tell the language of kernel source {source!r} (.cl: OpenCL, "
                             ".cu: CUDA); pass source={'opencl': ..., 'cuda': ...}", self.origin)
        return {language: source}

    # -- sources -----------------------------------------------------------------------------------
    def source_text(self, language: str) -> str:
        if language not in self.sources:
            raise BeastError(f"kernel '{self.name}' has no {language} source (it has: "
                             f"{', '.join(self.sources)})", self.origin)
        path = self.sources[language]
        if not os.path.isabs(path):
            path = os.path.join(os.path.dirname(os.path.abspath(self.space_path or ".")), path)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise BeastError(f"cannot read kernel source: {e.strerror}", path) from None

    # -- one configuration -----------------------------------------------------------------------
    def launch(self, config: dict, settings: dict, profile, language: str, source: str) -> Launch:
        env = {**settings, **config}
        return Launch(config, language, source, self.name, self._defines(config, settings),
                      tuple(self._dim(e, env, profile, "block") for e in self.block),
                      tuple(self._dim(e, env, profile, "grid") for e in self.grid))

    def _defines(self, config: dict, settings: dict) -> dict:
        if self.defines is None:
            return dict(config)
        if callable(self.defines):
            return dict(self.defines({**settings, **config}))
        env = {**settings, **config}
        missing = [n for n in self.defines if n not in env]
        if missing:
            raise BeastError(f"defines names {missing}, which are neither iterators nor settings",
                             self.origin)
        return {n: env[n] for n in self.defines}

    def _dim(self, entry, env: dict, profile, what: str) -> int:
        try:
            value = entry(env) if callable(entry) and not isinstance(entry, L.Expr) else \
                evaluate(entry, env, profile)
        except BeastError:
            raise
        except Exception as e:  # noqa: BLE001 - a user function failed: say which
            raise BeastError(f"kernel {what} size: {type(e).__name__}: {e}", self.origin) from None
        if int(value) != value or value < 1:
            raise BeastError(f"kernel {what} size must be a positive integer, got {value!r}", self.origin)
        return int(value)

    # -- arguments and verification --------------------------------------------------------------
    def make_arguments(self, settings: dict) -> list:
        import numpy as np  # only where arguments are made and checked

        if self.arguments is None:
            raise BeastError(f"kernel '{self.name}' declares no arguments=", self.origin)
        args = list(self.arguments(dict(settings)))
        for i, a in enumerate(args):
            if not isinstance(a, (np.ndarray, np.generic)):
                raise BeastError(f"kernel argument {i} is {a_type(a)}: arguments must be NumPy "
                                 "arrays or NumPy scalars (np.int32(...), np.float32(...))", self.origin)
        return args

    def expected(self, args: list, settings: dict) -> dict[int, np.ndarray]:
        """{argument index: expected array} from ``reference`` (a list with None, or a dict)."""
        import numpy as np  # only where arguments are made and checked

        if self.reference is None:
            return {}
        answer = self.reference([a.copy() for a in args], dict(settings))
        items = answer.items() if isinstance(answer, dict) else enumerate(answer)
        return {int(i): np.asarray(v) for i, v in items if v is not None}

    def tolerance_for(self, settings: dict) -> float:
        tol = self.tolerance
        if tol is None:
            return 1e-6
        if isinstance(tol, dict):
            precision = settings.get("precision")
            if precision not in tol:
                raise BeastError(f"no tolerance for precision {precision!r} (tolerance has "
                                 f"{list(tol)})", self.origin)
            return float(tol[precision])
        return float(tol)


def verify(outputs: dict, expected: dict, tolerance: float) -> str | None:
    """None when every output matches, else what differs. The error of an output is
    max|got - expected| / max(max|expected|, tiny): relative to the output's scale."""
    import numpy as np  # only where arguments are made and checked

    for index, want in expected.items():
        got = outputs.get(index)
        if got is None:
            return f"output argument {index} was not read back"
        got = np.asarray(got).reshape(want.shape) if got.size == want.size else got
        if got.shape != want.shape:
            return f"output argument {index} has shape {got.shape}, expected {want.shape}"
        if not np.all(np.isfinite(got)):
            return f"output argument {index} holds {int(np.sum(~np.isfinite(got)))} non-finite values"
        # complex outputs are compared as complex numbers (|got - expected| is the modulus)
        wide = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64
        difference = np.abs(got.astype(wide) - want)
        scale = max(float(np.max(np.abs(want))) if want.size else 0.0, np.finfo(np.float64).tiny)
        error = float(np.max(difference)) / scale if want.size else 0.0
        if not error <= tolerance:
            worst = np.unravel_index(int(np.argmax(difference)), want.shape)
            return (f"output argument {index}: relative error {error:.3g} > tolerance {tolerance:g} "
                    f"(at {tuple(int(i) for i in worst)}: got {got[worst]!r}, expected {want[worst]!r})")
    return None


def evaluate(expr, env: dict, profile=None):
    """The value of a space expression for one configuration: named variables come from ``env``
    (iterators, settings), device properties from ``profile``, unnamed ones are computed."""
    if not isinstance(expr, L.Expr):
        return expr
    return _LaunchEvaluator(env, profile).evaluate(expr)


class _LaunchEvaluator(Evaluator):
    """Launch sizes: iterators and settings by name, device properties, arithmetic."""

    def __init__(self, env: dict, profile):
        super().__init__(profile)
        self.env = env

    def has_value(self, name: str) -> bool:
        return name in self.env

    def named_value(self, name: str):
        return self.env[name]

    def map_DeviceProperty(self, node):
        if self.profile is None:
            raise BeastError(f"device property '{node.prop}' needs a device profile")
        return self.profile.get(node.prop)

    def map_Expr(self, node):
        raise BeastError(f"kernel launch sizes cannot use {type(node).__name__} "
                         f"'{node.name or '?'}' (only iterators, settings, device properties and "
                         "arithmetic)", node.origin)


def kernel(source, name: str, **options) -> Kernel:
    """Declare the kernel a space tunes: see :class:`Kernel`."""
    return Kernel(source, name, **options)


def find_kernel(space) -> Kernel | None:
    """The Kernel a loaded space declares (None if it declares none)."""
    kernels = [(n, v) for n, v in space.module_globals.items() if isinstance(v, Kernel)]
    if len(kernels) > 1:
        raise BeastError(f"the space declares {len(kernels)} kernels ({', '.join(n for n, _ in kernels)}); "
                         "declare one", space.path)
    if not kernels:
        return None
    found = kernels[0][1]
    found.space_path = space.path
    return found


__all__ = ["Kernel", "Launch", "kernel", "find_kernel", "evaluate", "verify"]
