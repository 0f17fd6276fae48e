"""codesign: hardware/software co-design of LLM inference systems.

Public API: specs (:func:`load_spec`), the plugin contract (:data:`hookimpl`,
:class:`CostModelInfo`, :class:`NumberFormat`, :class:`Evaluation`) and errors.
"""

from .baselines import Baseline
from .costmodel import CostModel, CostModelInfo, Evaluation
from .errors import CodesignError, ExitCode, PluginError, SpecError
from .formats import NumberFormat
from .hookspecs import hookimpl
from .spec import Spec, load_spec

__version__ = "0.1.0"

__all__ = [
    "Baseline", "CodesignError", "CostModel", "CostModelInfo", "Evaluation", "ExitCode", "NumberFormat",
    "PluginError", "Spec", "SpecError", "hookimpl", "load_spec", "__version__",
]
