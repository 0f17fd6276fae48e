"""``codesign optimize`` end to end on the flagship spec: files, designs, resume."""

from __future__ import annotations

import json

import pytest

from conftest import SPECS

FLAGSHIP = SPECS / "jalapeno-gpt-oss-120b.toml"
pytestmark = pytest.mark.slow


def test_optimize_writes_report_and_designs(cli, tmp_path):
    out = tmp_path / "run"
    rc, stdout, err = cli("optimize", FLAGSHIP, "--trials", "60", "--out", out, "--json")
    assert rc == 0, err
    doc = json.loads(stdout)
    assert doc["schema_version"] == 1 and doc["trials"] == 60
    for f in ("pareto.csv", "pareto.json", "pareto.png", "study.journal"):
        assert (out / f).is_file()
    assert json.loads((out / "pareto.json").read_text()) == doc
    assert doc["pareto"], "no feasible design found"
    assert [o["metric"] for o in doc["objectives"]] == ["peak_mixed_tok_s_per_kw", "min_e2e_latency_s"]
    ref = doc["reference"]["metrics"]
    for r in doc["pareto"]:
        m = r["metrics"]
        assert m["peak_power_w"] <= 700 + 1e-6 and m["area_mm2"] <= 1716 + 1e-6   # constraints hold
        assert r["vs_reference"]["peak_mixed_tok_s_per_kw"] == pytest.approx(
            m["peak_mixed_tok_s_per_kw"] / ref["peak_mixed_tok_s_per_kw"])
        assert r["beats_reference"] == (m["peak_mixed_tok_s_per_kw"] > ref["peak_mixed_tok_s_per_kw"]
                                        and m["min_e2e_latency_s"] < ref["min_e2e_latency_s"])
    # each Pareto design is a spec that `codesign evaluate` accepts unchanged
    design = doc["pareto"][0]["design_file"]
    rc, ev_out, err = cli("evaluate", design, "--json")
    assert rc == 0, err
    ev = json.loads(ev_out)
    # its own deployment is the one that gave the first objective
    assert ev["summary"]["peak_mixed_tok_s_per_kw"] == pytest.approx(
        doc["pareto"][0]["metrics"]["peak_mixed_tok_s_per_kw"], rel=1e-5)


def test_rerun_resumes_and_extends(cli, tmp_path):
    out = tmp_path / "run"
    rc, _, err = cli("optimize", FLAGSHIP, "--trials", "30", "--out", out, "--json")
    assert rc == 0, err
    rc, stdout, err = cli("optimize", FLAGSHIP, "--trials", "30", "--out", out, "--json")
    assert rc == 0 and json.loads(stdout)["new_trials"] == 0 and json.loads(stdout)["trials"] == 30
    rc, stdout, err = cli("optimize", FLAGSHIP, "--trials", "45", "--out", out, "--json")
    doc = json.loads(stdout)
    assert doc["new_trials"] == 15 and doc["trials"] == 45


def test_same_seed_same_front(cli, tmp_path):
    fronts = []
    for name in ("a", "b"):
        rc, stdout, err = cli("optimize", FLAGSHIP, "--trials", "40", "--seed", "7", "--out", tmp_path / name, "--json")
        assert rc == 0, err
        fronts.append([(r["params"], r["metrics"]["peak_mixed_tok_s_per_kw"]) for r in json.loads(stdout)["pareto"]])
    assert fronts[0] == fronts[1]


def test_search_errors_are_clear(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(f'include = ["{FLAGSHIP.as_posix()}"]\n[search.params]\n'
                   '"memory.hbm.bandwith" = {{ low = "1 TB/s", high = "2 TB/s" }}\n'.replace("{{", "{").replace("}}", "}"))
    rc, out, err = cli("optimize", bad, "--trials", "5", "--out", tmp_path / "o")
    assert rc == 2 and "Traceback" not in err
    assert "search.params.memory.hbm.bandwith: no such spec key" in err
    nosearch = SPECS / "examples" / "gb200-gpt-oss-120b.toml"
    rc, out, err = cli("optimize", nosearch, "--out", tmp_path / "o2")
    assert rc == 2 and "search: missing" in err
