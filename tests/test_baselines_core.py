"""``efficiency_from`` and baseline references (codesign/baselines.py)."""

from __future__ import annotations

import json
import re

from conftest import SPECS

GB200 = SPECS / "examples" / "gb200-gpt-oss-120b.toml"


def test_efficiency_from_uses_the_baselines_knobs(cli, tmp_path):
    from codesign.pluginmanager import get_plugin_manager

    knobs = get_plugin_manager().baselines["gb200"].efficiency
    assert knobs, "the gb200 baseline carries calibrated knobs"
    a = tmp_path / "a.toml"
    a.write_text(f'efficiency_from = "gb200"\ninclude = ["{GB200.as_posix()}"]\n')
    b = tmp_path / "b.toml"  # the same knobs written out by hand
    b.write_text(f'include = ["{GB200.as_posix()}"]\n[efficiency]\n'
                 + "".join(f"{k} = {v!r}\n" for k, v in knobs.items()))
    docs = []
    for f in (a, b):
        rc, out, err = cli("evaluate", f, "--json")
        assert rc == 0, err
        docs.append(json.loads(out))
    assert docs[0]["points"] == docs[1]["points"]


def test_unknown_efficiency_from_is_a_clear_error(cli, tmp_path):
    a = tmp_path / "a.toml"
    a.write_text(f'efficiency_from = "gb9000"\ninclude = ["{GB200.as_posix()}"]\n')
    rc, out, err = cli("evaluate", a)
    assert rc == 2 and "efficiency_from" in err and "gb9000" in err and "Traceback" not in err


def test_a_reference_spec_file_is_priced_by_the_specs_cost_model(tmp_path):
    """The flagship's reference is a spec file whose deployment names the analytical model; a spec
    that included the flagship and set ``cost_model = "roofline"`` had its designs priced by the
    roofline model and its reference by the analytical one, and printed ×ref ratios between two
    models (fresh-user trial, session 26). The reference takes the spec's cost model, as a
    registered baseline (``reference = "gb200"``) always did."""
    import pytest

    pytest.importorskip("codesign_roofline")
    from codesign.baselines import reference_spec
    from codesign.spec import load_spec

    spec = tmp_path / "roof.toml"
    spec.write_text(f'include = ["{(SPECS / "jalapeno-gpt-oss-120b.toml").as_posix()}"]\n'
                    '[deployment]\ncost_model = "roofline"\n')
    s = load_spec(spec)
    assert s.search.reference.endswith(".toml")  # a spec file, not a registered baseline
    assert reference_spec(s, s.search.reference).deployment.cost_model == "roofline"
    assert reference_spec(s, "gb200").deployment.cost_model == "roofline"
    flagship = load_spec(SPECS / "jalapeno-gpt-oss-120b.toml")
    assert reference_spec(flagship, flagship.search.reference).deployment.cost_model == "analytical"


def _pm_with_baseline(**kw):
    """A plugin manager with the installed plugins and one more registering baseline 'tpu9'."""
    import pluggy

    import codesign
    from codesign.pluginmanager import PluginManager

    class TpuPlugin:
        @pluggy.HookimplMarker("codesign")
        def codesign_baselines(self):
            return [codesign.Baseline(name="tpu9", **kw)]

    pm = PluginManager()
    pm.register(TpuPlugin(), "tpu-plugin")
    return pm


def test_a_baseline_whose_hardware_file_is_missing_is_named_with_its_plugin(cli, tmp_path, monkeypatch):
    """A plugin's baseline whose hardware TOML is not there said only '/…/tpu9.toml: no such file':
    not which baseline, which plugin, nor that the spec's search.reference led there (fresh-user
    trial, session 27). The line is at the spec's search.reference and names all three."""
    import pytest

    from codesign.baselines import reference_spec
    from codesign.errors import SpecError
    from codesign.spec import load_spec

    missing = tmp_path / "gone" / "tpu9.toml"
    pm = _pm_with_baseline(hardware=missing)
    spec = tmp_path / "ref.toml"
    spec.write_text(f'include = ["{(SPECS / "jalapeno-gpt-oss-120b.toml").as_posix()}"]\n'
                    '[search]\nreference = "tpu9"\n')
    with pytest.raises(SpecError) as e:
        reference_spec(load_spec(spec), "tpu9", pm=pm)
    (file, key, msg), = e.value.problems
    assert (file, key) == (str(spec), "search.reference")
    assert "baseline 'tpu9' (plugin tpu-plugin" in msg and f"{str(missing)!r}" in msg and "does not exist" in msg
    # as the user meets it: optimize refuses the spec, one line, exit 2
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    rc, out, err = cli("optimize", spec, "--out", tmp_path / "o", "--trials", "1")
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0] == f"error: {spec}: search.reference: {msg}"


def test_a_baseline_without_a_hardware_file_is_named_with_its_plugin(tmp_path):
    """hardware = None (the Baseline default) failed inside pathlib: an internal error naming neither."""
    import pytest

    from codesign.baselines import reference_spec
    from codesign.errors import SpecError
    from codesign.spec import load_spec

    flagship = load_spec(SPECS / "jalapeno-gpt-oss-120b.toml")
    with pytest.raises(SpecError, match=r"search.reference: baseline 'tpu9' \(plugin tpu-plugin.*registers no hardware file"):
        reference_spec(flagship, "tpu9", pm=_pm_with_baseline())


def test_a_reference_file_of_another_workload_is_warned(cli, tmp_path):
    """The flagship's reference is a spec file with its own workload (8k/1k: its include of
    workloads/inferencemax-8k1k.toml). A spec that includes the flagship and sets ISL 16,384 was
    compared with GB200 at ISL 8,192 without a word (fresh-user trial, session 28): optimize says
    so on stderr and in pareto.json's warnings. A baseline name takes the spec's workload: none."""
    from codesign.baselines import reference_warnings
    from codesign.spec import load_spec

    spec = tmp_path / "long.toml"
    spec.write_text(f'include = ["{(SPECS / "jalapeno-gpt-oss-120b.toml").as_posix()}"]\n[workload]\nisl = 16384\n')
    (w,) = reference_warnings(load_spec(spec))
    assert w.startswith("the reference 'gb200-gpt-oss-120b' (") and "own workload: isl 8192 (this spec 16384)" in w, w
    assert reference_warnings(load_spec(SPECS / "jalapeno-gpt-oss-120b.toml")) == []
    spec.write_text(spec.read_text() + '[search]\nreference = "gb200"\n')
    # no workload warning; the calibrated baseline against default-knob designs is said (below)
    assert not [w for w in reference_warnings(load_spec(spec)) if "workload" in w]


def test_a_reference_file_serving_another_mode_is_warned(tmp_path):
    """A disaggregated search (1 prefill + 8 decode chips) over the flagship's reference file, which
    serves aggregated (examples/gb200-gpt-oss-120b.toml: its deployment include), compared the two
    serving modes without a word (fresh-user trial, session 48)."""
    from codesign.baselines import reference_warnings
    from codesign.spec import load_spec

    ref = (SPECS / "examples" / "gb200-gpt-oss-120b.toml").as_posix()
    spec = tmp_path / "dis.toml"
    spec.write_text(f'include = ["{ref}"]\nname = "dis"\n[deployment]\nmode = "disaggregated"\n'
                    '[deployment.prefill]\nchips = 1\ntp = 1\n[deployment.decode]\nchips = 8\ntp = 8\n'
                    f'[search]\ntrials = 2\nreference = "{ref}"\n'
                    '[search.params]\n"memory.hbm.bandwidth" = { low = "4 TB/s", high = "8 TB/s" }\n'
                    '[[search.objectives]]\nmetric = "peak_mixed_tok_s_per_kw"\ndirection = "maximize"\n')
    got = [w for w in reference_warnings(load_spec(spec)) if "serves" in w]
    assert got == [f"the reference 'gb200-gpt-oss-120b' ({ref}) serves aggregated, as its own [deployment] says, "
                   "and this spec's designs serve disaggregated; its ×ref ratios compare unlike cases. Name a "
                   "baseline (reference = \"gb200\": it takes this spec's model and workload) or a reference file "
                   "for this case"], got


def test_a_reference_priced_with_other_knobs_is_warned(cli, tmp_path):
    """A spec with efficiency_from = "gb200" over the flagship, whose reference file keeps the
    default knobs, printed ×ref 0.6 with no warning, and the calibrated gb200 baseline against
    default-knob designs is the unfair comparison the README describes (fresh-user trial, session
    35). Both are said; the same knobs on both sides are not."""
    from codesign.baselines import reference_warnings
    from codesign.spec import load_spec

    flagship = (SPECS / "jalapeno-gpt-oss-120b.toml").as_posix()
    spec = tmp_path / "ef.toml"
    cases = [('efficiency_from = "gb200"\n', "the designs are priced with efficiency_from = 'gb200' and the "
              "reference 'gb200-gpt-oss-120b' with the default knobs: its ×ref ratios compare the knobs"),
             ('[search]\nreference = "gb200"\n', "the designs are priced with the default knobs and the "
              "reference 'gb200 (baseline)' with its calibrated knobs"),
             ('efficiency_from = "gb200"\n[search]\nreference = "gb200"\n', None)]
    for body, want in cases:
        spec.write_text(f'include = ["{flagship}"]\n{body}')
        got = reference_warnings(load_spec(spec))
        assert (got == []) if want is None else (len(got) == 1 and got[0].startswith(want)), (body, got)


def test_a_reference_file_naming_another_cost_model_is_warned(tmp_path):
    """A reference spec file is priced by the spec's cost model, whatever it names (session 26), so
    ``cost_model = "nosuch"`` or ``"roofline"`` there was silently not used, exit 0 (fresh-user
    trial, session 31): the warning says so. An SLO the reference file lacks is no unlike case: the
    search holds the reference to the spec's SLOs, as it holds the designs (session 39; it was
    warned as "slo none", and the reference priced without it)."""
    from codesign.baselines import reference_warnings
    from codesign.spec import load_spec

    ref = tmp_path / "ref.toml"
    ref.write_text(f'include = ["{(SPECS / "examples" / "gb200-gpt-oss-120b.toml").as_posix()}"]\n'
                   '[deployment]\ncost_model = "nosuch"\n')
    spec = tmp_path / "s.toml"
    spec.write_text(f'include = ["{(SPECS / "jalapeno-gpt-oss-120b.toml").as_posix()}"]\n'
                    '[search]\nreference = "ref.toml"\n[workload.slo]\nttft = "150 ms"\ntpot = "4 ms"\n')
    (cm,) = reference_warnings(load_spec(spec))
    assert cm.startswith("the reference 'gb200-gpt-oss-120b' (") and "names deployment.cost_model 'nosuch'" in cm
    assert "priced by this spec's, 'analytical'" in cm and "not used" in cm
    # the same cost model named in the reference file is no news
    ref.write_text(ref.read_text().replace('"nosuch"', '"analytical"'))
    assert reference_warnings(load_spec(spec)) == []


# ---------------------------------------------------------------------- a baseline's knobs are its plugin's
#: The shipped GB200 hardware file (a baseline plugin's own is a copy of one like it).
GB200_HW = SPECS.parent / "plugins" / "codesign_baseline" / "gb200.toml"
#: Knobs the analytical model refuses: a compute fraction above 1 and a knob it does not have
#: (KNOB_RANGES in plugins/codesign_analytical/model.py: compute_decode is in (0, 1]).
BAD_KNOBS = {"compute_decode": 1.7, "compute_decodd": 0.4}


def _bad_knob_lines(err: str) -> tuple[str, str]:
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in err, err
    return lines[0], lines[1]


def test_a_baselines_bad_knobs_under_efficiency_from_are_its_plugins_bug(cli, tmp_path, monkeypatch):
    """A plugin's baseline with knobs out of range, or unknown, was refused at the user's spec
    ('a.toml: efficiency.compute_decode: must be ...', exit 2), which said only efficiency_from =
    "tpu9" (fresh-user trial, session 40). It is the baseline plugin's bug: exit 3, one line naming
    the baseline, its plugin and each knob with its value."""
    import pytest

    from codesign.baselines import resolve_efficiency
    from codesign.errors import PluginBugError
    from codesign.spec import load_spec

    pm = _pm_with_baseline(hardware=GB200_HW, efficiency=BAD_KNOBS)
    a = tmp_path / "a.toml"
    a.write_text(f'efficiency_from = "tpu9"\ninclude = ["{GB200.as_posix()}"]\n')
    with pytest.raises(PluginBugError) as e:
        resolve_efficiency(load_spec(a), pm=pm)
    msg = str(e.value)
    assert msg.startswith("baseline 'tpu9' (plugin tpu-plugin")
    assert f"(efficiency_from = 'tpu9' in {a})" in msg
    assert "efficiency.compute_decode = 1.7: must be a finite number in (0, 1]" in msg
    assert "efficiency.compute_decodd = 0.4: unknown knob" in msg
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    rc, out, err = cli("evaluate", a)
    first, second = _bad_knob_lines(err)
    assert rc == 3 and out == ""
    assert first == f"internal error: {msg}" and "bug in that plugin, not in your input" in second
    # only the knobs in effect are asked: a spec that sets the bad knob itself prices, as the same
    # knobs written out by hand do
    pm = _pm_with_baseline(hardware=GB200_HW, efficiency={"compute_decode": 1.7, "compute_prefill": 0.6})
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    a.write_text(a.read_text() + "[efficiency]\ncompute_decode = 0.5\n")
    b = tmp_path / "b.toml"
    b.write_text(f'include = ["{GB200.as_posix()}"]\n[efficiency]\ncompute_decode = 0.5\ncompute_prefill = 0.6\n')
    docs = []
    for f in (a, b):
        rc, out, err = cli("evaluate", f, "--json")
        assert rc == 0, err
        docs.append(json.loads(out)["points"])
    assert docs[0] == docs[1]


def test_a_baselines_bad_knobs_as_search_reference_are_its_plugins_bug(cli, tmp_path, monkeypatch):
    """The same as a search's reference: the knob errors were printed at the baseline's hardware
    file ('…/gb200.toml: efficiency.compute_decode: …  (the search.reference of ref.toml)', exit 2).
    Now exit 3 before the search starts, naming the baseline and its plugin; nothing is written."""
    pm = _pm_with_baseline(hardware=GB200_HW, efficiency=BAD_KNOBS)
    spec = tmp_path / "ref.toml"
    spec.write_text(f'include = ["{(SPECS / "jalapeno-gpt-oss-120b.toml").as_posix()}"]\n'
                    '[search]\nreference = "tpu9"\n')
    monkeypatch.setattr("codesign.pluginmanager.get_plugin_manager", lambda: pm)
    for cmd in ("optimize", "sweep"):
        out_dir = tmp_path / f"o-{cmd}"
        rc, out, err = cli(cmd, spec, "--out", out_dir, *(("--trials", "1") if cmd == "optimize" else ("--points", "8")))
        first, _ = _bad_knob_lines(err)
        assert rc == 3, (cmd, err)
        assert first.startswith("internal error: baseline 'tpu9' (plugin tpu-plugin"), first
        assert f"(search.reference = 'tpu9' in {spec})" in first and "efficiency.compute_decode = 1.7" in first
        assert str(GB200_HW) not in first  # not blamed on the hardware file
        assert not out_dir.exists()


def test_a_baseline_with_knobs_that_are_not_numbers_is_skipped_when_registered():
    """Knobs that are no numbers are refused when the plugin's records are collected, as a cost
    model's bad accuracy is: the plugin is named (failed in codesign_baselines), its baselines are
    skipped, and the built-in ones stay."""
    import pytest

    from codesign.pluginmanager import PluginWarning

    for knobs, shown in (({"compute_decode": "0.5"}, "efficiency['compute_decode'] = '0.5'"),
                         ({"compute_decode": True}, "efficiency['compute_decode'] = true"),
                         ([("compute_decode", 0.5)], "efficiency = [('compute_decode', 0.5)]")):
        pm = _pm_with_baseline(hardware=GB200_HW, efficiency=knobs)
        with pytest.warns(PluginWarning, match=r"plugin tpu-plugin .*failed in codesign_baselines: ValueError: "
                                               r"baseline 'tpu9': " + re.escape(shown) + "; expected a"):
            names = set(pm.baselines)
        assert "tpu9" not in names and "gb200" in names
    pm = _pm_with_baseline(hardware=GB200_HW, cost_model="")
    with pytest.warns(PluginWarning, match=r"failed in codesign_baselines: ValueError: baseline 'tpu9': cost_model = ''"):
        assert "tpu9" not in pm.baselines
