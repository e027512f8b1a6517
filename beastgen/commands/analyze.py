"""``beastgen analyze``: a tuning's measurements (a results store or a Kernel Tuner cache file) in
pictures, tables and one HTML report."""
import importlib.util
import json
import os

from ..errors import BeastError
from ..support.progress import ShareBar
from .common import parse_settings, shows_progress


def run(args) -> int:
    missing = [name for name in ("matplotlib", "scipy") if importlib.util.find_spec(name) is None]
    if missing:
        raise BeastError(f"analyze needs {' and '.join(missing)}: pip install 'beastgen[analyze]'")
    from ..analyze import analyze  # SciPy and matplotlib: imported by this command only
    from ..analyze.report import as_dict, text_summary, write_report

    directory = args.output or _default_directory(args.results)
    with ShareBar("analysing", shows_progress(args)) as bar:
        analysis = analyze(args.results, run=args.run, space=args.space, device=args.device,
                           settings=parse_settings(args.settings), generated_dir=args.generated_dir,
                           progress=lambda share, what: bar(share, 0.0))
        files, report = write_report(analysis, directory)
        bar(1.0, 0.0)
    print(text_summary(analysis, files, report))
    if args.json:
        print(json.dumps(as_dict(analysis, dict(files, report=report)),
                         default=lambda value: value.item() if hasattr(value, "item") else str(value)))
    return 0


def _default_directory(path: str) -> str:
    """``NAME-analysis`` in the working directory, after the file's name without its suffixes."""
    name = os.path.basename(path)
    for suffix in (".gz", ".json", ".db", ".sqlite"):
        name = name[:-len(suffix)] if name.endswith(suffix) else name
    return f"{name or 'results'}-analysis"
