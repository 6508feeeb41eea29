"""``paradise report``: disclosure risk and information loss of a role's view, with plots.

See :func:`paradise.report.run.build_report` (figures as data),
:func:`paradise.report.verdict.verdicts` (one verdict per figure),
:func:`paradise.report.write.write_report` (self-contained HTML plus JSON) and
:func:`paradise.report.compare.compare` (several policies on one risk-utility plot).
"""

from paradise.report.compare import compare as compare
from paradise.report.figures import Comparison as Comparison
from paradise.report.figures import Report as Report
from paradise.report.figures import Variant as Variant
from paradise.report.figures import VariantPoint as VariantPoint
from paradise.report.run import build_report as build_report
from paradise.report.write import write_report as write_report

__all__ = ["Comparison", "Report", "Variant", "VariantPoint", "build_report", "compare",
           "write_report"]
