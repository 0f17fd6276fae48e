"""The plugin manager: loads plugins from the ``codesign`` entry-point group, one at a time.

Built-in plugins are found the same way as third-party ones, through entry points. Fault isolation
(``docs/plugins.md``, "When a plugin breaks"):

* each entry point loads in its own ``try``: a plugin that fails to import (or registers a hook
  that does not exist, e.g. a typo) is reported as
  ``plugin NAME (DIST VERSION) failed to load: ...`` and the tool goes on without it;
* each registration hook is called once per plugin, in its own ``try``: a plugin whose hook raises
  or returns something that is not a list of the expected records is named and skipped;
* a name registered twice keeps the built-in's (``codesign`` distribution) or else the first
  loaded, and names both plugins and distributions;
* ``CODESIGN_STRICT_PLUGINS=1`` turns every one of these warnings into a :class:`PluginError`
  (for plugin development and CI); ``CODESIGN_PLUGINS=name1,name2`` loads only the named plugins.

Warnings go to stderr as one line each (``warning: plugin ...``) and are also issued as
:class:`PluginWarning` (ignored by the default warning filters, so the CLI prints them once; tests
catch them with ``pytest.warns(PluginWarning)``).
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import attrs
import pluggy

from . import hookspecs
from .errors import PLUGIN_EXCEPTIONS, PluginBugError, PluginError, close_name

GROUP = "codesign"
#: Environment variable that makes plugin failures fatal.
STRICT_ENV = "CODESIGN_STRICT_PLUGINS"
#: Environment variable listing the only plugins (entry-point names) to load, comma-separated.
ONLY_ENV = "CODESIGN_PLUGINS"
#: The distribution whose plugins are the built-ins (they win a name clash).
BUILTIN_DIST = "codesign"

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")

#: The separately installable plugins of a source checkout of codesign: ``plugins/`` beside the
#: ``codesign`` package, each a directory with its own ``pyproject.toml`` (the example
#: ``plugins/codesign_example_roofline``). Absent from an installed wheel, where an unknown cost
#: model gets the generic install hint alone (:meth:`PluginManager.unknown_cost_model`).
SOURCE_PLUGINS = Path(__file__).resolve().parent.parent / "plugins"


def source_plugin(name: str, root: Path | None = None) -> tuple[str, Path] | None:
    """``(distribution, directory)`` of the plugin of a source checkout (``root``, default
    :data:`SOURCE_PLUGINS`) whose ``pyproject.toml`` registers an entry point ``name`` in the
    :data:`GROUP` group (``[project.entry-points.codesign]``), or None: read from the files, so the
    core names no particular plugin. The first such directory in name order; an unreadable
    ``pyproject.toml`` is passed over."""
    import tomllib

    root = SOURCE_PLUGINS if root is None else root
    try:
        files = sorted(root.glob("*/pyproject.toml"))
    except OSError:
        return None
    for f in files:
        try:
            project = tomllib.loads(f.read_text(encoding="utf-8")).get("project", {})
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        eps = project.get("entry-points", {}) if isinstance(project, dict) else {}
        group = eps.get(GROUP) if isinstance(eps, dict) else None
        if isinstance(group, dict) and name in group:
            return str(project.get("name") or f.parent.name), f.parent
    return None


def _from_cwd(path: Path) -> str:
    """``path`` relative to the current directory when it is under it (``.`` for the directory
    itself), for a command to run from there; else as it is."""
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except (ValueError, OSError):  # not under it; a current directory that was deleted
        return str(path)


class PluginWarning(RuntimeWarning):
    """A plugin failed and was skipped (see :data:`STRICT_ENV` to make this fatal)."""


# The CLI prints each plugin warning itself, as one line on stderr; the warnings machinery would
# print it a second time with a source line. Tests still see them (pytest.warns records "always").
warnings.filterwarnings("ignore", category=PluginWarning)


@attrs.define
class PluginStatus:
    """What ``codesign plugins list`` shows for one plugin."""

    name: str
    dist: str
    version: str
    module: str
    status: str  # "loaded" | "failed" | "disabled" | "skipped" (its entry-point name was taken)
    error: str = ""
    hooks: list[str] = attrs.field(factory=list)

    @property
    def label(self) -> str:
        """``NAME (DIST VERSION)``, how messages name a plugin."""
        return f"{self.name} ({self.dist} {self.version})".replace(" )", ")")


def _strict() -> bool:
    return os.environ.get(STRICT_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def _public() -> set[str]:
    import codesign

    return set(codesign.__all__)


def _record_type(hook_name: str) -> type | None:
    """The record class a registration hook returns (``None``: any object with a ``name``)."""
    if hook_name == "codesign_cost_models":
        from .costmodel import CostModelInfo

        return CostModelInfo
    if hook_name == "codesign_number_formats":
        from .formats import NumberFormat

        return NumberFormat
    if hook_name == "codesign_baselines":
        from .baselines import Baseline

        return Baseline
    if hook_name == "codesign_samplers":
        from .search import SamplerInfo

        return SamplerInfo
    return None


def _dist_name(ep) -> str:
    """The name of the distribution that declares entry point ``ep``; ``"?"`` when it cannot be read."""
    try:
        return ep.dist.metadata["Name"] if getattr(ep, "dist", None) is not None else "?"
    except Exception:  # noqa: BLE001 - malformed METADATA
        return "?"


def _shown(value, width: int = 80) -> str:
    """``repr(value)`` as a message shows a plugin's odd return value: at most ``width`` characters,
    ending in ``…`` when cut (``CostModelInfo(name='x', …, differentiable=F`` read as the record's
    end: plugin-author trial, session 46)."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 1] + "…"


class PluginManager:
    """Wraps :class:`pluggy.PluginManager` with typed registries and per-plugin fault isolation.

    Args:
        load_entrypoints: load the ``codesign`` entry-point group (``False``: an empty manager for
            tests, filled with :meth:`register`).

    Raises:
        PluginError: only with ``CODESIGN_STRICT_PLUGINS=1``, on the first plugin failure.
    """

    def __init__(self, *, load_entrypoints: bool = True):
        self.pm = pluggy.PluginManager(GROUP)
        self.pm.add_hookspecs(hookspecs)
        self.status: list[PluginStatus] = []
        #: Every warning issued so far, one line each (``plugins list --json`` shows them).
        self.problems: list[str] = []
        #: Baselines whose efficiency knobs their cost model took, by (name, plugin, cost model,
        #: knobs): :func:`codesign.baselines.check_baseline_knobs` asks once per process.
        self.checked_baselines: set[tuple] = set()
        if load_entrypoints:
            self._load_entrypoints()

    # ------------------------------------------------------------------ loading
    def _load_entrypoints(self) -> None:
        only = os.environ.get(ONLY_ENV)
        wanted = {n.strip() for n in only.split(",") if n.strip()} if only else None
        try:
            eps = list(importlib.metadata.entry_points(group=GROUP))
        except Exception as exc:  # noqa: BLE001 - a broken metadata directory must not stop us
            self._fail(f"cannot read the {GROUP!r} entry points: {type(exc).__name__}: {exc}", exc)
            eps = []
        # the built-in plugins' entry points first: a plugin of another distribution named as one
        # ("analytical") is the one skipped, as a record of a built-in's name is (by the registries); the
        # first found won, and took the built-in cost model away (plugin-author trial, session 46)
        eps.sort(key=lambda ep: _dist_name(ep) != BUILTIN_DIST)  # stable: otherwise as found
        seen: dict[str, PluginStatus] = {}
        for ep in eps:
            dist = getattr(ep, "dist", None)
            dname = _dist_name(ep)
            try:
                dver = dist.version if dist is not None else "?"
            except Exception:  # noqa: BLE001 - malformed METADATA
                dver = "?"
            if ep.name in seen:
                first = seen[ep.name]
                if (first.dist, first.module) != (dname, ep.value):
                    why = f"the entry-point name {ep.name!r} is already taken by {first.label}"
                    # listed by `plugins list` as skipped, with why: it was in none of its tables
                    # (plugin-author trial, session 46); after the first, which messages name
                    self.status.append(PluginStatus(ep.name, dname, dver, ep.value, "skipped", why))
                    self._fail(f"plugin {ep.name} ({dname} {dver}) is not loaded: {why}")
                continue
            st = PluginStatus(ep.name, dname, dver, ep.value, "loaded")
            seen[ep.name] = st
            self.status.append(st)
            if wanted is not None and ep.name not in wanted:
                st.status = "disabled"
                continue
            try:
                module = ep.load()
            except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001 - isolation is the point
                self._failed(st, f"{type(exc).__name__}: {exc}", exc)
                continue
            self._register(module, st)

    def _register(self, plugin: Any, st: PluginStatus) -> None:
        try:
            self.pm.register(plugin, name=st.name)
        except Exception as exc:  # noqa: BLE001 - pluggy validation errors, name clashes
            self._failed(st, f"{type(exc).__name__}: {exc}", exc)
            return
        callers = self.pm.get_hookcallers(plugin) or []
        unknown = [hc.name for hc in callers if not hc.has_spec()]
        if unknown:
            self.pm.unregister(plugin)
            specs = [n for n in dir(hookspecs) if n.startswith("codesign_")]
            hints = []
            for u in unknown:
                close = close_name(u, specs, cutoff=0.6)  # difflib's default
                hints.append(f"{u!r}" + (f" (did you mean {close!r}?)" if close else ""))
            self._failed(st, "unknown hook " + ", ".join(hints) + "; hooks: " + ", ".join(specs), None)
            return
        st.hooks = sorted(hc.name for hc in callers)
        self._clear_cache()

    def register(self, plugin: Any, name: str) -> None:
        """Register an in-process plugin object (tests, scripts), isolated like an entry point."""
        st = PluginStatus(name, "<in-process>", "", repr(plugin), "loaded")
        self.status.append(st)
        self._register(plugin, st)

    def _clear_cache(self) -> None:
        for key in ("cost_models", "number_formats", "baselines", "samplers"):
            self.__dict__.pop(key, None)
        self.checked_baselines = set()

    # ------------------------------------------------------------------ failures
    def _failed(self, st: PluginStatus, error: str, exc: BaseException | None) -> None:
        st.status = "failed"
        st.error = error
        self._fail(f"plugin {st.label} failed to load: {error}", exc)

    def _fail(self, message: str, exc: BaseException | None = None) -> None:
        self.problems.append(message)
        if _strict():
            raise PluginError(message + f" ({STRICT_ENV} is set)") from exc
        warnings.warn(message, PluginWarning, stacklevel=3)
        print(f"warning: {message}", file=sys.stderr)

    def plugin_label(self, name: str) -> str:
        """``NAME (DIST VERSION)`` of a registered plugin, for messages."""
        for st in self.status:
            if st.name == name:
                return st.label
        return name

    def cost_model_label(self, name: str) -> str:
        """``cost model 'NAME' (plugin PLUGIN (DIST VERSION))`` of a registered cost model, as every
        message that blames one names it; ``cost model 'NAME'`` when none is registered by that name."""
        info = self.cost_models.get(name)
        return f"cost model {name!r}" + (f" (plugin {self.plugin_label(info.plugin)})" if info is not None else "")

    def _dist(self, plugin: str) -> str:
        for st in self.status:
            if st.name == plugin:
                return st.dist
        return ""

    # ------------------------------------------------------------------ registries
    def _collect(self, hook_name: str) -> list:
        """Call a registration hook on every plugin separately; a failing plugin is skipped."""
        kind = _record_type(hook_name)
        out: list = []
        hook = getattr(self.pm.hook, hook_name)
        what = "records with a name" if kind is None else (
            f"codesign.{kind.__name__}" if kind.__name__ in _public() else f"{kind.__module__}.{kind.__name__}")
        for impl in hook.get_hookimpls():
            label = self.plugin_label(impl.plugin_name)
            try:
                records = impl.function()
                single = isinstance(records, (str, bytes, dict)) or (
                    records is not None and not hasattr(records, "__iter__"))
                if not single:
                    records = list(records or [])
            except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001
                self._hook_failed(impl.plugin_name, f"plugin {label} failed in {hook_name}: "
                                  f"{type(exc).__name__}: {exc}", exc)
                continue
            if single:
                # one value, not a list of them: list() would split a string into its characters
                # ("returned str 'g'") or fail with "object is not iterable"
                self._hook_failed(impl.plugin_name, f"plugin {label} failed in {hook_name}: returned one "
                                  f"{type(records).__name__} {_shown(records)}, expected a list of {what}", None)
                continue
            bad = [r for r in records if (not isinstance(r, kind) if kind is not None else not hasattr(r, "name"))]
            if bad:
                self._hook_failed(impl.plugin_name, f"plugin {label} failed in {hook_name}: returned "
                                  f"{type(bad[0]).__name__} {_shown(bad[0])}, expected a list of {what}", None)
                continue
            bad = [r for r in records if not isinstance(r.name, str) or not _NAME.match(r.name)]
            if bad:
                self._hook_failed(impl.plugin_name, f"plugin {label} failed in {hook_name}: name "
                                  f"{bad[0].name!r} must be lowercase letters, digits, '_', '.', '-'", None)
                continue
            try:  # evolve runs the record's validators again (a CostModelInfo's accuracy: NaN, < 0)
                records = [attrs.evolve(r, plugin=impl.plugin_name) if attrs.has(type(r)) and hasattr(r, "plugin")
                           else r for r in records]
            except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001
                self._hook_failed(impl.plugin_name, f"plugin {label} failed in {hook_name}: "
                                  f"{type(exc).__name__}: {exc}", exc)
                continue
            out.extend(records)
        by_name: dict[str, Any] = {}
        for r in out:
            if r.name not in by_name:
                by_name[r.name] = r
                continue
            first = by_name[r.name]
            p_first, p_r = getattr(first, "plugin", "?"), getattr(r, "plugin", "?")
            keep, drop = (r, p_first) if (self._dist(p_r) == BUILTIN_DIST
                                          and self._dist(p_first) != BUILTIN_DIST) else (first, p_r)
            by_name[r.name] = keep
            self._fail(f"{hook_name}: {r.name!r} is registered by both plugin "
                       f"{self.plugin_label(p_first)} and plugin {self.plugin_label(p_r)}; "
                       f"using the one of plugin {getattr(keep, 'plugin', '?')!r} and ignoring the one of {drop!r}")
        return list(by_name.values())

    def _hook_failed(self, plugin: str, message: str, exc: BaseException | None) -> None:
        for st in self.status:
            if st.name == plugin and st.status != "skipped":  # not another distribution's of that name
                st.status = "failed"
                st.error = message.split(": ", 1)[1] if ": " in message else message
        self._fail(message, exc)

    @functools.cached_property
    def cost_models(self) -> dict:
        """Registered cost models by name (:class:`codesign.CostModelInfo`)."""
        return {r.name: r for r in self._collect("codesign_cost_models")}

    @functools.cached_property
    def number_formats(self) -> dict:
        """Registered number formats by name (:class:`codesign.NumberFormat`)."""
        return {r.name: r for r in self._collect("codesign_number_formats")}

    @functools.cached_property
    def baselines(self) -> dict:
        """Registered baselines by name (:class:`codesign.Baseline`)."""
        return {r.name: r for r in self._collect("codesign_baselines")}

    @functools.cached_property
    def samplers(self) -> dict:
        """Registered Optuna samplers by name (:class:`codesign.search.SamplerInfo`)."""
        return {r.name: r for r in self._collect("codesign_samplers")}

    # ------------------------------------------------------------------ cost models
    def select_cost_model(self, spec=None) -> str:
        """The name of the cost model ``deployment.cost_model = "auto"`` means for ``spec``.

        The rule (docs/plugins.md, "Choosing a cost model"): among the loaded cost models whose
        ``supports(spec)`` is true (or that declare no ``supports``), the one with the smallest
        declared ``accuracy`` (median relative TPOT error); models without a declared accuracy rank
        after all that declare one; ties go to the alphabetically first name.

        Raises:
            PluginError: no loaded cost model supports ``spec``.
        """
        candidates, refused = self.cost_model_candidates(spec)
        if not candidates:
            raise PluginError("deployment.cost_model = 'auto': no loaded cost model can price this spec"
                              + (f" (declined: {', '.join(sorted(refused))})" if refused else ""))
        return candidates[0].name

    def cost_model_candidates(self, spec=None) -> tuple[list, list[str]]:
        """The loaded cost models ``"auto"`` chooses among for ``spec``, in the order of
        :meth:`select_cost_model`'s rule (the chosen one first), and the names of those whose
        ``supports(spec)`` declined it: ``(candidates, refused)``."""
        candidates = []
        refused = []
        for info in self.cost_models.values():
            if spec is not None and info.supports is not None:
                try:
                    ok = bool(info.supports(spec))
                except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001
                    self._fail(f"{self.cost_model_label(info.name)} "
                               f"raised in supports(): {type(exc).__name__}: {exc}", exc)
                    ok = False
                if not ok:
                    refused.append(info.name)
                    continue
            candidates.append(info)
        candidates.sort(key=lambda m: (m.accuracy is None, m.accuracy if m.accuracy is not None else 0.0,
                                       m.name))
        return candidates, refused

    def resolve_cost_model(self, name: str, spec=None) -> str:
        """``name`` itself, or the selected model's name when ``name == "auto"``."""
        return self.select_cost_model(spec) if name == "auto" else name

    def cost_model(self, name: str, *, spec=None):
        """Instantiate the cost model ``name`` (``"auto"``: see :meth:`select_cost_model`).

        Raises:
            PluginError: no plugin registers it (the message lists those that do exist), or its
                factory raised (naming the plugin).
        """
        name = self.resolve_cost_model(name, spec)
        models = self.cost_models
        if name not in models:
            raise PluginError(self.unknown_cost_model(name))
        info = models[name]
        try:
            return info.factory()
        except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001
            raise PluginBugError(f"{self.cost_model_label(name)} failed to "
                              f"start: {type(exc).__name__}: {exc}") from exc


    def cost_model_guess(self, name: str) -> str | None:
        """The registered cost model that the unregistered ``name`` most likely misspells
        (:func:`~codesign.errors.close_name` at difflib's default cutoff, 0.6: ``'Analytical'`` and
        ``'rooflin'`` too), the one guess every message about such a name gives; None if none."""
        return close_name(name, sorted(self.cost_models), cutoff=0.6)

    def unknown_cost_model(self, name: str) -> str:
        """Why ``name`` names no cost model, as one line: the registered ones (and a close one, for a
        typo), the plugins that did not load (failed, or left out by ``CODESIGN_PLUGINS``) and how it
        is installed: a plugin of this source checkout (:func:`source_plugin`: its pyproject.toml
        registers an entry point ``name``) that no entry point loaded gets its exact line, ``pip
        install -e plugins/codesign_example_roofline`` (the directory relative to the current one
        when under it), where the generic hint said ``pip install <package>`` (fresh-user trial,
        session 45); any other name the generic hint, ``pip install`` of a package that registers
        itself in the ``codesign`` entry-point group. A spec naming the example plugin's
        ``roofline`` where it was not installed said only "no cost model named 'roofline' is
        registered" (fresh-user trial, session 42)."""
        models = sorted(self.cost_models)
        guess = self.cost_model_guess(name)
        mean = f" (did you mean {guess!r}?)" if guess else ""
        parts = [f"no cost model named {name!r} is registered{mean}; available: {', '.join(models) or 'none'} "
                 "(or 'auto')"]
        failed = [st.label for st in self.status if st.status in ("failed", "skipped")]
        if failed:
            parts.append(f"plugins that failed to load: {', '.join(failed)} (`codesign plugins list` says why)")
        left_out = [st.label for st in self.status if st.status == "disabled"]
        if left_out:
            parts.append(f"plugins left out by {ONLY_ENV}={os.environ.get(ONLY_ENV, '')}: {', '.join(left_out)}")
        shipped = None if any(st.name == name for st in self.status) else source_plugin(name)
        if shipped:  # a plugin of this checkout that is not installed (not failed, nor left out)
            dist, where = shipped
            shown = _from_cwd(where)
            parts.append(f"plugin {name!r} of this repository ({dist}) is not installed: install it with "
                         f"`pip install -e {shown}`; `codesign plugins list` shows what is installed")
        else:
            parts.append(f"a cost model from another package is installed with `pip install <package>`, a package "
                         f"that registers its plugin module in the {GROUP!r} entry-point group "
                         f"([project.entry-points.{GROUP}] in its pyproject.toml); `codesign plugins list` shows "
                         "what is installed")
        return "; ".join(parts)

    def cost_model_parameters(self, name: str, *, spec=None) -> list[str]:
        """The spec key paths the cost model ``name`` can vary (its ``parameters()``).

        Raises:
            PluginError: as :meth:`cost_model`.
            PluginBugError: ``parameters()`` raised or returned something other than key paths
                (named with its plugin: it was an internal error naming neither, fresh-user trial of
                session 26).
        """
        name = self.resolve_cost_model(name, spec)
        model = self.cost_model(name, spec=spec)
        who = self.cost_model_label(name)
        try:
            got = model.parameters()
            keys = [] if isinstance(got, str) else list(got)  # a string is no list of keys
        except PLUGIN_EXCEPTIONS as exc:  # noqa: BLE001
            raise PluginBugError(f"{who} raised in parameters(): "
                                 f"{type(exc).__name__}: {exc}") from exc
        if isinstance(got, str) or not all(isinstance(k, str) for k in keys):
            raise PluginBugError(f"{who}: parameters() must return a list of "
                                 f"spec key paths (str), got {_shown(got)}")
        return keys


@functools.cache
def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager (entry points loaded once)."""
    return PluginManager()
