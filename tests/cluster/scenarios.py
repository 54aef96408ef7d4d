"""What every cluster-in-a-box test module shares: its pytest marks, and running one scenario on one box
for the module (the parts checked first, every process's log tail printed when the scenario fails)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TypeVar

import pytest

from cluster.box import PROMETHEUS, ClusterBox
from support import pg
from support.need import need
from support.procs import ALERTMANAGER

__all__ = ["MARKS", "on_a_box"]

T = TypeVar("T")

MARKS = [
    pytest.mark.e2e,
    pytest.mark.alertmanager,
    pytest.mark.postgres,
    # the SMTP fake takes AUTH after STARTTLS; aiosmtpd warns about its own settings regardless
    pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning"),
]


@contextmanager
def on_a_box(box: Callable[[], AbstractContextManager[ClusterBox]], scenario: Callable[[ClusterBox], T]) -> Iterator[T]:
    """`scenario`'s outcome on a box started by `box()`, which stops when the module is done with it."""
    need(PROMETHEUS is not None, "prometheus is not installed (run: bash .ci/setup)")
    need(ALERTMANAGER is not None, "prometheus-alertmanager is not installed (run: bash .ci/setup)")
    problem = pg.available()
    need(problem is None, problem or "")
    with box() as started:
        try:
            yield scenario(started)
        except BaseException:
            print(started.log_tails())
            raise
