"""``beastgen predict``: the best configurations of an input by the model across inputs
(:mod:`beastgen.harness.input_model`), fitted on a results store of ``tune --inputs`` or read
from a model file; optionally timed on the device (``--measure K``), or chosen for every input of
a CSV table and written as JSON for an application (``--table SHAPES.csv -o best.json``)."""
import csv
import json
import math
import sys
import time

from ..devices import load_profile
from ..errors import BeastError, SettingError
from ..harness import input_model
from ..harness.inputs import InputBench
from ..harness.kernel import find_kernel
from ..harness.tuning import setup_backend
from ..loading.load import load
from ..support.output import AtomicOutput
from ..support.table import format_table
from ..support.units import format_seconds
from .common import parse_settings

EXPORT_FORMAT = "beastgen-best-configurations"
EXPORT_VERSION = 1


def run(args) -> int:
    if (args.table is None) != (args.output is None):
        raise BeastError("--table SHAPES.csv and -o FILE.json go together")
    if not args.results and not args.model:
        raise BeastError("predict needs --results STORE (a collection of tune --inputs) or --model FILE")
    for name in ("top", "measure"):
        if getattr(args, name) is not None and getattr(args, name) < (1 if name == "top" else 0):
            raise BeastError(f"--{name} must be at least {1 if name == 'top' else 0}")
    output = AtomicOutput(args.output) if args.output else None  # a bad path fails before the work
    space = load(args.space)
    model = input_model.load_model(args.model) if args.model else None
    profile, runner, language = _device(args, space, (model or {}).get("backend") or "opencl")
    try:
        model = model or input_model.fit(args.results, space, profile.key)
        input_model.check_model(model, space, profile.key, args.allow_other_device)
        if args.save_model:
            input_model.save(model, args.save_model)
            print(f"wrote the model ({model['training_pairs']:,} pairs over "
                  f"{model['training_inputs']:,} inputs, {len(model['features'])} features) to "
                  f"{args.save_model}")
        bench = InputBench(runner, find_kernel(space), profile, language, args.iterations) \
            if args.measure else None
        fixed = parse_settings(args.settings)
        if output is None:
            return _one(args, space, model, profile, bench, fixed)
        return _table(args, space, model, profile, bench, fixed, output)
    finally:
        if runner is not None:
            runner.close()


def _device(args, space, backend: str):
    """(profile, runner or None, language): ``backend`` (the model's, or --backend) measures; a
    built-in profile (or a .toml) ranks without a device."""
    device = args.device
    backend = args.backend or backend
    if not args.measure and device is not None and not str(device).startswith(("opencl:", "cuda:")) \
            and not (backend == "opencl" and str(device).endswith(".toml")):
        return load_profile(device), None, None
    if args.measure and find_kernel(space) is None:
        raise BeastError(f"space '{space.name}' declares no kernel: --measure has nothing to run",
                         space.path)
    return setup_backend(backend, device, None, space)


def _config(row, parameters) -> dict:
    return {x: row[x].item() for x in row.dtype.names if x in parameters}


def _choose(args, space, model, profile, bench, overrides):
    """One input ranked, its top measured when asked: (the best rows, their predicted times,
    typed settings, valid configurations, measured list)."""
    rows, predicted, typed, warnings, valid = input_model.rank_input(
        space, model, profile, overrides, args.generated_dir, args.allow_out_of_range,
        top=max(args.top, args.measure or 0, 1))
    for warning in warnings:
        print(warning, file=sys.stderr)
    measured = []
    for i in range(min(args.measure or 0, len(rows))):
        status, time_s, _, message = bench.measure(typed, _config(rows[i], model["parameters"]))
        measured.append((i, status, time_s, message))
    return rows, predicted, typed, valid, measured


def _one(args, space, model, profile, bench, overrides) -> int:
    start = time.perf_counter()
    rows, predicted, typed, valid, measured = _choose(args, space, model, profile, bench, overrides)
    seconds = time.perf_counter() - start
    print(f"space {space.name} on {profile.key} ({profile.name}); model trained on "
          f"{model['device']} ({model['training_pairs']:,} pairs over {model['training_inputs']:,} inputs)")
    print(f"input: {', '.join(f'{k}={v}' for k, v in typed.items())}")
    print(f"{valid:,} valid configurations ranked in {seconds:.2f} s"
          + (" (measuring included)" if measured else ""))
    if not len(rows):
        return 1
    times = {i: (status, t, message) for i, status, t, message in measured}
    parameters = [x for x in rows.dtype.names if x in model["parameters"]]  # the space's order
    table = []
    for i in range(min(args.top, len(rows))):
        status, t, _ = times.get(i, (None, None, None))
        table.append([str(i + 1), format_seconds(predicted[i])]
                     + ([format_seconds(t) if status == "ok" else (status or "")] if measured else [])
                     + [str(rows[i][x].item()) for x in parameters])
    print(format_table(["rank", "predicted"] + (["measured"] if measured else []) + parameters, table))
    best = _best_measured(measured)
    if measured:
        print(f"best of the top {len(measured)} measured: " + (
            f"rank {best[0] + 1}, {format_seconds(best[2])}: {_config(rows[best[0]], parameters)}"
            if best else "none ran successfully"))
    if args.json:
        print(json.dumps({"settings": typed, "valid": valid, "seconds": seconds,
                          "top": [{"config": _config(rows[i], parameters),
                                   "predicted_ms": predicted[i] * 1e3} for i in range(min(args.top, len(rows)))],
                          "measured": [{"rank": i + 1, "status": s, "time_ms": t and t * 1e3}
                                       for i, s, t, _ in measured]}, default=str, allow_nan=False))
    return 0


def _best_measured(measured):
    ok = [m for m in measured if m[1] == "ok"]
    return min(ok, key=lambda m: m[2]) if ok else None


def read_table(path: str, space) -> list[dict]:
    """The inputs of a CSV table: a header of setting names, one input per line."""
    try:  # utf-8-sig: the byte order mark a spreadsheet writes first is not part of a name
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if not header:
                raise BeastError("the table is empty: its first line names settings, e.g. M,N,K", path)
            header = [h.strip() for h in header]
            for i, name in enumerate(header):
                if name not in space.settings:
                    raise BeastError(f"column {name!r} is not a setting of space '{space.name}' "
                                     f"(its settings: {', '.join(space.settings)})", f"{path}:1")
                if name in header[:i]:
                    raise BeastError(f"column '{name}' is given twice", f"{path}:1")
            inputs = []
            for line, row in enumerate(reader, start=2):
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    raise BeastError(f"{len(row)} values for {len(header)} columns", f"{path}:{line}")
                inputs.append((line, dict(zip(header, (cell.strip() for cell in row)))))
    except OSError as e:
        raise BeastError(f"cannot read the table: {e.strerror}", path) from None
    except (csv.Error, UnicodeDecodeError) as e:
        raise BeastError(f"not a readable CSV table: {e}", path) from None
    if not inputs:
        raise BeastError("the table lists no input", path)
    return inputs


def _table(args, space, model, profile, bench, fixed, output) -> int:
    entries = []
    start = time.perf_counter()
    for line, values in read_table(args.table, space):
        here = f"{args.table}:{line}"
        try:
            rows, predicted, typed, valid, measured = _choose(args, space, model, profile, bench,
                                                              {**fixed, **values})
        except SettingError as e:  # a value of the table: its line is the place
            raise BeastError(e.message + (f" (declared at {e.where})" if e.where else ""), here) from None
        except BeastError as e:  # this line's values caused it: its place, and the space's beside
            raise BeastError(e.message + (f" (at {e.where})" if e.where else ""), here) from None
        except OverflowError:  # (a value past what the compiled enumerator holds)
            raise BeastError(f"a value of {', '.join(f'{k}={v}' for k, v in values.items())} is "
                             "too large for the compiled enumerator", here) from None
        entry = {"input": values, "settings": typed, "valid_configurations": valid,
                 "config": None, "predicted_ms": None, "measured_ms": None}
        if len(rows):
            best = _best_measured(measured)
            i = best[0] if best else 0
            entry.update(config=_config(rows[i], model["parameters"]),
                         predicted_ms=float(predicted[i]) * 1e3,
                         measured_ms=best[2] * 1e3 if best else None)
        entries.append(entry)
        print(f"{', '.join(f'{k}={v}' for k, v in values.items())}: "
              + (f"{entry['config']} (predicted {format_seconds(entry['predicted_ms'] / 1e3)}"
                 + (f", measured {format_seconds(entry['measured_ms'] / 1e3)}" if entry["measured_ms"]
                    else "") + ")" if entry["config"] else "no valid configuration"))
    document = {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "space": space.name,
                "space_hash": space.source_hash, "device": profile.key,
                "model": {k: model[k] for k in ("device", "trained_on", "training_pairs",
                                                "training_inputs")},
                "parameters": model["parameters"], "entries": entries}
    with output as tmp, open(tmp, "w", encoding="utf-8") as f:  # (strict JSON: no NaN)
        json.dump(document, f, indent=1, default=_plain, allow_nan=False)
    plural = "s" if len(entries) != 1 else ""
    print(f"wrote the chosen configuration of {len(entries):,} input{plural} to {args.output} "
          f"in {time.perf_counter() - start:.1f} s")
    return 0


def _plain(value):
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)
