"""``codesign study run --quick`` on every shipped study: report, figures and data are written."""

from __future__ import annotations

import json

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


def test_bad_study_is_a_clear_error(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[[steps]]\nkind = "optimize"\nname = "a"\nspec = "nope.toml"\n')
    rc, out, err = cli("study", "run", bad, "--out", tmp_path / "o", "--quick")
    assert rc == 2 and "steps.0.spec" in err and "no such spec file" in err and "Traceback" not in err
