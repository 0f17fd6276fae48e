"""Plugin fault isolation, strict mode, selection and ``plugins list``.

A broken *installed* plugin is simulated the way conda's tests do it: a fake ``*.dist-info``
directory (``METADATA`` + ``entry_points.txt``) on a temporary path added to ``sys.path``, so
``importlib.metadata.entry_points(group="codesign")`` finds it exactly as it finds a pip-installed
distribution.
"""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pytest

import codesign
from codesign.errors import PluginError
from codesign.pluginmanager import PluginManager, PluginWarning, get_plugin_manager
from conftest import SPECS

GB200 = SPECS / "examples" / "gb200-gpt-oss-120b.toml"


def _fake_dist(tmp_path, monkeypatch, *, dist="codesign-broken", version="9.9", ep="broken",
               module="codesign_broken_plugin", source="raise RuntimeError('boom at import')\n"):
    """Install a fake distribution on ``tmp_path`` whose ``codesign`` entry point is ``module``."""
    info = tmp_path / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[codesign]\n{ep} = {module}\n")
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    get_plugin_manager.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_manager(monkeypatch):
    """Every test starts and ends with a fresh process-wide plugin manager, lenient by default."""
    monkeypatch.delenv("CODESIGN_STRICT_PLUGINS", raising=False)
    monkeypatch.delenv("CODESIGN_PLUGINS", raising=False)
    get_plugin_manager.cache_clear()
    yield
    get_plugin_manager.cache_clear()


# ---------------------------------------------------------------------- a plugin that fails to import
def test_broken_entry_point_warns_and_the_rest_loads(tmp_path, monkeypatch):
    _fake_dist(tmp_path, monkeypatch)
    with pytest.warns(PluginWarning, match=r"plugin broken \(codesign-broken 9\.9\) failed to load: "
                                           r"RuntimeError: boom at import"):
        pm = PluginManager()
    by = {s.name: s for s in pm.status}
    assert by["broken"].status == "failed" and "boom at import" in by["broken"].error
    assert by["analytical"].status == "loaded"
    assert "analytical" in pm.cost_models and "mxfp4" in pm.number_formats


def test_plugins_list_shows_the_failed_plugin_and_builtins_still_work(tmp_path, monkeypatch, cli):
    _fake_dist(tmp_path, monkeypatch)
    with pytest.warns(PluginWarning):
        rc, out, err = cli("plugins", "list", "--json")
    assert rc == 0
    assert "warning: plugin broken (codesign-broken 9.9) failed to load: RuntimeError: boom at import" in err
    doc = json.loads(out)
    by = {p["name"]: p for p in doc["plugins"]}
    assert by["broken"]["status"] == "failed" and by["broken"]["distribution"] == "codesign-broken"
    assert by["analytical"]["status"] == "loaded" and by["analytical"]["cost_models"] == ["analytical"]
    assert any("broken" in p for p in doc["problems"])
    # the rest of the tool keeps working with the broken plugin installed
    with pytest.warns(PluginWarning):
        get_plugin_manager.cache_clear()
        rc, out, err = cli("evaluate", GB200, "--json")
    assert rc == 0, err
    assert json.loads(out)["points"][0]["feasible"] is True


def test_table_output_names_the_failure(tmp_path, monkeypatch, cli):
    """At 80 columns the table used to cut names ("codesign-roo…") and fold the failure reason into
    a narrow status cell; the reason is now printed whole under the table (fresh-user trial,
    session 26)."""
    _fake_dist(tmp_path, monkeypatch)
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.warns(PluginWarning):
        rc, out, err = cli("plugins", "list")
    assert rc == 0
    assert "broken" in out and "failed" in out
    assert "…" not in out
    assert any(line.startswith("broken failed: ") and "RuntimeError: boom at import" in line
               for line in out.splitlines())
    # nor broken mid-word at 80 columns ("number_format s", "codesign-bw model": plugin-author
    # trial, session 46): the mx plugin's hook codesign_number_formats is shown whole without its
    # prefix, and the broken plugin's distribution whole, beside its version
    assert "│ number_formats " in out and "│ codesign-broken " in out, out
    assert max(len(line) for line in out.splitlines() if line[:1] in "│┃┏┡└") <= 80


def test_an_entry_point_named_as_a_built_in_is_listed_as_skipped(tmp_path, monkeypatch, cli):
    """A distribution whose entry point is named ``analytical`` (the built-in cost model's plugin)
    was skipped with a warning and was then in no table of `plugins list`; found before the
    built-in on sys.path it won, and the built-in analytical model was gone (plugin-author trial,
    session 46). The built-in is kept, and the other is listed as skipped, with why."""
    _fake_dist(tmp_path, monkeypatch, dist="codesign-clash", version="1.0", ep="analytical",
               module="codesign_clash_plugin", source="")
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.warns(PluginWarning, match=r"plugin analytical \(codesign-clash 1\.0\) is not loaded: the "
                                           r"entry-point name 'analytical' is already taken by analytical \(codesign "):
        rc, out, err = cli("plugins", "list", "--json")
    rows = [r for r in json.loads(out)["plugins"] if r["name"] == "analytical"]
    assert rc == 0 and [(r["distribution"], r["status"]) for r in rows] == [("codesign", "loaded"),
                                                                           ("codesign-clash", "skipped")]
    assert rows[0]["cost_models"] == ["analytical"] and rows[1]["cost_models"] == []
    assert rows[1]["error"].startswith("the entry-point name 'analytical' is already taken by analytical (codesign ")
    get_plugin_manager.cache_clear()
    with pytest.warns(PluginWarning):
        rc, out, err = cli("plugins", "list")
    assert rc == 0 and "│ codesign-clash " in out and any(
        line.startswith("analytical skipped: the entry-point name 'analytical' is already taken")
        for line in out.splitlines()), out


def test_strict_mode_makes_a_broken_plugin_fatal(tmp_path, monkeypatch, cli):
    _fake_dist(tmp_path, monkeypatch)
    monkeypatch.setenv("CODESIGN_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match=r"plugin broken \(codesign-broken 9\.9\) failed to load"):
        PluginManager()
    rc, out, err = cli("plugins", "list", "--json")
    assert rc == 2 and json.loads(out)["error"]["message"] == err.strip().removeprefix("error: ")
    assert err.count("\n") == 1 and "broken" in err and "Traceback" not in err


def test_only_env_var_loads_the_named_plugins(monkeypatch):
    monkeypatch.setenv("CODESIGN_PLUGINS", "mx")
    pm = PluginManager()
    by = {s.name: s.status for s in pm.status}
    assert by["mx"] == "loaded" and by["analytical"] == "disabled"
    assert "analytical" not in pm.cost_models


def test_misspelled_hook_is_named_with_a_hint(tmp_path, monkeypatch):
    _fake_dist(tmp_path, monkeypatch, dist="codesign-typo", ep="typo", module="codesign_typo_plugin",
               source="""
               import codesign

               @codesign.hookimpl
               def codesign_cost_model():
                   return []
               """)
    with pytest.warns(PluginWarning, match=r"typo \(codesign-typo 9\.9\).*unknown hook 'codesign_cost_model' "
                                           r"\(did you mean 'codesign_cost_models'\?\)"):
        pm = PluginManager()
    assert {s.name: s.status for s in pm.status}["typo"] == "failed"


# ---------------------------------------------------------------------- registration hooks that misbehave
class _RaisingHook:
    @codesign.hookimpl
    def codesign_number_formats(self):
        raise ValueError("no formats today")


class _WrongRecords:
    @codesign.hookimpl
    def codesign_cost_models(self):
        return [{"name": "dict-not-record"}]


class _Duplicate:
    @codesign.hookimpl
    def codesign_cost_models(self):
        return [codesign.CostModelInfo(name="analytical", version="6.6", description="impostor",
                                       factory=object)]


def test_registration_hook_that_raises_is_skipped():
    pm = PluginManager()
    pm.register(_RaisingHook(), "raiser")
    with pytest.warns(PluginWarning, match=r"plugin raiser.*failed in codesign_number_formats: "
                                           r"ValueError: no formats today"):
        formats = pm.number_formats
    assert "mxfp4" in formats
    assert {s.name: s.status for s in pm.status}["raiser"] == "failed"


class _BadFormat:
    @codesign.hookimpl
    def codesign_number_formats(self):
        from codesign.formats import NumberFormat

        return [NumberFormat(name="fp3x", bits_per_element=3.0, compute_class="fp3")]


def test_a_number_format_without_a_chip_peak_is_refused_naming_its_plugin():
    """A format whose compute_class is no chip peak ("fp3") was registered, and pricing a spec that
    used it raised an internal KeyError blamed on the analytical model; a bits_per_element of 0
    priced gpt-oss-120b's weights at 0.5 GB per chip (fresh-user trial, session 26). The record is
    refused where it is made, so the plugin's hook fails, named, and the other formats load."""
    from codesign.formats import NumberFormat

    pm = PluginManager()
    pm.register(_BadFormat(), "fp3-plugin")
    with pytest.warns(PluginWarning, match=r"plugin fp3-plugin.*failed in codesign_number_formats: ValueError: "
                                           r"compute_class must be one of bf16, fp8, fp6, fp4, int8 \(got 'fp3'\)"):
        formats = pm.number_formats
    assert "fp3x" not in formats and "mxfp4" in formats
    for bad in ({"bits_per_element": 0}, {"bits_per_element": float("nan")}, {"block_size": 0},
                {"per_tensor_bits": -1.0}):
        with pytest.raises(ValueError):
            NumberFormat(**{"name": "x", "bits_per_element": 4.0, "compute_class": "fp4", **bad})


class _BrokenParameters:
    @codesign.hookimpl
    def codesign_cost_models(self):
        class Model:
            def parameters(self):
                raise RuntimeError("toy parameters boom")

        return [codesign.CostModelInfo(name="toy-params", version="0.1", description="broken", factory=Model)]


class _StringParameters:
    @codesign.hookimpl
    def codesign_cost_models(self):
        class Model:
            def parameters(self):
                return "memory.hbm.capacity"

        return [codesign.CostModelInfo(name="str-params", version="0.1", description="str", factory=Model)]


def test_a_cost_model_whose_parameters_raise_is_named():
    """``parameters()`` raising gave "internal error: RuntimeError: toy parameters boom (at ...)",
    naming neither the cost model nor its plugin, unlike every other plugin failure (fresh-user
    trial, session 26)."""
    from codesign.errors import PluginBugError

    pm = PluginManager()
    pm.register(_BrokenParameters(), "toy-plugin")
    with pytest.raises(PluginBugError, match=r"cost model 'toy-params' \(plugin toy-plugin\b.*\) raised in "
                                             r"parameters\(\): RuntimeError: toy parameters boom"):
        pm.cost_model_parameters("toy-params")
    assert "memory.hbm.bandwidth" in pm.cost_model_parameters("analytical")
    # one key path as a string, not a list of them: its characters were read as keys, and the user
    # was told "cannot vary this key; it can vary m, e, m, o, r, y, ..." with exit 2
    pm2 = PluginManager()
    pm2.register(_StringParameters(), "str-plugin")
    with pytest.raises(PluginBugError, match=r"cost model 'str-params' \(plugin str-plugin\b.*\): parameters\(\) "
                                             r"must return a list of spec key paths \(str\), got 'memory.hbm"):
        pm2.cost_model_parameters("str-params")


def test_registration_hook_with_wrong_records_is_named():
    pm = PluginManager()
    pm.register(_WrongRecords(), "wrong")
    with pytest.warns(PluginWarning, match=r"plugin wrong.*expected a list of codesign.CostModelInfo"):
        models = pm.cost_models
    assert "analytical" in models


def test_duplicate_name_keeps_the_builtin_and_names_both():
    pm = PluginManager()
    pm.register(_Duplicate(), "impostor")
    with pytest.warns(PluginWarning, match=r"'analytical' is registered by both plugin analytical "
                                           r"\(codesign 0\.1\.0\) and plugin impostor"):
        models = pm.cost_models
    assert models["analytical"].plugin == "analytical"


def test_strict_mode_makes_hook_failures_fatal(monkeypatch):
    pm = PluginManager()
    pm.register(_RaisingHook(), "raiser")
    monkeypatch.setenv("CODESIGN_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="plugin raiser"):
        pm.number_formats


# ---------------------------------------------------------------------- cost models that misbehave
def _model_plugin(name, evaluate, *, accuracy=None, supports=None, check=None, parameters=()):
    """An in-process plugin registering cost model ``name`` whose evaluate is ``evaluate`` (and
    whose optional ``check(spec)`` is ``check``; which can vary the spec keys ``parameters``)."""

    class Model:
        def parameters(self):
            return list(parameters)

        def evaluate(self, spec, formats, overrides=None):
            return evaluate(spec, formats, overrides)

    if check is not None:
        Model.check = lambda self, spec: check(spec)

    class Plugin:
        @codesign.hookimpl
        def codesign_cost_models(self):
            return [codesign.CostModelInfo(name=name, version="0.0.1", description="test double",
                                           factory=Model, accuracy=accuracy, supports=supports)]

    return Plugin()


def _analytical(spec, formats, overrides):
    from codesign_analytical.model import AnalyticalModel

    return AnalyticalModel().evaluate(spec, formats, overrides)


def _with(name, evaluate, **kw):
    pm = PluginManager()
    pm.register(_model_plugin(name, evaluate, **kw), f"{name}-plugin")
    return pm


def _spec(tmp_path, cost_model):
    p = tmp_path / f"{cost_model}.toml"
    p.write_text(f'include = ["{GB200}"]\n[deployment]\ncost_model = "{cost_model}"\n')
    return codesign.load_spec(p)


def test_cost_model_that_raises_is_a_named_plugin_error(tmp_path):
    from codesign.evaluation import evaluate

    def boom(spec, formats, overrides):
        raise ZeroDivisionError("division by zero in my model")

    pm = _with("boom", boom)
    with pytest.raises(PluginError, match=r"cost model 'boom' \(plugin boom-plugin.*\) raised "
                                          r"ZeroDivisionError: division by zero in my model"):
        evaluate(_spec(tmp_path, "boom"), pm=pm)


def test_cli_reports_a_raising_cost_model_in_one_line(tmp_path, monkeypatch, cli):
    def boom(spec, formats, overrides):
        raise ZeroDivisionError("division by zero in my model")

    pm = _with("boom", boom)
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    rc, out, err = cli("evaluate", _spec(tmp_path, "boom").path)
    # a plugin's bug, not the user's input: exit 3 (ExitCode.INTERNAL_ERROR) with one
    # "internal error:" line naming the model and its plugin, and where to report it
    assert rc == 3 and out == ""
    first, second = err.strip().splitlines()
    assert first.startswith("internal error: cost model 'boom' (plugin boom-plugin") and "Traceback" not in err
    assert "ZeroDivisionError: division by zero in my model" in first and "bug in that plugin, not in your input" in second
    rc, out, err = cli("evaluate", _spec(tmp_path, "boom").path, "--json")
    assert rc == 3 and json.loads(out)["error"] == {"message": first, "exit_code": 3}
    # under --debug the traceback, then the same line and a sentence with no "rerun with --debug"
    # ("...not in your input and report it.": plugin-author trial, session 46)
    rc, out, err = cli("--debug", "evaluate", _spec(tmp_path, "boom").path)
    assert rc == 3 and "Traceback" in err
    assert err.strip().splitlines()[-2:] == [first, "This is a bug in that plugin, not in your input; please report "
                                                    "it, with the traceback above."]


def _exits(spec, formats, overrides):
    raise SystemExit(5)


def test_a_cost_model_calling_sys_exit_is_a_named_plugin_bug_exit_3(tmp_path, monkeypatch, cli):
    """A plugin's sys.exit(5) is its bug like any exception: exit 3 with one line naming the
    plugin. It ended `codesign evaluate` with exit 5 and no message (fresh-user trial, session 27)."""
    from codesign.errors import PluginBugError
    from codesign.evaluation import evaluate

    pm = _with("quitter", _exits)
    with pytest.raises(PluginBugError, match=r"cost model 'quitter' \(plugin quitter-plugin.*\) raised SystemExit: 5"):
        evaluate(_spec(tmp_path, "quitter"), pm=pm)
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    rc, out, err = cli("evaluate", _spec(tmp_path, "quitter").path)
    assert rc == 3 and out == "" and "Traceback" not in err
    assert err.splitlines()[0].startswith("internal error: cost model 'quitter' (plugin quitter-plugin")


def test_sys_exit_in_a_plugin_factory_parameters_or_hook_is_named():
    """Every call into plugin code treats SystemExit as the plugin's bug, as the entry-point load does."""
    from codesign.errors import PluginBugError

    class Plugin:
        @codesign.hookimpl
        def codesign_cost_models(self):
            class Model:
                def parameters(self):
                    raise SystemExit("bye from parameters")

            def factory():
                raise SystemExit(7)

            return [codesign.CostModelInfo(name="dying", version="1", description="d", factory=factory),
                    codesign.CostModelInfo(name="halfdying", version="1", description="d", factory=Model)]

    class Hook:
        @codesign.hookimpl
        def codesign_number_formats(self):
            raise SystemExit(2)

    pm = PluginManager()
    pm.register(Plugin(), "dying-plugin")
    with pytest.raises(PluginBugError, match=r"cost model 'dying' \(plugin dying-plugin.*\) failed to start: SystemExit: 7"):
        pm.cost_model("dying")
    with pytest.raises(PluginBugError, match=r"'halfdying'.*raised in parameters\(\): SystemExit: bye from parameters"):
        pm.cost_model_parameters("halfdying")
    pm.register(Hook(), "exit-hook")
    with pytest.warns(PluginWarning, match=r"plugin exit-hook.*failed in codesign_number_formats: SystemExit: 2"):
        assert "mxfp4" in pm.number_formats


def test_keyboard_interrupt_in_a_cost_model_is_still_an_interrupt(tmp_path, monkeypatch, cli):
    """Ctrl-C while a plugin runs is the user's interrupt, not the plugin's bug: exit 130."""

    def interrupted(spec, formats, overrides):
        raise KeyboardInterrupt

    pm = _with("slow", interrupted)
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    rc, out, err = cli("evaluate", _spec(tmp_path, "slow").path)
    assert rc == 130 and err.strip() == "interrupted"


def test_nan_on_a_feasible_point_is_a_named_plugin_error(tmp_path):
    from codesign.evaluation import evaluate

    def nan_tpot(spec, formats, overrides):
        ev = _analytical(spec, formats, overrides)
        ev.points["tpot_s"][0, 3] = np.nan
        return ev

    pm = _with("nanny", nan_tpot)
    with pytest.raises(PluginError, match=r"cost model 'nanny' \(plugin nanny-plugin.*\) returned "
                                          r"tpot_s = nan at concurrency 8 on a feasible point"):
        evaluate(_spec(tmp_path, "nanny"), pm=pm)


def test_negative_value_is_a_named_plugin_error(tmp_path):
    from codesign.evaluation import evaluate

    def negative(spec, formats, overrides):
        ev = _analytical(spec, formats, overrides)
        ev.points["power_w"][0, 0] = -5.0
        return ev

    pm = _with("neg", negative)
    with pytest.raises(PluginError, match=r"cost model 'neg'.*returned power_w = -5.0 at concurrency 1"):
        evaluate(_spec(tmp_path, "neg"), pm=pm)


def _design_set(key, value):
    """A cost model: the analytical model's answer with design metric ``key`` set to ``value``."""

    def ev_with(spec, formats, overrides):
        ev = _analytical(spec, formats, overrides)
        ev.design[key] = np.full(np.shape(ev.design[key]), value, dtype=float)
        return ev

    return ev_with


@pytest.mark.parametrize("key, value", [("chips", np.nan), ("chips", np.inf), ("peak_power_w", np.inf),
                                        ("peak_power_w", np.nan), ("tdp_w", np.nan),
                                        ("max_concurrency", np.nan), ("area_mm2", np.inf)])
def test_a_non_finite_design_metric_is_a_named_plugin_bug(tmp_path, key, value):
    """docs/plugins.md: every design metric is a finite number >= 0 on every design; only area_mm2
    may be NaN (not modelled). chips = NaN was an internal ValueError in evaluate's table naming no
    plugin, peak_power_w = inf passed the contract (fresh-user trial, session 27)."""
    from codesign.errors import PluginBugError
    from codesign.evaluation import evaluate

    pm = _with("odd", _design_set(key, value))
    shown = "nan" if np.isnan(value) else "inf"
    with pytest.raises(PluginBugError, match=rf"cost model 'odd' \(plugin odd-plugin.*\) returned design "
                                             rf"metric {key} = {shown}; expected a finite number >= 0"):
        evaluate(_spec(tmp_path, "odd"), pm=pm)


@pytest.mark.parametrize("where", ["points", "design", "feasible"])
def test_lists_instead_of_arrays_are_a_named_plugin_bug(tmp_path, monkeypatch, cli, where):
    """A cost model that returned its metrics as Python lists was an internal TypeError naming no
    plugin ("list indices must be integers or slices", fresh-user trial, session 39): the contract
    asks for arrays, and the plugin is named, exit 3, in one line."""
    import attrs

    def listed(spec, formats, overrides):
        ev = _analytical(spec, formats, overrides)
        if where == "points":
            return attrs.evolve(ev, points={**ev.points, "ttft_s": ev.points["ttft_s"].tolist()})
        if where == "design":
            return attrs.evolve(ev, design={**ev.design, "chips": ev.design["chips"].tolist()})
        return attrs.evolve(ev, feasible=ev.feasible.tolist())

    pm = _with("lister", listed)
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    rc, out, err = cli("evaluate", _spec(tmp_path, "lister").path)
    what = {"points": "point metric ttft_s", "design": "design metric chips", "feasible": "feasible"}[where]
    assert rc == 3 and "Traceback" not in err, err
    assert err.strip().splitlines()[0] == (f"internal error: cost model 'lister' (plugin lister-plugin (<in-process>)) returned {what} "
                           "as list, expected an array (numpy.ndarray)"), err


def _unmasked(metric=None):
    """A cost model: the analytical model's answer with the point at concurrency 8 (index 3) of
    every design called infeasible and its numbers left as priced, in every point metric, or
    (``metric``) only in that one (the others NaN, as the contract has them)."""
    import attrs

    def ev_with(spec, formats, overrides):
        ev = _analytical(spec, formats, overrides)
        feasible = ev.feasible.copy()
        feasible[:, 3] = False
        points = {k: v if metric in (None, k) else np.where(feasible, v, np.nan) for k, v in ev.points.items()}
        return attrs.evolve(ev, feasible=feasible, points=points)

    return ev_with


def test_a_number_on_an_infeasible_point_is_a_named_plugin_bug(tmp_path, monkeypatch, cli):
    """The contract has infeasible points NaN in every point metric; nothing checked it when a
    model ran, so a plugin that returned feasible = False with its numbers left in had them printed
    by evaluate (fresh-user trial, session 40). An infeasible point is never priced: the model is
    named, exit 3, whichever point metric (a required one, or an optional one such as
    decode_batch) carries the number."""
    from codesign.errors import PluginBugError
    from codesign.evaluation import evaluate

    pm = _with("leaky", _unmasked())
    with pytest.raises(PluginBugError, match=r"cost model 'leaky' \(plugin leaky-plugin.*\) returned \w+ = "
                                             r"[0-9.e+-]+ at concurrency 8, a point it calls infeasible \(feasible = "
                                             r"False\); an infeasible point is NaN in every point metric, never priced"):
        evaluate(_spec(tmp_path, "leaky"), pm=pm)
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    rc, out, err = cli("evaluate", _spec(tmp_path, "leaky").path)
    assert rc == 3 and out == "" and "Traceback" not in err, err
    assert err.splitlines()[0].startswith("internal error: cost model 'leaky' (plugin leaky-plugin")
    # in a batch the design is named; an optional metric counts as the required ones do
    pm = _with("leaky2", _unmasked("decode_batch"))
    with pytest.raises(PluginBugError, match=r"returned decode_batch = [0-9.e+-]+ at concurrency 8 of design 0, "
                                             r"a point it calls infeasible"):
        evaluate(_spec(tmp_path, "leaky2"), {"memory.hbm.bandwidth": np.array([7e12, 8e12])}, pm=pm)


def _recording(seen):
    """A cost model: the analytical model, recording the overrides it is given in ``seen``."""

    def ev_with(spec, formats, overrides):
        seen.append(overrides)
        return _analytical(spec, formats, overrides)

    return ev_with


def test_overrides_the_caller_gets_wrong_are_the_callers_error_not_the_plugins(tmp_path):
    """codesign.evaluation.evaluate(spec, overrides) is the call to script with; quantity strings,
    arrays of different lengths or of two dimensions came back as the cost model's bug ("cost model
    'analytical' ... raised ValueError: could not convert string to float", exit 3; fresh-user
    trial, session 40). They are the caller's: an OverrideError (a ValueError and a CodesignError,
    not a PluginError) naming the key and what was expected, raised before any model runs."""
    from codesign.errors import CodesignError, OverrideError
    from codesign.evaluation import evaluate

    seen = []
    pm = _with("rec", _recording(seen))
    spec = _spec(tmp_path, "rec")
    bw, cap = "memory.hbm.bandwidth", "memory.hbm.capacity"
    cases = [
        ({bw: np.array(["8 TB/s", "9 TB/s"])},
         "overrides['memory.hbm.bandwidth']: expected numbers in B/s (SI units); got '8 TB/s', which "
         "codesign.units.parse_quantity('8 TB/s', 'B/s') reads as 8e+12"),
        ({bw: "8 TB/s"}, "overrides['memory.hbm.bandwidth']: expected numbers in B/s (SI units); got '8 TB/s'"),
        ({"deployment.tp": ["4", "8"]}, "overrides['deployment.tp']: expected numbers; got '4'"),
        ({bw: np.array([8e12, 9e12]), cap: np.array([1e11, 2e11, 3e11])},
         "overrides: arrays of different lengths ('memory.hbm.bandwidth' 2, 'memory.hbm.capacity' 3); expected "
         "one value per design, the same n for every key"),
        ({bw: np.array([[8e12, 9e12]])}, "overrides['memory.hbm.bandwidth']: expected one value per design, shape "
                                         "(n,); got shape (1, 2)"),
        ({bw: np.array([])}, "overrides['memory.hbm.bandwidth']: expected one value per design, shape (n,) with "
                             "n >= 1; got an empty array"),
        ({"deployment.kv_cache_format": np.array([1.0, 2.0])},
         "overrides['deployment.kv_cache_format']: expected names (str), one per design; got float64 values such as 1.0"),
        ({3: [1.0]}, "overrides key 3: expected a spec key path (str)"),
        ([(bw, 8e12)], "overrides: expected a dict of spec key path -> array of shape (n,), got list"),
    ]
    for overrides, message in cases:
        with pytest.raises(OverrideError) as e:
            evaluate(spec, overrides, pm=pm)
        assert str(e.value).startswith(message), (overrides, str(e.value))
        assert isinstance(e.value, ValueError) and isinstance(e.value, CodesignError)
        assert not isinstance(e.value, PluginError)
    assert seen == [], "the cost model was called with overrides the core refuses"
    # what the contract gives a model: one array (n,) per key; a scalar, a list and a length-1
    # array are the same value on every design, and an object array of numbers is float64
    ev = evaluate(spec, {bw: [7e12, 8e12, 9e12], cap: 180e9, "deployment.tp": np.array([8.0]),
                         "chip.tdp": np.array([1200, 1200, 1100], dtype=object)}, pm=pm)
    (got,) = seen
    assert ev.n_designs == 3
    assert {k: (type(v), np.shape(v)) for k, v in got.items()} == {k: (np.ndarray, (3,)) for k in got}
    assert got[cap].tolist() == [180e9] * 3 and got["deployment.tp"].tolist() == [8.0] * 3
    assert got["chip.tdp"].dtype == np.float64


def test_area_not_modelled_may_be_nan(tmp_path):
    from codesign.evaluation import evaluate

    ev = evaluate(_spec(tmp_path, "noarea"), pm=_with("noarea", _design_set("area_mm2", np.nan)))
    assert np.isnan(ev.design["area_mm2"][0]) and ev.feasible.any()


def _noarea_search(tmp_path, monkeypatch, constraints):
    """A spec that includes the flagship search (hardware searched, reference GB200) priced by
    ``noarea``: the analytical model with area_mm2 NaN, able to vary what the analytical model
    varies; its [[search.constraints]] are ``constraints`` (TOML)."""
    from codesign_analytical.model import AnalyticalModel

    pm = PluginManager()
    pm.register(_model_plugin("noarea", _design_set("area_mm2", np.nan),
                              parameters=AnalyticalModel().parameters()), "noarea-plugin")
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    spec = tmp_path / "noarea.toml"
    spec.write_text(f'include = ["{(SPECS / "jalapeno-gpt-oss-120b.toml").as_posix()}"]\n'
                    '[deployment]\ncost_model = "noarea"\n' + constraints)
    return spec


def test_a_search_bounding_area_a_cost_model_does_not_model_is_refused_before_a_trial(tmp_path, monkeypatch, cli):
    """NaN area_mm2 is allowed ("not modelled", docs/plugins.md); a search bounding it ran every
    trial and ended "no feasible design; ... the cost model gives no area_mm2", exit 1
    (plugin-author trial, session 46). It is refused as a chip with no [chip.area] is: exit 2
    before the first trial (no output directory made), naming the constraint's key and the model."""
    spec = _noarea_search(tmp_path, monkeypatch, '[[search.constraints]]\nmetric = "peak_power_w"\nmax = "700 W"\n'
                          '[[search.constraints]]\nmetric = "area_mm2"\nmax = "1716 mm**2"\n')
    rc, out, err = cli("optimize", spec, "--trials", "4", "--out", tmp_path / "run")
    assert rc == 2 and out == "" and not (tmp_path / "run").exists(), err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {spec}: search.constraints.1.metric: area_mm2 is not modelled by cost model "
                           "'noarea' (plugin noarea-plugin"), line
    assert line.endswith("drop this constraint or use a cost model that models it"), line
    # sweep refuses it too (the same check_search), and the power bound alone is searched
    rc, out, err = cli("sweep", spec, "--points", "16", "--chunk", "16", "--out", tmp_path / "sw")
    assert rc == 2 and "search.constraints.1.metric: area_mm2 is not modelled" in err, err


def test_a_hardware_search_on_a_model_without_area_suggests_no_area_bound(tmp_path, monkeypatch, cli):
    """Without the area constraint the budget warning said `add [[search.constraints]] metric =
    "area_mm2", max = "1716 mm**2"`, the constraint refused above (session 46): it says the cost
    model does not model area instead, and suggests nothing."""
    spec = _noarea_search(tmp_path, monkeypatch, '[[search.constraints]]\nmetric = "peak_power_w"\nmax = "700 W"\n')
    rc, out, err = cli("sweep", spec, "--points", "16", "--chunk", "16", "--out", tmp_path / "sw", "--json")
    warned = [w for w in json.loads(out)["warnings"] if "area" in w]
    assert rc in (0, 1) and len(warned) == 1, err
    assert "cost model 'noarea' (plugin noarea-plugin" in warned[0] and "does not model area" in warned[0]
    assert 'metric = "area_mm2"' not in warned[0]


def test_cli_names_the_plugin_of_a_nan_chips_in_one_line(tmp_path, monkeypatch, cli):
    pm = _with("odd", _design_set("chips", np.nan))
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    for extra in ((), ("--json",)):
        rc, out, err = cli("evaluate", _spec(tmp_path, "odd").path, *extra)
        first = err.strip().splitlines()[0]
        assert rc == 3 and "Traceback" not in err and "ValueError" not in err
        assert first == ("internal error: cost model 'odd' (plugin odd-plugin (<in-process>)) returned design metric "
                         "chips = nan; "
                         "expected a finite number >= 0 on every design, feasible or not")


def test_missing_metric_and_wrong_type_are_named(tmp_path):
    from codesign.evaluation import evaluate

    def missing(spec, formats, overrides):
        ev = _analytical(spec, formats, overrides)
        del ev.points["ttft_s"]
        return ev

    pm = _with("partial", missing)
    with pytest.raises(PluginError, match=r"cost model 'partial'.*did not return the point metrics ttft_s"):
        evaluate(_spec(tmp_path, "partial"), pm=pm)
    pm = _with("dicty", lambda spec, formats, overrides: {"tpot_s": 1.0})
    with pytest.raises(PluginError, match=r"cost model 'dicty'.*returned dict, expected codesign.Evaluation"):
        evaluate(_spec(tmp_path, "dicty"), pm=pm)


def test_unknown_cost_model_lists_the_available_ones(tmp_path):
    from codesign.evaluation import evaluate

    from codesign.errors import SpecError

    # a spec error: it names the key that selects the model, and the registered alternatives
    with pytest.raises(SpecError, match=r"deployment.cost_model: no cost model named 'nope'.*available: .*analytical"):
        evaluate(_spec(tmp_path, "nope"), pm=PluginManager())


#: How the error for an unknown cost model says one is installed (fresh-user trial, session 42: a spec
#: asking for the example plugin's 'roofline' without it installed said only "no cost model named ...").
#: Generic, for a name no plugin of the checkout's plugins/ registers (the core names no particular
#: cost model; one of plugins/ gets its own line: test_a_shipped_plugin_not_installed_is_named_with_its_pip_line).
INSTALL_HINT = ("a cost model from another package is installed with `pip install <package>`, a package that "
                "registers its plugin module in the 'codesign' entry-point group ([project.entry-points.codesign] "
                "in its pyproject.toml); `codesign plugins list` shows what is installed")


def test_an_unknown_cost_model_says_how_one_is_installed(tmp_path, cli):
    spec = tmp_path / "nosuch.toml"
    spec.write_text(f'include = ["{GB200.as_posix()}"]\n[deployment]\ncost_model = "no-such-model"\n')
    rc, out, err = cli("evaluate", spec)
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    line = err.strip()
    assert line.startswith(f"error: {spec}: deployment.cost_model: no cost model named 'no-such-model' is "
                           "registered; available: analytical"), line
    assert line.endswith("(or 'auto'); " + INSTALL_HINT), line
    assert "did you mean" not in line  # nothing registered is close to it
    rc, out, err = cli("evaluate", spec, "--json")
    (problem,) = json.loads(out)["error"]["problems"]
    assert problem["key"] == "deployment.cost_model" and problem["message"].endswith(INSTALL_HINT)
    # a typo gets the close name as well
    rc, out, err = cli("evaluate", GB200, "--cost-model", "analytic")
    assert rc == 2 and "no cost model named 'analytic' is registered (did you mean 'analytical'?); " in err, err


def test_the_example_roofline_not_loaded_is_named_with_the_install_hint(monkeypatch, cli):
    """The shipped roofline example spec where the plugin is not loaded (left out here by
    CODESIGN_PLUGINS, which the message names, as it would name a plugin that failed to load)."""
    import importlib.metadata

    monkeypatch.setenv("CODESIGN_PLUGINS", "analytical,baseline,mx")
    spec = SPECS / "examples" / "gb200-gpt-oss-120b-roofline.toml"
    rc, out, err = cli("evaluate", spec)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert (f"error: {spec}: deployment.cost_model: no cost model named 'roofline' is registered; available: "
            "analytical (or 'auto'); ") in err, err
    if any(ep.name == "roofline" for ep in importlib.metadata.entry_points(group="codesign")):
        # installed, left out: the generic hint (installing it again would not help)
        assert "; plugins left out by CODESIGN_PLUGINS=analytical,baseline,mx: roofline (codesign-roofline " in err, err
        assert err.strip().endswith(INSTALL_HINT), err
    else:  # not installed at all: its line (test_a_shipped_plugin_not_installed_is_named_with_its_pip_line)
        assert "(codesign-roofline) is not installed: install it with `pip install -e " in err, err


def _without_roofline(monkeypatch):
    """The codesign-roofline distribution as if it were not installed: its entry point dropped from
    what the plugin manager reads (a PYTHONPATH without its src leaves an installed copy found)."""
    import importlib.metadata

    eps = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda **kw: [e for e in eps(**kw) if e.name != "roofline"])


#: The line of the example plugin, by hand from plugins/codesign_example_roofline/pyproject.toml:
#: [project] name = "codesign-roofline", [project.entry-points.codesign] roofline = ...
ROOFLINE_LINE = ("plugin 'roofline' of this repository (codesign-roofline) is not installed: install it with "
                 "`pip install -e {path}`; `codesign plugins list` shows what is installed")


def test_a_shipped_plugin_not_installed_is_named_with_its_pip_line(monkeypatch, cli, tmp_path):
    """The example spec without its plugin installed gave the generic ``pip install <package>``
    hint (fresh-user trial, session 45): a cost model whose name is the entry point of a plugin of
    this checkout's plugins/ is named with the exact line, its directory relative to the current
    one when under it (from the repository: plugins/codesign_example_roofline), else absolute; a
    name no plugin of the checkout registers keeps the generic hint."""
    from conftest import REPO

    _without_roofline(monkeypatch)
    monkeypatch.chdir(REPO)
    spec = "specs/examples/gb200-gpt-oss-120b-roofline.toml"
    rc, out, err = cli("evaluate", spec)
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.strip() == (f"error: {spec}: deployment.cost_model: no cost model named 'roofline' is registered; "
                           "available: analytical (or 'auto'); "
                           + ROOFLINE_LINE.format(path="plugins/codesign_example_roofline")), err
    rc, out, err = cli("evaluate", "specs/examples/gb200-gpt-oss-120b.toml", "--cost-model", "nosuch")
    assert rc == 2 and err.strip().endswith(INSTALL_HINT), err
    monkeypatch.chdir(tmp_path)  # not under the current directory: the absolute path
    rc, out, err = cli("evaluate", REPO / spec)
    assert rc == 2 and err.strip().endswith(
        ROOFLINE_LINE.format(path=REPO / "plugins" / "codesign_example_roofline")), err


def test_the_install_hint_names_no_particular_cost_model(tmp_path, monkeypatch):
    """The core names no cost model of this repository: the line for a plugin of the checkout is
    read from the pyproject.toml files under plugins/ (codesign.pluginmanager.SOURCE_PLUGINS); with
    none there, 'roofline' gets the generic hint, naming the entry-point group and ``pip install
    <package>``; a plugin directory whose pyproject.toml registers 'fake' gets its own line."""
    import codesign.pluginmanager as P

    monkeypatch.setattr(P, "SOURCE_PLUGINS", tmp_path / "plugins")
    hint = P.PluginManager(load_entrypoints=False).unknown_cost_model("roofline")
    assert hint == "no cost model named 'roofline' is registered; available: none (or 'auto'); " + INSTALL_HINT
    assert "plugins/" not in INSTALL_HINT and "roofline" not in INSTALL_HINT and "-e " not in INSTALL_HINT
    fake = tmp_path / "plugins" / "my_fake"
    fake.mkdir(parents=True)
    (fake / "pyproject.toml").write_text('[project]\nname = "codesign-fake"\n'
                                         '[project.entry-points.codesign]\nfake = "codesign_fake"\n')
    (tmp_path / "plugins" / "broken").mkdir()
    (tmp_path / "plugins" / "broken" / "pyproject.toml").write_text("[project\n")  # passed over
    monkeypatch.chdir(tmp_path)
    hint = P.PluginManager(load_entrypoints=False).unknown_cost_model("fake")
    assert hint.endswith("; plugin 'fake' of this repository (codesign-fake) is not installed: install it with "
                         "`pip install -e plugins/my_fake`; `codesign plugins list` shows what is installed"), hint
    assert P.PluginManager(load_entrypoints=False).unknown_cost_model("roofline").endswith(INSTALL_HINT)


def test_the_docs_install_command_names_a_package_that_registers_roofline():
    """The repository-specific example lives in the docs: the command docs/plugins.md and the README
    give for the example 'roofline' installs a package whose ``codesign`` entry point is the module
    that registers the cost model 'roofline' (and declares it as the hint says: in
    [project.entry-points.codesign] of its pyproject.toml)."""
    import re
    import tomllib

    from conftest import REPO

    for doc in ("docs/plugins.md", "README.md"):
        paths = set(re.findall(r"pip install -e (plugins/codesign_example_roofline)\b",
                               (REPO / doc).read_text(encoding="utf-8")))
        assert paths == {"plugins/codesign_example_roofline"}, doc
    path = "plugins/codesign_example_roofline"
    project = tomllib.loads((REPO / path / "pyproject.toml").read_text())["project"]
    (module,) = project["entry-points"]["codesign"].values()
    source = (REPO / path / "src" / module / "__init__.py").read_text()
    assert 'name="roofline"' in source


# ---------------------------------------------------------------------- selection
def _stub(spec, formats, overrides):
    raise AssertionError("selection tests do not evaluate")


def test_auto_picks_the_most_accurate_model_that_supports_the_spec(tmp_path):
    pm = PluginManager()
    pm.register(_model_plugin("coarse", _stub, accuracy=0.30), "coarse-plugin")
    pm.register(_model_plugin("fine", _stub, accuracy=0.05, supports=lambda s: s.deployment.tp <= 4),
                "fine-plugin")
    pm.register(_model_plugin("medium", _stub, accuracy=0.12), "medium-plugin")
    spec = _spec(tmp_path, "auto")  # TP 8: "fine" declines it
    assert pm.select_cost_model(spec) == "medium"
    small = tmp_path / "tp4.toml"
    small.write_text(f'include = ["{spec.path}"]\n[deployment]\ntp = 4\n')
    assert pm.select_cost_model(codesign.load_spec(small)) == "fine"


def test_auto_evaluates_with_the_selected_model(tmp_path):
    from codesign.evaluation import cost_model_name, evaluate

    pm = _with("precise", _analytical, accuracy=0.01, supports=lambda s: True)
    spec = _spec(tmp_path, "auto")
    assert cost_model_name(spec, pm=pm) == "precise"
    ev = evaluate(spec, pm=pm)
    assert ev.feasible.shape == (1, len(spec.workload.concurrency))


def test_auto_without_any_supporting_model_is_a_clear_error():
    pm = PluginManager(load_entrypoints=False)
    pm.register(_model_plugin("picky", _stub, accuracy=0.1, supports=lambda s: False), "picky-plugin")
    with pytest.raises(PluginError, match=r"no loaded cost model can price this spec \(declined: picky\)"):
        pm.select_cost_model(object())


def test_a_model_named_explicitly_that_declines_the_spec_says_so(tmp_path):
    from codesign.evaluation import evaluate

    pm = _with("picky", _stub, supports=lambda s: False)
    with pytest.raises(PluginError, match=r"cost model 'picky'.*declares it cannot price this spec"):
        evaluate(_spec(tmp_path, "picky"), pm=pm)


def test_cli_exit_codes_tell_a_plugin_bug_from_a_spec_a_plugin_declines(tmp_path, monkeypatch, cli):
    """A contract violation (evaluate returned a dict) is the plugin's bug: exit 3, "internal
    error:". A model that declines the spec is an answer the user acts on (choose another
    deployment.cost_model): exit 2, "error:"."""
    for name, pm, rc_want, head in (
            ("dicty", _with("dicty", lambda spec, formats, overrides: {"tpot_s": 1.0}), 3, "internal error: "),
            ("picky", _with("picky", _stub, supports=lambda s: False), 2, "error: ")):
        monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda pm=pm: pm)
        rc, out, err = cli("evaluate", _spec(tmp_path, name).path)
        # a declined spec is named at the key that chose the model (session 33)
        where = f"{_spec(tmp_path, name).path}: deployment.cost_model: " if name == "picky" else ""
        assert rc == rc_want and err.startswith(f"{head}{where}cost model {name!r}"), (name, err)
        assert "Traceback" not in err


def test_plugins_list_json_shows_declared_accuracy(monkeypatch, cli):
    pm = PluginManager()
    pm.register(_model_plugin("fine", _stub, accuracy=0.05), "fine-plugin")
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    rc, out, err = cli("plugins", "list", "--json")
    assert rc == 0
    doc = json.loads(out)
    cms = {m["name"]: m for m in doc["cost_models"]}
    assert cms["fine"]["accuracy"] == 0.05 and cms["fine"]["plugin"] == "fine-plugin"
    assert cms["analytical"]["differentiable"] is True
    rc, out, err = cli("plugins", "list", "--json", "--hook", "codesign_number_formats")
    assert {p["name"] for p in json.loads(out)["plugins"]} == {"mx"}


def test_plugins_list_says_what_auto_picks_when_no_cost_model_declares_an_accuracy(tmp_path, monkeypatch, cli):
    """The cost-model table's title said "auto" picks the smallest declared error when no listed
    model declared one (the built-ins declare none): it then says auto takes the first name that
    can price the spec, and keeps the smallest-error rule once a model declares an accuracy."""
    pm = PluginManager(load_entrypoints=False)
    pm.register(_model_plugin("zeta", _stub), "zeta-plugin")
    pm.register(_model_plugin("alpha", _stub), "alpha-plugin")
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    rc, out, err = cli("plugins", "list")
    text = " ".join(out.split())  # the title wraps at the console's width
    assert rc == 0, err
    assert ('cost models (deployment.cost_model; "auto": the first by name that can price the spec, as none '
            'declares an accuracy)') in text
    assert "smallest declared error" not in text
    # the caption's rule is auto's: neither declares, so "alpha" before "zeta"
    assert pm.select_cost_model(_spec(tmp_path, "auto")) == "alpha"

    pm = PluginManager(load_entrypoints=False)
    pm.register(_model_plugin("zeta", _stub, accuracy=0.1), "zeta-plugin")
    pm.register(_model_plugin("alpha", _stub), "alpha-plugin")
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    rc, out, err = cli("plugins", "list")
    text = " ".join(out.split())
    assert rc == 0, err
    assert ('cost models (deployment.cost_model; "auto": the smallest declared error among those that can price '
            'the spec)') in text
    assert pm.select_cost_model(_spec(tmp_path, "auto")) == "zeta"


class _OneRecordNotAList:
    """A registration hook returning one value instead of a list of records."""

    def __init__(self, value):
        self.value = value

    @codesign.hookimpl
    def codesign_baselines(self):
        return self.value


@pytest.mark.parametrize("value, shown", [("gb200", r"one str 'gb200'"), (42, r"one int 42"),
                                          # cut at 80 characters: the quote and 78 of the 100, then "…"
                                          ("x" * 100, r"one str 'x{78}…")])
def test_a_hook_returning_one_value_not_a_list_is_named_whole(value, shown):
    """A baselines hook returning the string "gb200" was reported as "returned str 'g'" (list() split
    it into characters); an int gave "TypeError: 'int' object is not iterable" (fresh-user trial,
    session 26). Either way the plugin is named and skipped, and the built-in baselines remain."""
    pm = PluginManager()
    pm.register(_OneRecordNotAList(value), "single")
    with pytest.warns(PluginWarning, match=rf"plugin single.*codesign_baselines: returned {shown}, expected a list of"):
        baselines = pm.baselines
    assert "gb200" in baselines and baselines["gb200"].plugin != "single"


# ---------------------------------------------------------------------- declared accuracy
@pytest.mark.parametrize("value, shown", [(float("nan"), "nan"), (-0.5, "-0.5"), (0.0, "0.0"),
                                          (float("inf"), "inf"), ("0.1", "'0.1'"), (True, "true")])
def test_cost_model_info_refuses_an_accuracy_that_is_no_positive_number(value, shown):
    with pytest.raises(ValueError, match=rf"cost model 'm': accuracy = {shown}; expected None \(undeclared\) "
                                         r"or the measured median relative TPOT error, a finite number > 0"):
        codesign.CostModelInfo(name="m", version="1", description="d", factory=object, accuracy=value)
    # numpy scalars are numbers: kept as a Python float (json.dumps cannot print np.float32)
    info = codesign.CostModelInfo(name="m", version="1", description="d", factory=object,
                                  accuracy=np.float32(0.25))
    assert type(info.accuracy) is float and info.accuracy == 0.25


def test_a_negative_accuracy_is_named_and_does_not_win_auto(tmp_path):
    """accuracy = -1 won cost_model = "auto" over every honest model (fresh-user trial, session 27):
    the plugin is named, its records skipped, and auto picks among the others."""
    pm = PluginManager()
    pm.register(_model_plugin("honest", _stub, accuracy=0.2), "honest-plugin")
    pm.register(_model_plugin("liar", _stub, accuracy=-1.0), "liar-plugin")
    with pytest.warns(PluginWarning, match=r"plugin liar-plugin.*failed in codesign_cost_models: ValueError: "
                                           r"cost model 'liar': accuracy = -1.0"):
        assert pm.select_cost_model(_spec(tmp_path, "auto")) == "honest"
    assert "liar" not in pm.cost_models
    assert {s.name: s.status for s in pm.status}["liar-plugin"] == "failed"


def test_plugins_list_json_stays_json_with_a_nan_accuracy(monkeypatch, cli):
    """A NaN accuracy reached `plugins list --json` as a bare NaN, which no strict JSON reader takes."""
    pm = PluginManager()
    pm.register(_model_plugin("nanacc", _stub, accuracy=float("nan")), "nanacc-plugin")
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    with pytest.warns(PluginWarning, match="accuracy = nan"):
        rc, out, err = cli("plugins", "list", "--json")

    def no_constant(name):
        raise AssertionError(f"invalid JSON constant {name} in plugins list --json")

    doc = json.loads(out, parse_constant=no_constant)
    assert rc == 0 and "nanacc" not in {m["name"] for m in doc["cost_models"]}
    row = {p["name"]: p for p in doc["plugins"]}["nanacc-plugin"]
    assert row["status"] == "failed" and "accuracy = nan" in row["error"]
    assert any(p.startswith("plugin nanacc-plugin") and "accuracy = nan" in p for p in doc["problems"])
    assert "warning: plugin nanacc-plugin" in err


def test_a_models_own_check_refuses_before_any_pricing_and_a_failing_check_is_its_bug(tmp_path):
    """The optional ``check(spec)`` of a cost model (codesign.costmodel.CostModel): its SpecError
    reaches the user as it is, before anything is priced; anything else it raises is the plugin's
    bug, named with the model and plugin."""
    from codesign.errors import PluginBugError, SpecError
    from codesign.evaluation import check_priceable

    priced = []

    def refuse(spec):
        raise SpecError([(spec.path, "efficiency.my_knob", "must be below 1")])

    def count(spec, formats, overrides):
        priced.append(1)
        return _stub(spec, formats, overrides)

    from codesign.evaluation import evaluate

    pm = _with("strict", count, check=refuse)
    with pytest.raises(SpecError, match=r"strict.toml: efficiency.my_knob: must be below 1"):
        check_priceable(_spec(tmp_path, "strict"), pm=pm)
    with pytest.raises(SpecError, match=r"strict.toml: efficiency.my_knob: must be below 1"):
        evaluate(_spec(tmp_path, "strict"), pm=pm)  # evaluate asks it too, before pricing
    assert priced == []

    pm = _with("buggy", count, check=lambda spec: 1 / 0)
    with pytest.raises(PluginBugError, match=r"cost model 'buggy' \(plugin buggy-plugin.*\) raised in check\(\): "
                                             r"ZeroDivisionError"):
        check_priceable(_spec(tmp_path, "buggy"), pm=pm)

    check_priceable(_spec(tmp_path, "plain"), pm=_with("plain", count))  # no check: nothing to ask
    assert priced == []
