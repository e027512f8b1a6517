"""``beastgen convert``: a Kernel Tuner script or a T1 JSON file as a readable beastgen space file."""
import os
import warnings

from ..errors import BeastError
from ..interop import from_kernel_tuner, load_t1
from ..interop.python_restrictions import PythonRestrictionWarning
from ..interop.space_file import block_size_names, kernel_tuner_call, script_origins, space_file_source
from ..support.output import AtomicOutput


def run(args) -> int:
    source, extension = args.input, os.path.splitext(args.input)[1].lower()
    if not args.output.endswith(".py"):
        raise BeastError("the space file must end in .py", args.output)
    name = os.path.splitext(os.path.basename(args.output))[0]
    if extension == ".json":
        space = load_t1(source)
        text = space_file_source(space, f"The T1 space {space.name}, converted by `beastgen convert "
                                        f"{os.path.basename(source)}`.")
        kept = "no implicit rule (T1 has none)"
    elif extension == ".py":
        call = kernel_tuner_call(source)
        tune_params = dict(call["tune_params"] or {})
        with warnings.catch_warnings():  # a restriction that must run in Python is refused below
            warnings.simplefilter("ignore", PythonRestrictionWarning)
            space = from_kernel_tuner(tune_params, call["restrictions"], name=name)
        block = block_size_names(call, tune_params)
        text = space_file_source(
            space, f"The tuning space of Kernel Tuner's {call['kernel_name']!r} (problem size "
                   f"{call['problem_size']!r}), converted by `beastgen convert "
                   f"{os.path.basename(source)}`.", block, script_origins(source))
        kept = (f"Kernel Tuner's implicit rule as {' * '.join(block)} <= "
                "beast.device.max_threads_per_block" if block else "no block size parameter")
    else:
        raise BeastError("convert reads a Kernel Tuner script (.py) or a T1 space (.json)", source)
    with AtomicOutput(args.output) as temporary, open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    restrictions = sum(1 for v in space.variables.values() if v.kind == "filter")
    print(f"wrote {args.output}: {len(space.iterators)} parameters, {restrictions} restrictions "
          f"as filters, {kept}; count it with: beastgen count {args.output}")
    return 0
