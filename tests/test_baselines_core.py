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
