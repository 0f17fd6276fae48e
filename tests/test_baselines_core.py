"""``efficiency_from`` and baseline references (codesign/baselines.py)."""

from __future__ import annotations

import json

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
