"""Every built-in cost model, and the example plugin, passes the cost-model contract suite.

The suite itself is :mod:`codesign.testing` (what a third-party plugin author subclasses); this
file only names the models. The example plugin's tests skip, with the install command as the
reason, when ``plugins/codesign_example_roofline`` is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import numpy as np
import pytest

from codesign.testing import CostModelContract
from conftest import SPECS

ROOFLINE_MISSING = ("the example plugin is not installed "
                    "(pip install -e plugins/codesign_example_roofline)")


class TestAnalytical(CostModelContract):
    cost_model = "analytical"
    rtol = 2e-5  # float32 under JAX

    def single(self, spec, formats):
        from codesign_analytical.model import single

        params, fn, _static = single(spec, formats)
        return params, fn


class TestRoofline(CostModelContract):
    cost_model = "roofline"
    skip_reason = ROOFLINE_MISSING
    rtol = 1e-9  # float64 numpy


def _roofline_installed() -> bool:
    from codesign.pluginmanager import get_plugin_manager

    return "roofline" in get_plugin_manager().cost_models


needs_roofline = pytest.mark.skipif("not _roofline_installed()", reason=ROOFLINE_MISSING)


@needs_roofline
def test_roofline_is_a_lower_bound_of_the_analytical_model():
    """The bare roofline is never slower than the analytical model on the same spec (it drops the
    efficiencies, overheads, collectives and queueing the analytical model adds)."""
    from codesign import load_spec
    from codesign.evaluation import evaluate

    spec = load_spec(SPECS / "examples" / "gb200-gpt-oss-120b.toml")
    ana = evaluate(spec, cost_model="analytical")
    roof = evaluate(spec, cost_model="roofline")
    both = ana.feasible & roof.feasible
    assert both.all()
    for k in ("ttft_s", "tpot_s", "e2e_latency_s"):
        assert np.all(roof.points[k][both] <= ana.points[k][both]), k
    assert np.all(roof.points["mixed_tok_s_per_chip"][both] >= ana.points["mixed_tok_s_per_chip"][both])


@needs_roofline
def test_roofline_tpot_at_concurrency_one_by_hand():
    """Batch 1 decode of gpt-oss-120b on 8 GB200s, derived from config.json by hand.

    Active weight bytes (tests/test_evaluate.py `_gpt_oss_active_bytes`, plus the 36·2·2880 and
    final 2880 RMSNorm weights in BF16) plus one request's KV cache at the mean context, over
    8 chips × 8 TB/s. KV: 18 full layers × 2 × 8 KV heads × 64 dims per token at ctx
    ISL̄ + OSL̄/2 = 7372.8 + 460.8 = 7833.6 → 7833.6 tokens (FP8, 1 B), 18 sliding layers capped at
    the 128-token window; split over min(TP 8, 8 KV heads) = 8 chips. Compute (2·5.1e9 FLOP per
    token at 5 PFLOP/s FP8 per chip) is 300× smaller, so memory sets the step time.
    """
    from test_evaluate import _gpt_oss_active_bytes

    from codesign import load_spec
    from codesign.evaluation import evaluate

    spec = load_spec(SPECS / "examples" / "gb200-gpt-oss-120b-roofline.toml")
    ev = evaluate(spec)
    h, L = 2880, 36
    weights = _gpt_oss_active_bytes() + (2 * h * L + h) * 2
    kv = (18 * 2 * 8 * 64 * 7833.6 + 18 * 2 * 8 * 64 * 128) * 1.0 / 8
    step = (weights / 8 + kv) / 8e12
    # E2E = TTFT + (OSL̄ − 1)·step at concurrency 1, so TPOT equals the step time
    assert ev.points["tpot_s"][0, 0] == pytest.approx(step, rel=1e-3)


@needs_roofline
def test_roofline_example_runs_end_to_end(cli):
    """The example spec selects the plugin's model through the CLI, as a user runs it."""
    import json

    rc, out, err = cli("evaluate", SPECS / "examples" / "gb200-gpt-oss-120b-roofline.toml", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["cost_model"]["name"] == "roofline"
    assert all(p["feasible"] for p in doc["points"])
    rc, out, err = cli("plugins", "list", "--json")
    by = {p["name"]: p for p in json.loads(out)["plugins"]}
    assert by["roofline"]["status"] == "loaded"
    assert by["roofline"]["distribution"] == "codesign-roofline"
    assert by["roofline"]["cost_models"] == ["roofline"]


@needs_roofline
def test_roofline_example_prices_a_chip_without_host_memory(cli):
    """The flagship's chip has no [memory.host] (specs/jalapeno-gpt-oss-120b.toml): the roofline
    example put the ~1e-16 left by 1 - f_sram - f_hbm on a host tier of 0 B/s and returned TPOT =
    inf on feasible points, an internal error (fresh-user trial, session 26). Its KV cache fits in
    HBM, so no byte is read from host memory."""
    import json
    import math

    rc, out, err = cli("evaluate", SPECS / "jalapeno-gpt-oss-120b.toml", "--cost-model", "roofline", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert all(p["feasible"] and math.isfinite(p["tpot_s"]) for p in doc["points"]), doc["points"]


def test_kit_capacity_check_allows_a_point_lost_to_the_tdp():
    """More HBM capacity gives more KV slots, so a point may batch more users and draw more power;
    a point above the TDP is infeasible by design (codesign.evaluation.mark_over_tdp). The kit's
    capacity check asks the model's own feasibility, so it does not fail a correct model for it.

    The case, derived from the model's monotone power-vs-batch: the flagship spec with HBM capacity
    0.237× its own (the kit's 0.75× then holds about 740 users, 1.0× about 1,100) and a 254 W TDP.
    At C = 1,024 the 0.75× design runs a batch of ~740 users (power below 254 W), the 1.0× design
    all 1,024 (more power, above 254 W): the core loses that point, with the TDP reason.
    """
    import attrs

    from codesign import load_spec
    from codesign.evaluation import evaluate
    from codesign.pluginmanager import get_plugin_manager

    spec = load_spec(SPECS / "jalapeno-gpt-oss-120b.toml")
    cap = spec.memory.hbm.capacity * 0.237
    spec = attrs.evolve(spec, chip=attrs.evolve(spec.chip, tdp=254.0),
                        memory=attrs.evolve(spec.memory, hbm=attrs.evolve(spec.memory.hbm, capacity=cap)))
    grid = {"memory.hbm.capacity": cap * np.array([0.25, 0.5, 0.75, 1.0])}
    ev = evaluate(spec, grid)
    lost = ev.feasible[:-1] & ~ev.feasible[1:]
    assert lost.any(), "the case no longer loses a point to the TDP: adjust its capacity or TDP"
    assert all("> chip.tdp" in r for r in ev.point_reasons[1:][lost])
    own = evaluate(spec, grid, apply_tdp=False)
    assert np.all(own.feasible[1:] >= own.feasible[:-1])

    pm = get_plugin_manager()
    kit = TestAnalytical()
    kit.test_more_hbm_capacity_never_lowers_max_concurrency(spec, pm, list(pm.cost_model("analytical").parameters()))


def test_the_kit_warns_on_an_extra_metric_named_without_its_unit():
    """A cost model may return extra metrics (docs/plugins.md), but ``ttft`` (ttft_s without its
    "_s") was accepted and then was no metric a search knows (plugin-author trial, session 46): the
    kit warns, naming the known metric it resembles. By hand: ``ttft`` is ``ttft_s`` less "_s",
    ``tpot_ms`` is ``tpot_s`` in another unit, ``power`` is ``power_w`` less "_w"; ``power_idle_w``
    and ``my_utilization`` resemble no known name, ``decode_batch`` is an optional known one."""
    import types

    from codesign.testing import unitless_extra_metrics

    names = ["ttft_s", "ttft", "tpot_ms", "power", "power_idle_w", "my_utilization", "decode_batch"]
    assert unitless_extra_metrics(names) == [("ttft", "ttft_s"), ("tpot_ms", "tpot_s"), ("power", "power_w")]
    base = types.SimpleNamespace(points={"ttft_s": None, "ttft": None}, design={"area_mm2": None})
    with pytest.warns(UserWarning, match=r"cost model 'analytical' returns the extra metric 'ttft': name it "
                                         r"with its unit suffix, in SI units, as 'ttft_s' is"):
        TestAnalytical().test_extra_metric_names_carry_their_unit(base)


_LEAKY_PLUGIN_TESTS = '''
import attrs
import numpy as np
import pytest

import codesign
from codesign.pluginmanager import PluginManager
from codesign.testing import CostModelContract


class Model:
    """The roofline example with a rule of its own (at most 64 users), said in feasible and in a
    reason, its numbers left in: the contract wants NaN there. It can vary nothing, so the kit's
    checks that build infeasible designs from HBM capacity skip."""

    def parameters(self):
        return []

    def evaluate(self, spec, formats, overrides=None):
        from codesign_roofline.model import RooflineModel

        ev = RooflineModel().evaluate(spec, formats, overrides)
        feasible = ev.feasible & (np.asarray(ev.concurrency) <= 64)
        reasons = np.where(feasible, "", "more than 64 users").astype(object)
        return attrs.evolve(ev, feasible=feasible, point_reasons=reasons)


class Plugin:
    @codesign.hookimpl
    def codesign_cost_models(self):
        return [codesign.CostModelInfo(name="leaky", version="0.1.0", description="test double", factory=Model)]


class TestLeaky(CostModelContract):
    cost_model = "leaky"
    rtol = 1e-9

    @pytest.fixture(scope="class")
    def pm(self):
        pm = PluginManager()
        pm.register(Plugin(), "leaky-plugin")
        return pm
'''


@needs_roofline
def test_the_kit_fails_a_model_that_leaves_numbers_on_infeasible_points(tmp_path):
    """A plugin author runs the kit (docs/plugins.md, step 6): a model that calls a point infeasible
    and leaves its numbers in passed it when it could not vary memory.hbm.capacity (the kit's NaN
    checks build their infeasible designs from it and skipped), and evaluate printed those numbers
    (fresh-user trial, session 40). The core now refuses them on every call, so every kit test that
    prices the spec fails, naming the rule."""
    import os
    import subprocess
    import sys

    test = tmp_path / "test_leaky_contract.py"
    test.write_text(_LEAKY_PLUGIN_TESTS)
    run = subprocess.run([sys.executable, "-m", "pytest", str(test), "-q", "-p", "no:cacheprovider",
                          "-W", "ignore::pytest.PytestAssertRewriteWarning"],
                         capture_output=True, text=True, cwd=tmp_path, env=os.environ.copy(), timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out  # 1: tests failed (not 2-4: the run itself broke)
    assert ("cost model 'leaky' (plugin leaky-plugin (<in-process>)) returned" in out
            and "at concurrency 128, a point it calls infeasible (feasible = False)" in out), out
