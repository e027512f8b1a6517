"""One performance model across inputs (ISAAC): log run time over (input, configuration) features.

It is the search's model (:mod:`.strategies.models.ridge`: a ridge regression of log run time on
one-hot values, log values and their products, and the log of the lower bound) with the input as
more features: each varying numeric setting's log (log M, log N, log K), each choice's one-hot
(precision), and their products with the configuration's: ``log S * log x``, the tiles per
dimension ``log ceil(S / x)`` and the waste of partial tiles ``ceil(S / x) * x / S`` for every
numeric setting S and parameter x, ``[precision=d] * log x``. The lower bound at that input (the
space's bound terms, evaluated by the compiled enumerator for that input) is ``log bound``.

Fitted on every collection run of a results store (``tune --inputs``), with the ridge penalty
chosen by generalised cross-validation. The model file (JSON) is versioned: format version, the
space's name and source hash, the device, the feature list and the settings' ranges it was trained
on. Ranking one input scores every valid configuration with NumPy, one feature column at a time.
"""
from __future__ import annotations

import json
import math

import numpy as np

from ..compiler.specialize import resolve_settings
from ..errors import BeastError
from ..loading.plancache import compile_cached
from ..support.output import AtomicOutput
from .inputs import STRATEGY, every_row
from .store import read_runs

FORMAT = "beastgen-input-model"
FORMAT_VERSION = 1
#: an input further than this many octaves (factors of 2) outside a trained range is refused
#: (closer: a warning with the distance)
MAX_OCTAVES = 1.0
#: the ridge penalties tried (generalised cross-validation picks one)
PENALTIES = np.logspace(-3, 4, 29)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Columns:
    """Feature columns of one input: ``config`` (parameter -> array), ``settings``, ``bound``."""

    def __init__(self, config: dict, settings: dict, bound: np.ndarray):
        self.config, self.settings, self.bound, self.cache = config, settings, bound, {}

    def log(self, x: str) -> np.ndarray:
        if x not in self.cache:
            self.cache[x] = np.log2(np.maximum(self.config[x].astype(float), 0) + 1)
        return self.cache[x]

    def column(self, name: str) -> np.ndarray:
        """The feature ``name`` (see :func:`feature_names`)."""
        kind, _, rest = name.partition(":")
        if kind == "log":
            return self.log(rest)
        if kind == "pair":
            a, b = rest.split("*")
            return self.log(a) * self.log(b)
        if kind == "is":
            x, value = rest.split("=", 1)
            column = self.config[x]
            if column.dtype.kind in "iuf":  # numbers compared as numbers: no text per row
                return (column == float(value)).astype(float)
            return (column.astype(str) == value).astype(float)
        if kind == "bound":
            return np.log(np.maximum(self.bound, 1e-12))
        setting, _, x = rest.partition("/")
        if kind in ("in", "insize") and not self.settings[setting] > 0:
            raise BeastError(f"the model takes the log of setting {setting}, which must be above 0 "
                             f"(not {self.settings[setting]!r})")
        if kind == "in":
            return np.full(len(self.bound), math.log2(self.settings[setting]))
        if kind == "lin":
            value = float(self.settings[setting])
            return value * self.log(x) if x else np.full(len(self.bound), value)
        if kind == "choice":
            setting, value = setting.split("=", 1)
            on = float(str(self.settings[setting]) == value)
            return on * self.log(x) if x else np.full(len(self.bound), on)
        size, edge = float(self.settings[setting]), np.maximum(self.config[x].astype(float), 1)
        tiles = np.ceil(size / edge)
        if kind == "insize":
            return math.log2(size) * self.log(x)
        if kind == "tiles":
            return np.log2(tiles)
        if kind == "waste":
            return tiles * edge / size
        raise BeastError(f"the model file names an unknown feature {name!r}")


def feature_names(parameters: list[str], values: dict, trained_on: dict, bounded: bool) -> list[str]:
    """The features of a space's ``parameters`` (numeric ones: those in ``values`` with only
    numbers; ``values``: parameter -> the values seen), over the settings of ``trained_on`` that
    vary, with ``bounded`` adding the log of the lower bound."""
    numeric = [x for x in parameters if all(_number(v) for v in values[x])]
    names = [f"log:{x}" for x in numeric]
    names += [f"pair:{a}*{b}" for i, a in enumerate(numeric) for b in numeric[i:]]
    names += [f"is:{x}={v}" for x in parameters for v in sorted(map(str, values[x]))
              if len(values[x]) > 1]
    for setting, seen in trained_on.items():
        if "low" in seen and seen["low"] < seen["high"] and seen["low"] > 0:
            names.append(f"in:{setting}")
            for x in numeric:
                names += [f"insize:{setting}/{x}", f"tiles:{setting}/{x}", f"waste:{setting}/{x}"]
        elif "low" in seen and seen["low"] < seen["high"]:  # reaches 0 (a flag): no log, no tiles
            names += [f"lin:{setting}"] + [f"lin:{setting}/{x}" for x in numeric]
        elif "choices" in seen and len(seen["choices"]) > 1:
            for value in seen["choices"][1:]:
                names.append(f"choice:{setting}={value}")
                names += [f"choice:{setting}={value}/{x}" for x in numeric]
    return names + (["bound:"] if bounded else [])


def ranges(settings_list: list[dict]) -> dict:
    """setting -> {low, high} (numbers) or {choices} over the inputs seen."""
    out = {}
    for name in settings_list[0]:
        seen = [s[name] for s in settings_list]
        if all(_number(v) for v in seen):
            out[name] = {"low": min(seen), "high": max(seen)}
        else:
            out[name] = {"choices": sorted(set(seen), key=str)}
    return out


def _ridge(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(weights, penalty, cross-validated rms error) of a ridge fit of centred ``y`` on
    standardised ``x``, the penalty chosen by generalised cross-validation."""
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    uy = u.T @ y
    best = None
    for penalty in PENALTIES:
        shrink = s**2 / (s**2 + penalty)
        residual = y - u @ (shrink * uy)
        gcv = len(y) * (residual @ residual) / max(len(y) - shrink.sum(), 1e-9) ** 2
        if best is None or gcv < best[0]:
            best = (gcv, penalty)
    gcv, penalty = best
    return vt.T @ (s / (s**2 + penalty) * uy), float(penalty), math.sqrt(gcv)


def fit(results: str, space, device: str | None = None) -> dict:
    """The model of ``space`` fitted on the collection runs (``tune --inputs``) in the store
    ``results``; ``device``: the profile key to fit on where the store holds several."""
    runs = [(d, rows) for d, rows in read_runs(results, STRATEGY) if d["space"] == space.name]
    if not runs:
        raise BeastError(f"the results store holds no collection across inputs of space "
                         f"'{space.name}' (beastgen tune {space.path} --inputs SPEC --results "
                         f"{results} writes one)", results)
    devices = sorted({d["device"] for d, _ in runs})
    if device not in devices:
        if len(devices) > 1:
            raise BeastError(f"the results store holds measurements on {', '.join(devices)}, not "
                             f"{device}: choose one with --device", results)
        device = devices[0]  # another device than asked for: check_model says so
    runs = [(d, [r for r in rows if r["status"] == "ok" and r["time"] and r["time"] > 0])
            for d, rows in runs if d["device"] == device]
    runs = [(d, rows) for d, rows in runs if rows]
    if not runs:
        raise BeastError(f"no successful measurement across inputs of space '{space.name}' on "
                         f"{device} in the results store", results)
    parameters = list(runs[0][1][0]["config"])
    values = {x: sorted({r["config"][x] for _, rows in runs for r in rows}, key=str)
              for x in parameters}
    trained_on = ranges([d["settings"] for d, _ in runs])
    bounded = all(math.isfinite(r["bound"]) for _, rows in runs for r in rows)
    names = feature_names(parameters, values, trained_on, bounded)
    blocks, y = [], []
    for d, rows in runs:
        blocks.append(feature_matrix(names, {x: np.array([r["config"][x] for r in rows])
                                             for x in parameters}, d["settings"],
                                     np.array([r["bound"] for r in rows], dtype=float)))
        y += [math.log(r["time"]) for r in rows]
    x, y = np.concatenate(blocks), np.array(y)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    keep = scale > 1e-12
    weights, penalty, error = _ridge((x[:, keep] - mean[keep]) / scale[keep], y - y.mean())
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "space": space.name,
            "space_hash": space.source_hash, "device": device, "backend": runs[0][0]["backend"],
            "parameters": parameters, "trained_on": trained_on,
            "features": [n for n, k in zip(names, keep) if k],
            "mean": mean[keep].tolist(), "scale": scale[keep].tolist(), "weights": weights.tolist(),
            "intercept": float(y.mean()), "penalty": penalty, "cv_rms_log_error": error,
            "training_pairs": len(y), "training_inputs": len(runs), "results": results}


def feature_matrix(names: list[str], config: dict, settings: dict, bound: np.ndarray) -> np.ndarray:
    """The features ``names`` (rows x features) of the configurations ``config`` (parameter ->
    array) at the input ``settings``, with their lower bounds ``bound``."""
    columns = _Columns(config, settings, bound)
    return np.stack([columns.column(name) for name in names], axis=1)


def predict_log_times(model: dict, config: dict, settings: dict, bound: np.ndarray) -> np.ndarray:
    """Predicted log run times (natural log of seconds) of the configurations ``config``
    (parameter -> array) at the input ``settings``, with their lower bounds ``bound``: the model's
    sum over :func:`feature_matrix`, gathered so that each parameter is read once. A feature of
    the input alone is a constant; one of the input and one parameter x (its log, one-hot, log
    S * log x, tiles, waste) a table over x's values, looked up; the pairs ``log a * log b`` one
    quadratic form."""
    coefficients = np.array(model["weights"]) / np.array(model["scale"])
    constant = model["intercept"] - float(coefficients @ np.array(model["mean"]))
    single = _Columns({}, settings, np.zeros(1))
    by_parameter, pairs, out = {}, {}, np.zeros(len(bound))
    for name, c in zip(model["features"], coefficients):
        kind, _, body = name.partition(":")
        x = body.partition("/")[2] if kind in ("in", "lin", "insize", "tiles", "waste", "choice") else \
            body.partition("=")[0] if kind == "is" else body if kind == "log" else None
        if kind == "pair":
            pairs[tuple(body.split("*"))] = c
        elif kind == "bound":
            out += c * np.log(np.maximum(bound, 1e-12))
        elif not x:  # the input alone
            constant += c * float(single.column(name)[0])
        else:
            by_parameter.setdefault(x, []).append((name, c))
    logs, paired = {}, {x for pair in pairs for x in pair}
    for x in paired | set(by_parameter):
        values, where = _distinct(config[x])
        table = _Columns({x: values}, settings, np.zeros(len(values)))
        if x in by_parameter:
            out += sum(c * table.column(name) for name, c in by_parameter[x])[where]
        if x in paired:
            logs[x] = table.log(x)[where]
    if pairs:
        names = sorted(logs)
        w = np.zeros((len(names), len(names)))
        for (a, b), c in pairs.items():
            w[names.index(a), names.index(b)] += c
        stacked = np.stack([logs[x] for x in names], axis=1)
        out += np.einsum("ij,ij->i", stacked @ w, stacked)
    return out + constant


def _distinct(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, index of each row's value among them): a range of integers where it is short."""
    if column.dtype.kind in "iu" and len(column):
        low, high = int(column.min()), int(column.max())
        if high - low <= 4 * len(column):
            return np.arange(low, high + 1, dtype=column.dtype), column - low
    return np.unique(column, return_inverse=True)


def rank_input(space, model, profile, overrides: dict, generated_dir=None, allow_out_of_range=False,
               top: int | None = None):
    """(rows, their predicted times in seconds, typed settings, warnings, valid configurations)
    of one input: every valid configuration (the ``top`` best predicted only, when given), fastest
    predicted first."""
    typed = resolve_settings(space, overrides)
    warnings = check_input(model, typed, allow_out_of_range)
    # the plan cache: a warm input skips specializing and planning (and importing sympy)
    plan = compile_cached(space.path, device=profile, settings=overrides, generated_dir=generated_dir)
    rows = every_row(plan)
    missing = [x for x in model["parameters"] if x not in rows.dtype.names]
    if missing:
        raise BeastError(f"the model's parameter {missing[0]} is not in space '{space.name}'")
    bound = rows["bound"].astype(float) if "bound" in rows.dtype.names else np.full(len(rows), np.nan)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        predicted = np.exp(predict_log_times(
            model, {x: rows[x] for x in model["parameters"]}, typed, bound))
    if len(predicted) and not np.isfinite(predicted).all():
        raise BeastError("the model predicts times that are not finite numbers at this input (its "
                         "coefficients are far outside what a fit gives): fit it again",
                         getattr(model, "path", None))
    if top is not None and top < len(rows):  # only the best need sorting
        chosen = np.argpartition(predicted, top)[:top]
        order = chosen[np.argsort(predicted[chosen], kind="stable")]
    else:
        order = np.argsort(predicted, kind="stable")
    return rows[order], predicted[order], dict(plan.specialized.settings), warnings, len(rows)


def check_input(model: dict, settings: dict, allow_out_of_range: bool = False) -> list[str]:
    """Warnings for an input outside the ranges the model was trained on (the distance in
    octaves); past :data:`MAX_OCTAVES`, or a choice never seen, one error."""
    warnings = []
    for name, seen in model["trained_on"].items():
        value = settings.get(name)
        if "choices" in seen:
            if value not in seen["choices"]:
                raise BeastError(f"the model never saw {name}={value!r} (it was trained on "
                                 f"{', '.join(map(str, seen['choices']))}): collect pairs with it")
            continue
        if not _number(value) or seen["low"] <= value <= seen["high"]:
            continue
        octaves = math.log2(seen["low"] / value if value < seen["low"] else value / seen["high"]) \
            if value > 0 and seen["low"] > 0 else math.inf
        where = f"{name}={value} is {octaves:.2f} octaves outside the trained range " \
                f"{seen['low']}..{seen['high']}"
        if octaves > MAX_OCTAVES and not allow_out_of_range:
            raise BeastError(f"{where} (more than {MAX_OCTAVES:g}): the model would extrapolate; "
                             "collect pairs there, or pass --allow-out-of-range")
        warnings.append(f"warning: {where}: the prediction extrapolates")
    return warnings


def check_model(model: dict, space, device_key: str, allow_other_device: bool = False) -> None:
    """One clear error when ``model`` is not for ``space`` (or was trained on another device)."""
    if model.get("format") != FORMAT or model.get("format_version") != FORMAT_VERSION:
        raise BeastError(f"not a beastgen input model of format version {FORMAT_VERSION} "
                         f"(format {model.get('format')!r}, version {model.get('format_version')!r})")
    if model["space"] != space.name:
        raise BeastError(f"the model is of space '{model['space']}', not '{space.name}'")
    if model["space_hash"] != space.source_hash:
        raise BeastError(f"the model was trained on another version of space '{space.name}' (source "
                         f"hash {model['space_hash']}, now {space.source_hash}): collect and fit again",
                         space.path)
    if model["device"] != device_key and not allow_other_device:
        raise BeastError(f"the model was trained on device '{model['device']}', not '{device_key}': "
                         "its times say nothing of this one (pass --allow-other-device to rank "
                         "with it anyway)")


def save(model: dict, path: str) -> None:
    with AtomicOutput(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        json.dump(model, f, indent=1)


def load_model(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            model = json.load(f)
    except OSError as e:
        raise BeastError(f"cannot read the model file: {e.strerror}", path) from None
    except ValueError as e:
        raise BeastError(f"the model file is not JSON: {e}", path) from None
    if not isinstance(model, dict):
        raise BeastError("the model file is not a JSON object", path)
    needed = ("format", "format_version", "space", "space_hash", "device", "features", "mean",
              "scale", "weights", "intercept", "trained_on", "parameters")
    missing = [k for k in needed if k not in model]
    if missing and model.get("format") == FORMAT:
        raise BeastError(f"the model file lacks {', '.join(missing)}", path)
    if model.get("format") == FORMAT:  # (another format: check_model says so)
        problem = model_problem(model)
        if problem:
            raise BeastError(f"the model file is damaged: {problem}", path)
    return ModelFile(model, path)


class ModelFile(dict):
    """A model read from a file (``path``: named by the errors of its predictions)."""

    def __init__(self, model: dict, path: str):
        super().__init__(model)
        self.path = path


def model_problem(model: dict) -> str | None:
    """What is wrong with the fields of a model (a file another could have edited), or None: each
    field of the type :func:`fit` writes, every coefficient a finite number (one per feature,
    every scale above 0), every feature one that :func:`feature_names` makes, of the model's
    parameters and trained settings."""
    for key in ("space", "space_hash", "device"):
        if not isinstance(model[key], str):
            return f"'{key}' is {_kind(model[key])}, not a text"
    parameters, trained_on, features = model["parameters"], model["trained_on"], model["features"]
    if not (isinstance(parameters, list) and parameters and all(isinstance(x, str) for x in parameters)
            and len(set(parameters)) == len(parameters)):
        return "'parameters' is not a list of distinct names"
    if not isinstance(trained_on, dict):
        return f"'trained_on' is {_kind(trained_on)}, not an object"
    for name, seen in trained_on.items():
        if isinstance(seen, dict) and set(seen) == {"choices"} and isinstance(seen["choices"], list) \
                and seen["choices"] and all(isinstance(c, (str, int, float)) for c in seen["choices"]):
            continue
        if not (isinstance(seen, dict) and set(seen) == {"low", "high"}
                and all(_finite(seen[k]) for k in ("low", "high")) and seen["low"] <= seen["high"]):
            return (f"'trained_on' of setting {name!r} is not a range of two finite numbers "
                    "(low, high) nor a list of choices")
    if not (isinstance(features, list) and all(isinstance(f, str) for f in features)):
        return "'features' is not a list of feature names"
    for name in features:
        problem = _feature_problem(name, parameters, trained_on)
        if problem:
            return f"feature {name[:80]!r} {problem}"
    for key in ("mean", "scale", "weights"):
        values = model[key]
        if not (isinstance(values, list) and len(values) == len(features)):
            return f"'{key}' is not a list of {len(features)} numbers (one per feature)"
        bad = next((v for v in values if not _finite(v)), None) if all(map(_number, values)) else "x"
        if bad is not None:
            return f"'{key}' holds {bad!r}, not a finite number"
    if any(v <= 0 for v in model["scale"]):
        return "'scale' holds a value that is not above 0"
    if not _finite(model["intercept"]):
        return f"'intercept' is {model['intercept']!r}, not a finite number"
    for key in ("training_pairs", "training_inputs"):
        if key in model and not (type(model[key]) is int and model[key] >= 0):
            return f"'{key}' is {model[key]!r}, not a count"
    return None


def _feature_problem(name: str, parameters: list, trained_on: dict) -> str | None:
    """What keeps ``name`` from being a feature of those parameters and settings, or None."""
    kind, _, rest = name.partition(":")
    numeric = {s for s, seen in trained_on.items() if isinstance(seen, dict) and "low" in seen}

    def parameter(x):
        return None if x in parameters else f"names {x!r}, not a parameter of the model"
    if kind == "log":
        return parameter(rest)
    if kind == "pair":
        a, star, b = rest.partition("*")
        return parameter(a) or parameter(b) if star else "is not pair:a*b"
    if kind == "is":
        x, equals, _ = rest.partition("=")
        return parameter(x) if equals else "is not is:x=value"
    if kind == "bound":
        return None if rest == "" else "is not bound:"
    setting, slash, x = rest.partition("/")
    if kind == "choice":
        setting, equals, _ = setting.partition("=")
        if not equals or setting not in trained_on or setting in numeric:
            return "does not name a setting of choices that the model was trained on"
    elif kind in ("in", "lin", "insize", "tiles", "waste"):
        if setting not in numeric:
            return "does not name a numeric setting that the model was trained on"
        if kind == "in" and slash or kind in ("insize", "tiles", "waste") and not slash:
            return f"is not {kind}:setting" + ("" if kind == "in" else "/parameter")
    else:
        return "is of no kind the model knows (log, pair, is, bound, in, lin, choice, insize, " \
               "tiles, waste)"
    return parameter(x) if slash else None


def _finite(value) -> bool:
    return _number(value) and math.isfinite(value)


def _kind(value) -> str:
    return type(value).__name__ if value is not None else "null"
