"""``codesign study run --quick`` on every shipped study: report, figures and data are written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow
STUDIES = REPO / "studies"


@pytest.mark.parametrize("name", ["jalapeno", "kv-locality", "throughput-interactivity"])
def test_study_quick(cli, tmp_path, name):
    out = tmp_path / name
    rc, stdout, err = cli("study", "run", STUDIES / f"{name}.toml", "--out", out, "--quick")
    assert rc == 0, err
    report = (out / "report.md").read_text()
    data = json.loads((out / "data.json").read_text())
    assert data["quick"] is True and data["steps"]
    for img in [l.split("](")[1].rstrip(")") for l in report.splitlines() if l.startswith("![")]:
        assert (out / img).is_file(), img
    if name == "jalapeno":
        _published_beside_ours(data)


def _published_beside_ours(data):
    rows = {r["metric"]: r for r in data["steps"]["gpt-oss-120b"]["table"]}
    # published figures straight from jalapeno_published.csv: GB200 44,960 and Jalapeño 85,448 tok/s/kW
    assert rows["peak_mixed_tok_s_per_kw"]["published_baseline"] == 44960
    assert rows["peak_mixed_tok_s_per_kw"]["published_design"] == 85448
    assert rows["min_tpot_s"]["published_baseline"] == pytest.approx(1.87e-3)


def test_study_json_names_what_it_wrote(cli, tmp_path):
    """`codesign study run --json`: one document on stdout, data.json's content with the report, data
    and figure paths beside its keys (progress stays on stderr). ``study`` is the study's name, as in
    data.json and optimize --json; it held the whole of data.json (fresh-user trial, session 41)."""
    out = tmp_path / "kv"
    rc, stdout, err = cli("study", "run", STUDIES / "kv-locality.toml", "--out", out, "--quick", "--json")
    assert rc == 0, err
    doc = json.loads(stdout)
    assert doc["report"] == str(out / "report.md") and doc["data"] == str(out / "data.json")
    assert doc["figures"] and all(Path(f).is_file() and f.endswith(".png") for f in doc["figures"])
    assert doc["study"] == "kv-locality"  # studies/kv-locality.toml's name
    data = json.loads((out / "data.json").read_text())
    assert {k: v for k, v in doc.items() if k not in ("report", "data", "figures")} == data
    assert set(doc) == {"schema_version", "study", "title", "quick", "steps", "report", "data", "figures"}


def test_quick_without_out_does_not_overwrite_the_shipped_report(cli):
    """The default output directory of a shipped study holds its full report: a --quick run there
    would replace it with small-budget results, so it is refused (exit 2) with nothing written."""
    data = STUDIES / "kv-locality" / "data.json"
    before = data.read_bytes()
    assert json.loads(before)["quick"] is False
    rc, out, err = cli("study", "run", STUDIES / "kv-locality.toml", "--quick")
    assert rc == 2 and "holds the full run's report" in err and "--out" in err, err
    assert data.read_bytes() == before


def test_bad_study_is_a_clear_error(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[[steps]]\nkind = "optimize"\nname = "a"\nspec = "nope.toml"\n')
    rc, out, err = cli("study", "run", bad, "--out", tmp_path / "o", "--quick")
    assert rc == 2 and "steps.0.spec" in err and "no such spec file" in err and "Traceback" not in err


def test_report_links_the_spec_from_where_the_report_is(cli, tmp_path):
    # a study in studies/ names its specs relative to itself ("../specs/…"); the report, wherever
    # --out puts it, links them relative to its own directory
    (tmp_path / "studies").mkdir()
    (tmp_path / "specs").mkdir()
    for name, shipped in [("grid.toml", "kv-locality.toml"), ("search.toml", "jalapeno-gpt-oss-120b.toml")]:
        (tmp_path / "specs" / name).write_text(f'include = ["{(REPO / "specs" / shipped).as_posix()}"]\n')
    study = tmp_path / "studies" / "mini.toml"
    study.write_text('name = "mini"\n'
                     '[[steps]]\nkind = "grid"\nname = "g"\nspec = "../specs/grid.toml"\n'
                     'x = { key = "memory.sram.capacity", values = ["0 MiB", "256 MiB"] }\n'
                     'y = { key = "memory.hbm.bandwidth", values = ["8 TB/s"] }\n'
                     '[[steps]]\nkind = "optimize"\nname = "o"\nspec = "../specs/search.toml"\nquick_trials = 2\n')
    out = tmp_path / "elsewhere" / "deeper"
    rc, _, err = cli("study", "run", study, "--out", out, "--quick")
    assert rc == 0, err
    report = (out / "report.md").read_text()
    targets = [t for t in re.findall(r"\]\(([^)]+)\)", report) if t.endswith(".toml")]
    # from tmp/elsewhere/deeper up two levels to tmp, then into specs/
    assert targets == ["../../specs/grid.toml", "../../specs/search.toml"], report
    for t in targets:
        assert (out / t).resolve() == (tmp_path / "specs" / Path(t).name).resolve()


def test_a_resumed_optimize_step_says_so_on_stderr(cli, tmp_path):
    """Rerunning a study resumes its optimize steps from their journals and says so on stderr
    (``--json`` keeps stdout one document); the first run, a new study, says nothing of the kind."""
    spec = tmp_path / "search.toml"
    spec.write_text(f'include = ["{(REPO / "specs" / "jalapeno-gpt-oss-120b.toml").as_posix()}"]\n')
    study = tmp_path / "mini.toml"
    study.write_text('name = "mini"\n[[steps]]\nkind = "optimize"\nname = "o"\nspec = "search.toml"\nquick_trials = 2\n')
    out = tmp_path / "out"
    rc, stdout, err = cli("study", "run", study, "--out", out, "--quick", "--json")
    assert rc == 0 and json.loads(stdout)["steps"]["o"]["trials"] == 2, err
    assert "resuming" not in err, err
    # a rerun with nothing left to run says only that; one with more trials to run resumes
    rc, stdout, err = cli("study", "run", study, "--out", out, "--quick", "--json")
    assert rc == 0 and json.loads(stdout)["steps"]["o"]["trials"] == 2, err
    assert "resuming" not in err, err
    study.write_text(study.read_text().replace("quick_trials = 2", "quick_trials = 3"))
    rc, stdout, err = cli("study", "run", study, "--out", out, "--quick", "--json")
    assert rc == 0 and json.loads(stdout)["steps"]["o"]["trials"] == 3, err
    assert f"resuming: 2 completed trials in {out / 'o' / 'study.journal'}" in err, err


def test_a_published_table_in_the_shared_data_follows_codesign_shared_data(tmp_path, monkeypatch):
    """studies/jalapeno.toml names ../../shared/data/jalapeno_published.csv, from the study's own
    directory: a checkout whose shared data is elsewhere (CI on a clone in /tmp, with
    CODESIGN_SHARED_DATA set) said 'published table /tmp/ci-main/studies/../../shared/data/... not
    found' (session 25). Where the variable is set, such a path is read from it."""
    from codesign.study import _data_path

    base = tmp_path / "repo" / "studies"
    monkeypatch.delenv("CODESIGN_SHARED_DATA", raising=False)
    assert _data_path("../../shared/data/jalapeno_published.csv", base) == \
        base / "../../shared/data/jalapeno_published.csv"
    monkeypatch.setenv("CODESIGN_SHARED_DATA", str(tmp_path / "elsewhere"))
    assert _data_path("../../shared/data/jalapeno_published.csv", base) == \
        tmp_path / "elsewhere" / "jalapeno_published.csv"
    assert _data_path("tables/mine.csv", base) == base / "tables/mine.csv"  # not shared data: as written


def test_a_grid_cell_longer_than_the_models_context_is_named(cli, tmp_path):
    """kv-locality's longest facet was ISL 131,072 at its spec's OSL of 1,024: 132,096 tokens, past
    gpt-oss-120b's 131,072-token context (HF max_position_embeddings), priced without a word. A grid
    value whose request does not fit is named at its path, exit 2, nothing written; 130,048 (which
    fills the context exactly) runs."""
    spec = REPO / "specs" / "kv-locality.toml"
    study = tmp_path / "s.toml"
    body = ('name = "ctx"\n[[steps]]\nkind = "grid"\nname = "g"\nspec = "{spec}"\nmetric = "min_tpot_s"\n'
            'x = {{ key = "memory.sram.capacity", values = ["0 MiB"] }}\n'
            'y = {{ key = "workload.isl", values = [8192, {isl}] }}\n')
    study.write_text(body.format(spec=spec.as_posix(), isl=131072))
    rc, out, err = cli("study", "run", study, "--out", tmp_path / "o", "--quick")
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "steps.0.y.values.1: isl + osl = 131,072 + 1,024 = 132,096 tokens, longer than gpt-oss-120b's " \
           "context length, 131,072 tokens" in lines[0], lines[0]
    assert not (tmp_path / "o").exists()
    study.write_text(body.format(spec=spec.as_posix(), isl=130048))
    rc, out, err = cli("study", "run", study, "--out", tmp_path / "o", "--quick")
    assert rc == 0, err


def test_a_grid_axis_over_the_output_length_takes_its_least_value(cli, tmp_path):
    """workload.osl is a whole number >= 2 (TPOT divides by OSL - 1): a grid axis over it is a
    numeric axis, and a value of 1 is named at its path, exit 2, nothing written."""
    spec = REPO / "specs" / "kv-locality.toml"
    study = tmp_path / "s.toml"
    study.write_text('name = "osl"\n[[steps]]\nkind = "grid"\nname = "g"\nspec = "{spec}"\nmetric = "min_tpot_s"\n'
                     'x = {{ key = "memory.sram.capacity", values = ["0 MiB"] }}\n'
                     'y = {{ key = "workload.osl", values = [1024, 1] }}\n'.format(spec=spec.as_posix()))
    rc, out, err = cli("study", "run", study, "--out", tmp_path / "o", "--quick")
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "steps.0.y.values.1: expected a whole number >= 2 (got 1)" in lines[0], lines[0]
    assert not (tmp_path / "o").exists()


def test_a_grid_marks_peak_power_against_each_designs_own_tdp(cli, tmp_path):
    """† marks a design whose peak power is above its TDP. The grid took the base spec's TDP for
    every cell, and GB200 at its own 1200 W TDP was marked over: specs/technology/n4p.toml derives its
    energy figures so that GB200 at full FP4, HBM and NVLink rates draws 1200 W (150 W static +
    249.6 W HBM + 72 W links + 728.4 W compute), to the 3-4 digits they are given in. So at TDP
    1000 W the design is over (1200 > 1000), at 1200 W and 1400 W it is not."""
    spec = REPO / "specs" / "examples" / "gb200-gpt-oss-120b.toml"
    study = tmp_path / "s.toml"
    study.write_text(f'name = "tdp"\n[[steps]]\nkind = "grid"\nname = "g"\nspec = "{spec.as_posix()}"\n'
                     'metric = "peak_mixed_tok_s_per_kw"\n'
                     'x = { key = "chip.tdp", values = ["1000 W", "1200 W", "1400 W"] }\n'
                     'y = { key = "memory.hbm.bandwidth", values = ["8 TB/s"] }\n')
    rc, out, err = cli("study", "run", study, "--out", tmp_path / "o", "--json")
    assert rc == 0, err
    data = json.loads((tmp_path / "o" / "data.json").read_text())
    step = data["steps"]["g"]
    assert step["over_budget"] == [[[True, False, False]]]


def test_a_grid_colour_bar_gives_the_metrics_unit_and_its_own_arrow_alone(cli, tmp_path, monkeypatch):
    """The heatmap's colour bar took the unit and arrow of a searched metric alone: tdp_w (W, no
    better direction: costmodel.DESIGN_METRICS) was labelled "tdp_w [] ↓" (session 46). Now its
    unit and no arrow; peak tok/s per kW (better higher) keeps its ↑ (report.ARROWS)."""
    from matplotlib.figure import Figure

    said = []
    real = Figure.colorbar
    monkeypatch.setattr(Figure, "colorbar", lambda self, *a, **k: (said.append(k.get("label")), real(self, *a, **k))[1])
    spec = REPO / "specs" / "examples" / "gb200-gpt-oss-120b.toml"
    for metric in ("tdp_w", "peak_mixed_tok_s_per_kw"):
        study = tmp_path / f"{metric}.toml"
        study.write_text(f'name = "{metric}"\n[[steps]]\nkind = "grid"\nname = "g"\nspec = "{spec.as_posix()}"\n'
                         f'metric = "{metric}"\n'
                         'x = { key = "chip.tdp", values = ["1000 W", "1200 W"] }\n'
                         'y = { key = "memory.hbm.bandwidth", values = ["8 TB/s"] }\n')
        rc, out, err = cli("study", "run", study, "--out", tmp_path / metric)
        assert rc == 0, err
    assert said == ["tdp_w [W]", "peak_mixed_tok_s_per_kw [tok/s/kW] ↑"]


def test_a_grid_says_why_each_infeasible_cell_is_one(cli, tmp_path):
    """× cells had no reason anywhere (fresh-user trial, session 33). gpt-oss-120b has 64 attention
    heads (specs/models/gpt-oss-120b.toml), so TP 3 is no deployment; TP 8 is the example's own."""
    spec = REPO / "specs" / "examples" / "gb200-gpt-oss-120b.toml"
    study = tmp_path / "s.toml"
    study.write_text(f'name = "tp"\n[[steps]]\nkind = "grid"\nname = "g"\nspec = "{spec.as_posix()}"\n'
                     'metric = "min_tpot_s"\nx = { key = "deployment.tp", values = [3, 8] }\n'
                     'y = { key = "memory.hbm.bandwidth", values = ["8 TB/s"] }\n')
    rc, out, err = cli("study", "run", study, "--out", tmp_path / "o")
    assert rc == 0, err
    step = json.loads((tmp_path / "o" / "data.json").read_text())["steps"]["g"]
    assert step["infeasible_reasons"] == [[["tp 3 does not divide the model's 64 attention heads", ""]]]
    assert "- × (1 design): tp 3 does not divide the model's 64 attention heads" in \
        (tmp_path / "o" / "report.md").read_text()


# ---------------------------------------------- grid and curves values judged as a search's (session 34)
EXAMPLE = REPO / "specs" / "examples" / "gb200-gpt-oss-120b.toml"


def _run_refused(cli, tmp_path, body, *lines):
    study = tmp_path / "st.toml"
    study.write_text('name = "st"\n' + body)
    rc, _, err = cli("study", "run", study, "--out", tmp_path / "o")
    assert rc == 2 and "Traceback" not in err, err
    for line in lines:
        assert f"error: {study}: {line}" in err.splitlines(), err
    assert not (tmp_path / "o").exists()


def _run_study(cli, tmp_path, body):
    """Run the study ``name = "st"`` + ``body`` into ``tmp_path/o``, which must succeed; returns
    ``(report.md's text, stderr)``."""
    study = tmp_path / "st.toml"
    study.write_text('name = "st"\n' + body)
    rc, _, err = cli("study", "run", study, "--out", tmp_path / "o")
    assert rc == 0, err
    return (tmp_path / "o" / "report.md").read_text(), err


def test_grid_values_get_the_deployment_range_checks(cli, tmp_path):
    """speculative_tokens 40 and scheduler_recv_interval 100000 were priced (README ranges: [0, 16]
    and [1, 10000]); the same key on both axes had one overwrite the other (×1.000 along x)."""
    _run_refused(cli, tmp_path,
                 f'[[steps]]\nkind = "grid"\nname = "g"\nspec = "{EXAMPLE.as_posix()}"\nmetric = "min_tpot_s"\n'
                 'x = { key = "deployment.speculative_tokens", values = [0, 40] }\n'
                 'y = { key = "deployment.scheduler_recv_interval", values = [1, 100000] }\n',
                 "steps.0.x.values.1: must be a whole number in [0, 16] (got 40)",
                 "steps.0.y.values.1: must be a whole number in [1, 10000] (got 100000)")
    _run_refused(cli, tmp_path,
                 f'[[steps]]\nkind = "grid"\nname = "g"\nspec = "{EXAMPLE.as_posix()}"\nmetric = "min_tpot_s"\n'
                 'x = { key = "deployment.tp", values = [1, 2] }\ny = { key = "deployment.tp", values = [4, 8] }\n',
                 "steps.0.y.key: 'deployment.tp' is already an axis of this grid; each axis varies another key")


@pytest.mark.parametrize("envelope, line", [
    ('{ "deployment.tpp" = [1, 2] }', "steps.0.envelope.\"deployment.tpp\": not a numeric deployment key; "
                                      "did you mean 'deployment.tp'?"),
    # a case slip gets the guess too (errors.close_name; difflib alone compares case and gave none)
    ('{ "DEPLOYMENT.EP" = [1, 2] }', "steps.0.envelope.\"DEPLOYMENT.EP\": not a numeric deployment key; "
                                     "did you mean 'deployment.ep'?"),
    ('{ "deployment.speculative_tokens" = [40] }',
     'steps.0.envelope."deployment.speculative_tokens".0: must be a whole number in [0, 16] (got 40)'),
    ('{ "deployment.prefill.tp" = [1, 2] }',   # the example serves aggregated
     'steps.0.envelope."deployment.prefill.tp": not read: deployment.mode is "aggregated"'),
])
def test_a_curves_envelope_is_judged_as_a_search_envelope(cli, tmp_path, envelope, line):
    study = tmp_path / "st.toml"
    study.write_text(f'name = "st"\n[[steps]]\nkind = "curves"\nname = "c"\nspecs = ["{EXAMPLE.as_posix()}"]\n'
                     f"envelope = {envelope}\n")
    rc, _, err = cli("study", "run", study, "--out", tmp_path / "o")
    assert rc == 2 and "Traceback" not in err, err
    assert any(x.startswith(f"error: {study}: {line}") for x in err.splitlines()), err


def test_a_bad_curves_envelope_value_is_said_once_for_several_specs(cli, tmp_path):
    """A value out of the key's range is out of range for every spec of the step: it was said once
    per spec, the same line twice."""
    study = tmp_path / "st.toml"
    study.write_text(f'name = "st"\n[[steps]]\nkind = "curves"\nname = "c"\n'
                     f'specs = ["{EXAMPLE.as_posix()}", "{EXAMPLE.as_posix()}"]\nlabels = ["a", "b"]\n'
                     'envelope = { "deployment.speculative_tokens" = [40] }\n')
    rc, _, err = cli("study", "run", study, "--out", tmp_path / "o")
    assert rc == 2 and "Traceback" not in err, err
    assert err.strip().splitlines() == [f'error: {study}: steps.0.envelope."deployment.speculative_tokens".0: '
                                        "must be a whole number in [0, 16] (got 40)"]


@pytest.mark.parametrize("step, line", [
    # a value listed twice was priced twice and drawn as one point ("deployment.tp ∈ [1, 1]")
    (f'kind = "curves"\nname = "c"\nspecs = ["{EXAMPLE.as_posix()}"]\nenvelope = {{ "deployment.tp" = [1, 1] }}\n',
     'steps.0.envelope."deployment.tp".1: 1 is the same value as 1; list each value once'),
    # 1 TB = 10^12 B = 1000 GB (SI prefixes)
    (f'kind = "grid"\nname = "g"\nspec = "{EXAMPLE.as_posix()}"\nmetric = "min_tpot_s"\n'
     'x = { key = "deployment.tp", values = [4, 8] }\ny = { key = "memory.hbm.capacity", values = ["1 TB", "1000 GB"] }\n',
     "steps.0.y.values.1: '1000 GB' is the same value as '1 TB'; list each value once"),
    # one knob source for two specs: the second was priced with the default knobs, silently
    (f'kind = "curves"\nname = "c"\nspecs = ["{EXAMPLE.as_posix()}", "{EXAMPLE.as_posix()}"]\n'
     'efficiency_from = ["gb200"]\n',
     'steps.0.efficiency_from: lists 1 entries for 2 specs: give one per spec ("" for none), or leave it out'),
])
def test_a_repeated_value_or_a_short_list_is_refused(cli, tmp_path, step, line):
    study = tmp_path / "st.toml"
    study.write_text(f'name = "st"\n[[steps]]\n{step}')
    rc, _, err = cli("study", "run", study, "--out", tmp_path / "o")
    assert rc == 2 and err.strip().splitlines() == [f"error: {study}: {line}"], err


def test_a_missing_curves_spec_is_said_not_dropped(cli, tmp_path):
    """A curves spec file that is not there is skipped with a note: the note was lost (the list of
    missing specs was overwritten by the measured file's), so the study exited 0 with one curve
    fewer and nothing said (fresh-user trial, session 35). The report, data.json and stderr say it."""
    report, err = _run_study(cli, tmp_path, f'[[steps]]\nkind = "curves"\nname = "c"\n'
                                            f'specs = ["{EXAMPLE.as_posix()}", "nope.toml"]\nlabels = ["GB200", "nope"]\n')
    assert "nope.toml not found" in err
    assert "- nope.toml: no curve, the spec file is not found." in report
    data = json.loads((tmp_path / "o" / "data.json").read_text())
    assert data["steps"]["c"]["missing_specs"] == ["nope.toml"]


def test_a_curve_with_no_feasible_point_is_said_not_drawn(cli, tmp_path):
    """TP 3 on gpt-oss-120b's 64 attention heads (its HF config) serves nothing: the curves step
    crashed (exit 3, log axis of no data); the report names the spec and why, data.json too.
    acceptance_rate, a fraction, may be an envelope key of a spec with draft tokens."""
    spec = tmp_path / "mtp.toml"
    spec.write_text(f'include = ["{EXAMPLE.as_posix()}"]\n[deployment]\nspeculative_tokens = 2\n')
    report, _ = _run_study(cli, tmp_path, f'[[steps]]\nkind = "curves"\nname = "c"\nspecs = ["{EXAMPLE.as_posix()}"]\n'
                                          'labels = ["GB200"]\nenvelope = { "deployment.tp" = [3] }\n'
                                          '[[steps]]\nkind = "curves"\nname = "m"\nspecs = ["mtp.toml"]\n'
                                          'envelope = { "deployment.acceptance_rate" = [0.5, 0.9] }\n')
    assert "- GB200: no curve, tp 3 does not divide the model's 64 attention heads." in report
    assert "overlaid as crosses" not in report  # no measured file was asked for
    data = json.loads((tmp_path / "o" / "data.json").read_text())
    series = json.dumps(data)
    assert "tp 3 does not divide" in series and "acceptance_rate" in series


def _registered(name):
    """The ``{name, version, plugin}`` record of cost model ``name``: its version from the plugin
    registry, its plugin label from the distribution that installs it (``NAME (DIST VERSION)``)."""
    from importlib.metadata import version

    from codesign.pluginmanager import get_plugin_manager

    info = get_plugin_manager().cost_models[name]
    dist = {"analytical": "codesign", "roofline": "codesign-roofline"}[name]
    return {"name": name, "version": info.version, "plugin": f"{name} (codesign {version(dist)})"
            if dist == "codesign" else f"{name} ({dist} {version(dist)})"}


def _said(record):
    """How the report names a cost-model record."""
    return f"cost model `{record['name']}` version {record['version']} (plugin {record['plugin']})"


def test_data_and_report_name_the_cost_model_and_knobs_of_each_step(cli, tmp_path):
    """Every priced number of a study says what priced it, as pareto.json, sweep_front.json and
    evaluate --json do: data.json named no cost model and the report neither the model, its version
    nor the calibrated knobs a curve took (session 40). Each step names its own spec (a curves step
    several), so each optimize and grid step, and each curve, carries the record: {name, version,
    plugin} of the registered model and, for efficiency_from, the baseline, its plugin and the
    calibration's version (that of plugins/codesign_baseline/calibration.toml)."""
    import tomllib
    from importlib.metadata import version

    analytical = _registered("analytical")
    assert analytical["version"]
    cal = tomllib.loads((REPO / "plugins" / "codesign_baseline" / "calibration.toml").read_text())["version"]
    gb200_knobs = {"baseline": "gb200", "plugin": f"baseline (codesign {version('codesign')})",
                   "calibration_version": cal}
    (tmp_path / "grid.toml").write_text(f'include = ["{(REPO / "specs" / "kv-locality.toml").as_posix()}"]\n')
    (tmp_path / "search.toml").write_text(
        f'include = ["{(REPO / "specs" / "jalapeno-gpt-oss-120b.toml").as_posix()}"]\n')
    study = tmp_path / "st.toml"
    study.write_text('name = "st"\n'
                     '[[steps]]\nkind = "grid"\nname = "g"\nspec = "grid.toml"\n'
                     'x = { key = "memory.sram.capacity", values = ["0 MiB", "256 MiB"] }\n'
                     'y = { key = "memory.hbm.bandwidth", values = ["8 TB/s"] }\n'
                     '[[steps]]\nkind = "optimize"\nname = "o"\nspec = "search.toml"\nquick_trials = 2\n'
                     f'[[steps]]\nkind = "curves"\nname = "c"\nspecs = ["{EXAMPLE.as_posix()}", "{EXAMPLE.as_posix()}"]\n'
                     'labels = ["GB200 calibrated", "GB200 default"]\nefficiency_from = ["gb200", ""]\n')
    out = tmp_path / "o"
    rc, stdout, err = cli("study", "run", study, "--out", out, "--quick", "--json")
    assert rc == 0, err
    data = json.loads((out / "data.json").read_text())
    assert {k: v for k, v in json.loads(stdout).items() if k not in ("report", "data", "figures")} == data
    steps = data["steps"]
    for name in ("g", "o"):
        assert steps[name]["cost_model"] == analytical, name
        assert steps[name]["efficiency_from"] is None, name
    # the optimize step's record is its pareto.json's
    assert json.loads((out / "o" / "pareto.json").read_text())["cost_model"] == analytical
    # its reference, the flagship's specs/examples/gb200-gpt-oss-120b.toml, sets no knobs
    ref = steps["o"]["reference"]
    assert (ref["cost_model"], ref["efficiency_from"], ref["efficiency"]) == (analytical, None, {})
    series = steps["c"]["series"]
    assert series["GB200 calibrated"]["cost_model"] == analytical == series["GB200 default"]["cost_model"]
    assert series["GB200 calibrated"]["efficiency_from"] == gb200_knobs
    assert series["GB200 default"]["efficiency_from"] is None
    report = (out / "report.md").read_text()
    default = "the cost model's default efficiency knobs"
    assert f"Priced by {_said(analytical)}, with {default}." in report  # the grid
    assert f"Designs and reference priced by {_said(analytical)}, both with {default}." in report, report
    assert (f"Priced by {_said(analytical)}: GB200 calibrated with gb200's calibrated efficiency knobs "
            f'(`efficiency_from = "gb200"`; calibration {cal}, plugin {gb200_knobs["plugin"]}); '
            f"GB200 default with {default}.") in report, report


def test_an_optimize_step_names_the_knobs_of_its_reference(cli, tmp_path):
    """An optimize step's report and data.json (and its pareto.json) say which knobs priced the
    reference, beside the designs' (the report named the reference's cost model only: session 41).
    A registered baseline (reference = "gb200") is priced with its own calibrated knobs: the baseline,
    its plugin and the calibration's version (plugins/codesign_baseline/calibration.toml's); a
    reference file with its efficiency_from and [efficiency] knobs is priced with those."""
    import tomllib
    from importlib.metadata import version

    analytical = _registered("analytical")
    cal = tomllib.loads((REPO / "plugins" / "codesign_baseline" / "calibration.toml").read_text())["version"]
    plugin = f"baseline (codesign {version('codesign')})"
    flagship = (REPO / "specs" / "jalapeno-gpt-oss-120b.toml").as_posix()
    (tmp_path / "base.toml").write_text(f'include = ["{flagship}"]\nefficiency_from = "gb200"\n'
                                        '[search]\nreference = "gb200"\n')
    (tmp_path / "ref.toml").write_text(f'include = ["{EXAMPLE.as_posix()}"]\nefficiency_from = "gb300"\n'
                                       '[efficiency]\nrouting_skew = 0.5\n')
    (tmp_path / "file.toml").write_text(f'include = ["{flagship}"]\n[search]\nreference = "ref.toml"\n')
    study = tmp_path / "st.toml"
    study.write_text('name = "st"\n'
                     '[[steps]]\nkind = "optimize"\nname = "b"\nspec = "base.toml"\nquick_trials = 2\n'
                     '[[steps]]\nkind = "optimize"\nname = "f"\nspec = "file.toml"\nquick_trials = 2\n')
    out = tmp_path / "o"
    rc, _, err = cli("study", "run", study, "--out", out, "--quick")
    assert rc == 0, err
    steps = json.loads((out / "data.json").read_text())["steps"]
    want = {"b": (analytical, {"baseline": "gb200", "plugin": plugin, "calibration_version": cal}, {}),
            "f": (analytical, {"baseline": "gb300", "plugin": plugin, "calibration_version": cal},
                  {"routing_skew": 0.5})}
    for name, w in want.items():
        ref = steps[name]["reference"]
        assert (ref["cost_model"], ref["efficiency_from"], ref["efficiency"]) == w, (name, ref)
        assert json.loads((out / name / "pareto.json").read_text())["reference"]["efficiency_from"] == w[1]
    report = " ".join((out / "report.md").read_text().split())
    knobs = "{b}'s calibrated efficiency knobs (`efficiency_from = \"{b}\"`; calibration " + cal + ", plugin " + plugin + ")"
    gb200, gb300 = knobs.format(b="gb200"), knobs.format(b="gb300")
    assert f"Designs and reference priced by {_said(analytical)}, both with {gb200}." in report, report
    assert (f"Designs and reference priced by {_said(analytical)}; the designs with the cost model's default "
            f"efficiency knobs, the reference gb200-gpt-oss-120b with {gb300}, 1 of them overridden by its own "
            "[efficiency].") in report, report


def _roofline_installed() -> bool:
    from codesign.pluginmanager import get_plugin_manager

    return "roofline" in get_plugin_manager().cost_models


@pytest.mark.skipif("not _roofline_installed()", reason="the example roofline plugin is not installed (pip install -e plugins/codesign_example_roofline)")
def test_each_curve_names_its_own_cost_model(cli, tmp_path):
    """A curves step's specs may name different cost models (deployment.cost_model): each curve's
    data.json series carries its own record, and the report names each model with its curves."""
    roofline_spec = REPO / "specs" / "examples" / "gb200-gpt-oss-120b-roofline.toml"
    report, _ = _run_study(cli, tmp_path, f'[[steps]]\nkind = "curves"\nname = "c"\n'
                                          f'specs = ["{EXAMPLE.as_posix()}", "{roofline_spec.as_posix()}"]\n'
                                          'labels = ["analytical", "roofline"]\n')
    series = json.loads((tmp_path / "o" / "data.json").read_text())["steps"]["c"]["series"]
    for name in ("analytical", "roofline"):
        assert series[name]["cost_model"] == _registered(name), name
    for name in ("analytical", "roofline"):
        assert f"Priced by {_said(_registered(name))}: {name} with the cost model's default efficiency knobs." in report


def test_a_grid_report_gives_a_binary_size_in_binary_units(cli, tmp_path):
    """The kv-locality report said "going from 0 B to 1.07 GB of memory.sram.capacity" of the
    study's "1 GiB" (session 41). A grid over "0 MiB", "64 MiB" and "1 GiB" of SRAM says 0 B and
    1 GiB in its text, as the study wrote them."""
    (tmp_path / "grid.toml").write_text(f'include = ["{(REPO / "specs" / "kv-locality.toml").as_posix()}"]\n')
    report, _ = _run_study(cli, tmp_path, '[[steps]]\nkind = "grid"\nname = "g"\nspec = "grid.toml"\n'
                                          'metric = "min_tpot_s"\n'
                                          'x = { key = "memory.sram.capacity", values = ["0 MiB", "64 MiB", "1 GiB"] }\n'
                                          'y = { key = "memory.hbm.bandwidth", values = ["8 TB/s"] }\n')
    assert "going from 0 B to 1 GiB of memory.sram.capacity" in report, report
    assert " GB" not in report and " MB" not in report, report


def test_a_grid_value_or_step_spec_in_bits_gets_the_note(cli, tmp_path):
    """A grid axis of "32 Tb/s" of HBM bandwidth was priced as 4 TB/s without a word, and so was a
    step's spec of "1488 Gb" of HBM, which `evaluate` notes. study run notes both on stderr, as
    evaluate notes a spec's; a network.* axis in bits gets none (link rates are quoted in bits)."""
    spec = tmp_path / "grid.toml"
    spec.write_text(f'include = ["{EXAMPLE.as_posix()}"]\n[memory.hbm]\ncapacity = "1488 Gb"\n')
    _, err = _run_study(cli, tmp_path, '[[steps]]\nkind = "grid"\nname = "g"\nspec = "grid.toml"\n'
                                       'metric = "min_tpot_s"\n'
                                       'x = { key = "memory.hbm.bandwidth", values = ["8 TB/s", "32 Tb/s"] }\n'
                                       'y = { key = "network.scaleup_bandwidth", values = ["800 Gb/s"] }\n')
    assert [line for line in err.splitlines() if line.startswith("note:")] == [
        # 32 Tb/s = 32 x 10^12 bit/s / 8 = 4 x 10^12 B/s
        f'note: {tmp_path / "st.toml"}: steps.0.x.values.1 = "32 Tb/s" (memory.hbm.bandwidth) is read as '
        "4 TB/s (Tb is terabits; write TB for terabytes)",
        # 1488 Gb = 1488 x 10^9 bits / 8 = 186 x 10^9 B
        f'note: {spec}: memory.hbm.capacity = "1488 Gb" is read as 186 GB (Gb is gigabits; write GB for gigabytes)',
    ], err


def test_a_grid_axis_of_terabytes_is_labelled_in_tb():
    """A grid over memory.hbm.capacity = ["186 GB", "8 TB"] labelled its figure's tick "8e+03 GB";
    8 x 10^12 B is 8 TB (SI, as "186 GB"), and 4 x 2^40 B is 4 TiB (IEC, as "1 GiB")."""
    from codesign.study import Axis, _fmt_axis

    axis = Axis(key="memory.hbm.capacity", values=("186 GB", "8 TB", "4 TiB"))
    assert [_fmt_axis(axis, v) for v in (186e9, 8e12, 4 * 2**40)] == ["186 GB", "8 TB", "4 TiB"]
