"""From Kernel Tuner to beastgen: a Kernel Tuner script or a T1 file as a readable space file.

* :func:`kernel_tuner_call` runs a Kernel Tuner script until it calls ``tune_kernel`` and answers
  the arguments of that call (``kernel_name``, ``problem_size``, ``tune_params``, ``restrictions``,
  ``block_size_names``...) instead of tuning: the script is a program (running it is running code,
  as loading a space file is), and this is how its ``tune_params`` built in Python are read.
* :func:`space_file_source` prints a space built by :func:`beastgen.interop.from_kernel_tuner` or
  :func:`beastgen.interop.load_t1` as a beastgen space file: one ``beast.values`` per parameter, in
  order, and one function filter per restriction. A restriction keeps a configuration when it is
  true and a beastgen filter REJECTS when it is true, so each filter returns ``not (restriction)``.
  Kernel Tuner's implicit rule (the block's threads at most the device's maximum) becomes the filter
  ``block_size_over_max_threads`` reading ``beast.device.max_threads_per_block``.
"""
from __future__ import annotations

import ast
import copy
import inspect
import os
import runpy
import sys
import traceback

from ..compiler.language import nodes as L
from ..compiler.language.printer import expr_source
from ..errors import BeastError
from ..quoting import docstring_text
from .kernel_tuner import DEFAULT_BLOCK_SIZE_NAMES, PATH


#: the arguments of ``tune_kernel`` a conversion reads
CALL_ARGUMENTS = ("kernel_name", "problem_size", "tune_params", "restrictions", "block_size_names",
                  "lang")
IMPLICIT_FILTER = "block_size_over_max_threads"


class _Called(BaseException):
    """Raised by the stand-in ``tune_kernel`` to stop the script once the call is read: a
    ``BaseException``, so that a script's ``except Exception`` around its call does not catch it
    and run on."""

    def __init__(self, arguments: dict):
        super().__init__("tune_kernel called")
        self.arguments = arguments


def kernel_tuner_call(path: str) -> dict:
    """The arguments (by name, :data:`CALL_ARGUMENTS`) of the first ``tune_kernel`` call that the
    Kernel Tuner script ``path`` makes when run as ``python path`` from its own folder."""
    try:  # an optional dependency (beastgen[kernel_tuner]): the script imports it anyway
        import kernel_tuner
        import kernel_tuner.interface
    except ImportError:
        raise BeastError("reading a Kernel Tuner script needs Kernel Tuner: pip install kernel_tuner",
                         path) from None
    real = kernel_tuner.interface.tune_kernel
    signature = inspect.signature(real)

    def stand_in(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise BeastError(f"the script calls tune_kernel with arguments it does not take: {e}",
                             path) from None
        bound.apply_defaults()
        raise _Called({name: bound.arguments.get(name) for name in CALL_ARGUMENTS})

    script = os.path.abspath(path)
    saved = (sys.argv, list(sys.path), os.getcwd())
    try:
        kernel_tuner.tune_kernel = kernel_tuner.interface.tune_kernel = stand_in
        sys.argv, sys.path[0:0] = [script], [os.path.dirname(script)]
        os.chdir(os.path.dirname(script))
        runpy.run_path(script, run_name="__main__")
    except _Called as called:
        return called.arguments
    except BeastError:
        raise
    except SystemExit as e:
        raise BeastError(f"the script exited (status {e.code}) before it called tune_kernel",
                         path) from None
    except Exception as e:  # noqa: BLE001 - the script's own failure, named where it happened
        raise BeastError(f"the script failed before it called tune_kernel: {type(e).__name__}: {e}",
                         _where_in(script, e) or path) from None
    finally:
        kernel_tuner.tune_kernel = kernel_tuner.interface.tune_kernel = real
        sys.argv, sys.path[:] = saved[0], saved[1]
        os.chdir(saved[2])
    raise BeastError("the script never called kernel_tuner.tune_kernel (run as a script, "
                     "python FILE): nothing to convert", path)


def _where_in(script: str, error: BaseException) -> str | None:
    """``file:line`` of the innermost frame of ``error`` in ``script``."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == script]
    return f"{os.path.relpath(script)}:{frames[-1].lineno}" if frames else None


def space_file_source(space, described: str, max_threads_names: list[str] | None = None,
                      origins: dict[str, str] | None = None) -> str:
    """A space file for ``space`` (from :func:`~beastgen.interop.from_kernel_tuner` or
    :func:`~beastgen.interop.load_t1`); ``described``: what it was converted from (its docstring);
    ``max_threads_names``: the block size parameters of Kernel Tuner's implicit rule, if any;
    ``origins``: how each filter's docstring names where it came from (``<kernel_tuner>`` or the
    script's absolute path -> the script's name)."""
    python = getattr(space, "python_restrictions", None)
    if python:
        raise BeastError(f"{python[0].where}: {python[0].label} cannot be written as a space file "
                         f"filter ({python[0].why}); write it as a string expression")
    variables = list(space.variables.values())
    constants = {}
    for variable in variables:
        if variable.function is not None:
            constants.update(variable.function.constant_refs)
    taken = set(constants) | {v.name for v in variables}
    beast = next(name for name in ("beast", "beastgen", *(f"beast_{i}" for i in range(len(taken) + 1)))
                 if name not in taken)  # the module's name: never a parameter's or a constant's
    body = ["# the tuning parameters, in order"]
    body += [f"{v.name} = {beast}.values({', '.join(expr_source(x) for x in v.obj.values)})"
             for v in variables if v.kind == "iterator"]
    for variable in variables:
        if variable.kind == "filter" and variable.name != IMPLICIT_FILTER:
            body += ["", ""] + _filter_source(variable, origins or {}, beast)
    if max_threads_names:
        body += ["", "", "# Kernel Tuner's implicit rule: at most the device's threads in a block",
                 f"{IMPLICIT_FILTER} = {beast}.filter("
                 f"{' * '.join(max_threads_names)} > {beast}.device.max_threads_per_block)"]
    head = [f'"""{docstring_text(described)}', "",
            "A filter REJECTS a configuration when it is true, and a Kernel Tuner restriction (or a",
            'T1 condition) keeps one when it is true: hence the `not` in each filter."""']
    head += ["import math", ""] if any("math." in line for line in body) else []
    head += ["import beastgen" + (f" as {beast}" if beast != "beastgen" else ""), ""]
    head += [f"{name} = {value!r}" for name, value in sorted(constants.items())]
    return "\n".join(head + ([""] if constants else []) + body) + "\n"


def _filter_source(variable, origins: dict[str, str], beast: str = "beast") -> list[str]:
    """``@beast.filter`` (the module's name: ``beast``) and the function of one restriction, with
    where it came from."""
    head = [f"@{beast}.filter"]
    where = variable.origin
    for prefix, shown in origins.items():
        where = shown + where[len(prefix):] if where.startswith(prefix) else where
    if variable.function is not None:
        node = copy.deepcopy(variable.function.node)
        node.body[0:0] = [ast.Expr(ast.Constant(where))]
        return head + ast.unparse(node).splitlines()
    expr = variable.expr
    body = (f"not ({expr_source(expr.operand, root=True)})" if isinstance(expr, L.Not)
            else expr_source(expr, root=True))
    return head + [f"def {variable.name}():", f'    """{docstring_text(where)}"""',
                   f"    return {body}"]


def script_origins(script: str) -> dict[str, str]:
    """How a converted script's filters name their origin: by the script's file name."""
    return {PATH: os.path.basename(script), os.path.abspath(script): os.path.basename(script)}


def block_size_names(arguments: dict, tune_params: dict) -> list[str]:
    """The block size parameters of Kernel Tuner's implicit rule that ``tune_params`` has."""
    names = arguments.get("block_size_names") or DEFAULT_BLOCK_SIZE_NAMES
    return [name for name in names if name in tune_params]
