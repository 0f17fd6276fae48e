"""Helpers shared by several ``codesign`` sub-commands."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

from ..errors import CodesignError

#: What ``--storage`` takes (``codesign optimize`` and ``codesign worker`` alike; search.open_storage).
#: SQLAlchemy reads ``sqlite:///x.db`` as a path relative to the current directory, four slashes as
#: an absolute one.
STORAGE_HELP = ("a journal file (a path ending in .journal, or journal:PATH) or a database URL: "
                "postgresql://user:password@host/db, sqlite:///relative/path.db or "
                "sqlite:////absolute/path.db")


#: The end of every command's "Exit codes:" epilog: a bug (codesign.cli.main turns any other exception
#: into exit 3) and the two signals every command handles (codesign.interrupts.catch, installed by
#: main for all of them: SIGTERM ends any command as Ctrl-C does).
EXIT_BUG = ("3 a bug in codesign or a plugin (one internal error: line naming it; a full disk, a quota "
            "or a read-only file system is exit 2)")
EXIT_SIGNALS = "130 interrupted (Ctrl-C), 143 terminated (SIGTERM)"


def ensure_out_dir(path: str | os.PathLike, option: str = "--out", *, create: bool = True) -> Path:
    """Create the output directory ``path`` (and its parents) and return it.

    Checked before any work starts, so a long run does not fail at its end.

    Args:
        option: how the message names the directory: the option the user gave (``"--out"``), or
            e.g. ``"output directory"`` when ``path`` is a default.
        create: ``False`` only checks that the directory can be made, for a command that creates
            it once its input has been accepted (a refused spec leaves no empty directory behind).

    Raises:
        CodesignError: ``path`` (or one of its parents) exists and is not a directory, or it
            cannot be created; one line: ``--out PATH: exists and is not a directory``.
    """
    p = Path(path)
    shown = os.fspath(path)
    if p.exists() and not p.is_dir():
        raise CodesignError(f"{option} {shown}: exists and is not a directory")
    _check_parents(p, option, shown)
    _check_writable(p, option, shown)
    if not create:
        return p
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CodesignError(f"{option} {shown}: cannot create the directory: "
                            f"{exc.strerror or exc}") from None
    return p


def check_out_file(path: str | os.PathLike, option: str = "--out", inputs=()) -> None:
    """Refuse an output *file* path that cannot be written (a directory, or a parent that is a
    file) or that is one of the command's ``inputs`` (writing it would replace them), before a long
    run rather than after it. Raises :class:`CodesignError`."""
    p, shown = Path(path), os.fspath(path)
    if p.is_dir():
        raise CodesignError(f"{option} {shown}: is a directory; expected a file path")
    _check_parents(p, option, shown)
    if p.exists() and not os.access(p, os.W_OK):
        raise CodesignError(f"{option} {shown}: cannot write the file: permission denied")
    _check_writable(p, option, shown)
    for f in inputs:
        if p.exists() and Path(f).exists() and os.path.samefile(p, f):
            raise CodesignError(f"{option} {shown}: is the input file {os.fspath(f)}; writing it would replace "
                                "that input (give another output path)")


def _check_writable(d: Path, option: str, shown: str) -> None:
    """Refuse when the directory ``d``, or the nearest existing one above it (where ``d`` would be
    created), takes no new file: a read-only output directory let sweep, optimize, study, validate
    and calibrate run to the end and then fail with an internal error, the work lost (fresh-user
    trial, session 35). Probed by creating a temporary file, which answers for root, ACLs and
    read-only mounts alike."""
    import tempfile

    base = next((q for q in (d, *d.parents) if q.exists()), None)
    if base is None or not base.is_dir():
        return  # _check_parents names a parent that is a file
    try:
        with tempfile.TemporaryFile(dir=base):
            pass
    except OSError as exc:
        where = "" if base == d else f" (in {base})"
        raise CodesignError(f"{option} {shown}: cannot write there{where}: "
                            f"{(exc.strerror or str(exc)).lower()}") from None


def _check_parents(p: Path, option: str, shown: str) -> None:
    for parent in p.parents:
        if parent.exists() and not parent.is_dir():
            raise CodesignError(f"{option} {shown}: {parent} exists and is not a directory")


def print_json(doc) -> None:
    """Print one JSON document on stdout (``--json``), through
    :func:`codesign.evaluation.jsonable`: NaN/inf as null, numpy scalars as Python, float32 results
    at their own digits."""
    import json
    import sys

    from ..evaluation import jsonable

    json.dump(jsonable(doc), sys.stdout, indent=2)
    print()


def path_type(text: str) -> str:
    """argparse type for an output path (``--out``): refuses an empty or blank one (an unset shell
    variable, ``--out "$DIR"``), which read as "" meant the default or the current directory."""
    import argparse

    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: empty; give a path")
    return text


def whole_type(text: str) -> int:
    """argparse type for a count (``--trials``, ``--points``, ``--steps`` …): a whole number, also
    written as a float with a whole value (``20.0``, as a spec may write it; ``1e30`` is refused)."""
    import argparse

    try:
        return int(text)
    except ValueError:
        pass
    from ..spec import whole_count

    try:
        value = whole_count(float(text))
    except ValueError:
        value = None
    if not isinstance(value, int):
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return value


def seed_type(text: str) -> int:
    """argparse type for ``--seed``: a whole number in [0, 2**32) (what Optuna and NumPy accept)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**32) (got {value})")
    return value


#: The ``[deployment]`` keys :func:`deployment_note` names: what most changes a design's figures.
NOTED_DEPLOYMENT_KEYS = ("tp", "weights_format", "cost_model")


def deployment_note(spec, shown: str, *, varied=(), cost_model: str | None = None) -> str | None:
    """The note for a spec with no ``[deployment]`` table (in it or any file it includes), which is
    priced with :class:`codesign.spec.Deployment`'s defaults, silently until session 44 (a fresh
    user read a TP 1, BF16 result as the model's): ``"spec.toml has no [deployment]; using tp = 1,
    weights_format = "bf16", cost_model = "analytical""`` (the values the spec took, so the
    defaults as the code sets them), leaving out the keys a search varies (``varied``: dotted
    ``deployment.*`` keys) and ``cost_model`` when the command line names one. None for a spec
    with a ``[deployment]``, or when every noted key is set otherwise. A CLI note, not the
    loader's: a library caller's spec is its own business."""
    import json

    if any(path[:1] == ("deployment",) for path in spec.origins):
        return None
    keys = [k for k in NOTED_DEPLOYMENT_KEYS
            if f"deployment.{k}" not in varied and not (k == "cost_model" and cost_model)]
    if not keys:
        return None
    values = [(k, getattr(spec.deployment, k)) for k in keys]
    return f"{shown} has no [deployment]; using " + ", ".join(
        f"{k} = {json.dumps(v) if isinstance(v, str) else v}" for k, v in values)


#: ``(deployment key, model key of the checkpoint's own format, what it formats)``: the weight
#: formats :func:`weights_format_note` compares with the model's native ones.
NATIVE_FORMAT_KEYS = (("weights_format", "native_weights_format", "weights"),
                      ("moe_weights_format", "native_moe_weights_format", "MoE expert weights"))


def weights_format_note(spec, shown: str, *, varied=()) -> str | None:
    """The note for a spec that sets no weights format of its ``[deployment]`` (in it or any file
    it includes) where the format it then takes (:class:`codesign.spec.Deployment`'s default;
    ``moe_weights_format`` follows ``weights_format``) is not the model's native one
    (``model.native_weights_format``, ``model.native_moe_weights_format``): a ``[deployment]`` of
    ``tp = 8`` alone priced gpt-oss-120b's MXFP4 experts in BF16, 29.2 GB/chip of weights, silently
    (fresh-user trial, session 44). Names the format taken, the model's, and the key that sets it:
    ``'spec.toml sets no deployment.moe_weights_format, so the MoE expert weights are priced in
    "bf16" (it defaults to deployment.weights_format), not the model's native "mxfp4"
    (model.native_moe_weights_format in gpt-oss-120b.toml); set moe_weights_format = "mxfp4" in
    [deployment] to price them as released'``. Leaves out the keys a search varies (``varied``:
    dotted ``deployment.*`` keys), the MoE key of a model with no experts or when the
    ``weights_format`` said sets it too (native formats alike: DeepSeek-R1's FP8), and a pool's own formats
    (``[deployment.prefill]``/``[deployment.decode]`` are not read for them). None when every
    format is set, or taken as the model's."""
    import json

    d, m = spec.deployment, spec.model
    said = []
    for key, native_key, what in NATIVE_FORMAT_KEYS:
        if (("deployment", key) in spec.origins or f"deployment.{key}" in varied
                or ("model", native_key) not in spec.origins):  # set; searched; or the model declares none
            continue
        if key == "moe_weights_format":
            if not m.num_experts or "deployment.weights_format" in varied:  # no experts; or it follows a searched one
                continue
            if said and m.native_moe_weights_format == m.native_weights_format:
                continue  # the weights_format said above sets the experts' too
            taken, why = d.moe_weights_format or d.weights_format, "it defaults to deployment.weights_format"
        else:
            taken, why = d.weights_format, "its default"
        native = getattr(m, native_key)
        if taken == native:
            continue
        said.append(f"{shown} sets no deployment.{key}, so the {what} are priced in {json.dumps(taken)} ({why}), "
                    f"not the model's native {json.dumps(native)} (model.{native_key} in "
                    f"{spec.origin_of('model', native_key)}); set {key} = {json.dumps(native)} in [deployment] "
                    "to price them as released")
    return "; ".join(said) or None


def print_deployment_notes(spec, shown: str, *, varied=(), cost_model: str | None = None) -> None:
    """Print on stderr, one ``note:`` line each, what a run of ``spec`` takes that its
    ``[deployment]`` does not say: :func:`deployment_note` (no ``[deployment]`` at all) and
    :func:`weights_format_note` (a weights format other than the model's native one). The one call
    evaluate, optimize and sweep make (``varied``: the dotted keys a search varies;
    ``cost_model``: the one the command line names)."""
    for note in (deployment_note(spec, shown, varied=varied, cost_model=cost_model),
                 weights_format_note(spec, shown, varied=varied)):
        if note:
            print(f"note: {note}", file=sys.stderr)


def default_out_dir(spec, spec_path: str) -> Path:
    """``runs/<spec name>`` (the spec file's stem when it has no ``name``): the default ``--out``.

    Raises:
        CodesignError: a ``name`` that is no single file name (``../escaped``, ``a/b``, ``..``):
            it would put the run outside ``runs/`` or in a nested directory.
    """
    from ..errors import SpecError
    from ..spec import is_file_name

    name = spec.name or Path(spec_path).stem
    if spec.name and not is_file_name(name):
        raise SpecError([(spec.origin("name"), "name", f"{name!r} is the default output directory runs/<name>, so it "
                          "must be one file name (no '/', '\\', '.' or '..'); rename it or give --out")])
    return Path("runs") / name



@contextmanager
def progress_bar(command: str, description: str = "", *, transient: bool = False, skip_finished: bool = False):
    """A rich progress bar on stderr (``<command> <description>  bar  done/total  elapsed``); yields
    ``callback(done, total)``. The bar starts with the first count, so input refused before any work
    is one line with no bar above it, and stops when the block ends (an error included).

    Args:
        transient: remove the bar once done (``validate``: its tables follow); no bar at all when
            stderr is not a terminal (a log kept a blank line where it was).
        skip_finished: a first count that is already complete starts no bar (a finished study's
            "nothing to run" had a full bar above it).
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if transient and not console.is_terminal:  # nothing to see once removed; rich left a blank line in a log
        yield lambda done, total: None
        return
    prog = Progress(TextColumn(f"[bold]{command}[/bold] {{task.description}}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=transient)
    task = prog.add_task(description, total=None)

    def progress(done, total):
        if not prog.live.is_started and skip_finished and total is not None and done >= total:
            return
        prog.update(task, completed=done, total=total)  # before the start: its first frame said "0/?"
        if not prog.live.is_started:
            prog.start()

    try:
        yield progress
    finally:
        if prog.live.is_started:
            prog.stop()
