"""HTCondor submit descriptions -> job ads, exactly as condor_submit makes them.

``parse_submit(text, ...)`` -> ``SubmitDescription``; ``.expand(cluster_id,
qdate, owner)`` -> ``[ClusterSubmission]`` (cluster ad + per-proc diffs).
"""

from roost.submit.description import SubmitDescription, parse_submit
from roost.submit.errors import SubmitError, SubmitWarning
from roost.submit.expansion import QueueBlock
from roost.submit.jobads import ClusterSubmission
from roost.submit.values import Expr

__all__ = [
    "ClusterSubmission",
    "Expr",
    "QueueBlock",
    "SubmitDescription",
    "SubmitError",
    "SubmitWarning",
    "parse_submit",
]
