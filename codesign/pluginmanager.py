"""The plugin manager: loads plugins from the ``codesign`` entry-point group, one at a time.

Built-in plugins are found the same way as third-party ones, through entry points. Each plugin
loads in its own ``try``: a plugin that fails to import is reported
(``plugin NAME (DIST VERSION) failed to load: ...``) and the tool goes on without it, unless
``CODESIGN_STRICT_PLUGINS=1`` makes such failures fatal (for plugin development).
``CODESIGN_PLUGINS=name1,name2`` loads only the named plugins.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import sys
import warnings
from typing import Any

import attrs
import pluggy

from . import hookspecs
from .errors import PluginError

GROUP = "codesign"


@attrs.define
class PluginStatus:
    name: str
    dist: str
    version: str
    module: str
    status: str  # "loaded" | "failed" | "disabled"
    error: str = ""
    hooks: list[str] = attrs.field(factory=list)


def _strict() -> bool:
    return os.environ.get("CODESIGN_STRICT_PLUGINS", "") not in ("", "0", "false", "no")


class PluginManager:
    """Wraps :class:`pluggy.PluginManager` with typed registries and per-plugin fault isolation."""

    def __init__(self, *, load_entrypoints: bool = True):
        self.pm = pluggy.PluginManager(GROUP)
        self.pm.add_hookspecs(hookspecs)
        self.status: list[PluginStatus] = []
        if load_entrypoints:
            self._load_entrypoints()

    def _load_entrypoints(self) -> None:
        only = os.environ.get("CODESIGN_PLUGINS")
        wanted = {n.strip() for n in only.split(",")} if only else None
        seen = set()
        for ep in importlib.metadata.entry_points(group=GROUP):
            if ep.name in seen:
                continue
            seen.add(ep.name)
            dist = getattr(ep, "dist", None)
            dname = dist.metadata["Name"] if dist is not None else "?"
            dver = dist.version if dist is not None else "?"
            st = PluginStatus(ep.name, dname, dver, ep.value, "loaded")
            self.status.append(st)
            if wanted is not None and ep.name not in wanted:
                st.status = "disabled"
                continue
            try:
                module = ep.load()
                self.pm.register(module, name=ep.name)
                st.hooks = sorted(h.name for h in self.pm.get_hookcallers(module) or [])
            except Exception as exc:  # noqa: BLE001 - isolation is the point
                st.status = "failed"
                st.error = f"{type(exc).__name__}: {exc}"
                self._fail(f"plugin {ep.name} ({dname} {dver}) failed to load: {st.error}", exc)

    def register(self, plugin: Any, name: str) -> None:
        """Register an in-process plugin object (tests, scripts)."""
        self.pm.register(plugin, name=name)
        self.status.append(PluginStatus(name, "<in-process>", "", repr(plugin), "loaded",
                                        hooks=sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])))
        self.__dict__.pop("_cache", None)

    def _fail(self, message: str, exc: BaseException | None = None) -> None:
        if _strict():
            raise PluginError(message) from exc
        warnings.warn(message, RuntimeWarning, stacklevel=3)
        print(f"warning: {message}", file=sys.stderr)

    def _collect(self, hook_name: str) -> list:
        """Call a registration hook on every plugin separately; a failing plugin is skipped."""
        out = []
        hook = getattr(self.pm.hook, hook_name)
        for impl in hook.get_hookimpls():
            try:
                records = impl.function() or []
            except Exception as exc:  # noqa: BLE001
                self._fail(f"plugin {impl.plugin_name} failed in {hook_name}: {type(exc).__name__}: {exc}", exc)
                continue
            for r in records:
                out.append(attrs.evolve(r, plugin=impl.plugin_name) if hasattr(r, "plugin") else r)
        by_name: dict[str, Any] = {}
        for r in out:
            if r.name in by_name:
                raise PluginError(
                    f"{hook_name}: {r.name!r} is registered by both plugin "
                    f"{by_name[r.name].plugin!r} and plugin {r.plugin!r}")
            by_name[r.name] = r
        return out

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

    def cost_model(self, name: str):
        """Instantiate the cost model ``name``.

        Raises:
            PluginError: no plugin registers it (the message lists those that do exist).
        """
        models = self.cost_models
        if name not in models:
            have = ", ".join(sorted(models)) or "none"
            raise PluginError(f"no cost model named {name!r} is registered (available: {have})")
        try:
            return models[name].factory()
        except Exception as exc:  # noqa: BLE001
            raise PluginError(f"cost model {name!r} (plugin {models[name].plugin}) failed to start: "
                              f"{type(exc).__name__}: {exc}") from exc


@functools.cache
def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager (entry points loaded once)."""
    return PluginManager()
