"""``tf2py doctor``'s analysis: what breaks transform trees, found in a stream of messages.

Pure: it is fed one message at a time (``Observations.add``: receive time in ns, topic,
authority, and the message's transforms as columns), from a live bus or a bag
(``observe_bag`` here), and ``diagnose`` turns what it saw into ``Finding``s, one per
problem, each with its fix. No sockets, no threads, no clock of its own; the command line
(``tf2py.cli.doctor``) listens and prints.

``observations`` keeps what each check needs, ``checks`` runs the tree checks (their
thresholds in ``Thresholds``), ``findings`` words them; ``joints`` checks joint states
against a ``RobotModel`` (``JointObservations``, ``diagnose_joints``: joints the model lacks,
movable joints no one publishes, malformed joint states), fed from a bus's CDR samples by a
thread-safe ``JointWatch``.
"""

from __future__ import annotations

from typing import Any

from .checks import Thresholds, diagnose, recording_time_base_s
from .findings import Finding, cut
from .observations import TF, TF_STATIC, Observations

__all__ = ["Observations", "Finding", "Thresholds", "diagnose", "observe_bag", "cut",
           "recording_time_base_s", "TF", "TF_STATIC"]


def observe_bag(bag: Any, observations: Observations, authority: str) -> None:
    """Feed ``observations`` with every message of ``bag`` (a ``tf2py.bag.BagTransforms``),
    received at its log time, all from ``authority`` (bags do not say which node sent what)."""
    offsets = bag.message_offsets.tolist()
    log_ns = bag.message_log_ns.tolist()
    static = bag.message_static.tolist()
    rows = bag.transforms
    stamps = rows.stamps_ns.tolist()
    values = rows.values.tolist()
    parents, children = rows.parents, rows.children
    for index, received_ns in enumerate(log_ns):
        start, stop = offsets[index], offsets[index + 1]
        observations.add(received_ns, TF_STATIC if static[index] else TF, authority,
                         parents[start:stop], children[start:stop],
                         stamps[start:stop], values[start:stop])
