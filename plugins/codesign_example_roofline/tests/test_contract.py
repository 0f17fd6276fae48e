"""The codesign cost-model contract suite, run against this plugin's model (docs/plugins.md, step 6)."""

from codesign.testing import CostModelContract


class TestRoofline(CostModelContract):
    cost_model = "roofline"
    rtol = 1e-9  # float64 numpy
