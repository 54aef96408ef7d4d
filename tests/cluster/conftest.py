"""The session's cluster boxes: every selected scenario module's box started together (scenarios.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cluster.scenarios import Boxes, Scenario, need_the_chain


@pytest.fixture(scope="session")
def boxes(request: pytest.FixtureRequest) -> Iterator[Boxes]:
    """Starts, at the first scenario module's first test, the `SCENARIO` of every module selected in this
    session, in the order the modules run; each box stops when its module is done, the rest at the end."""
    need_the_chain()
    found = Boxes()
    selected = (getattr(item, "module", None) for item in request.session.items)
    found.start(dict.fromkeys(s for m in selected if isinstance(s := getattr(m, "SCENARIO", None), Scenario)))
    try:
        yield found
    finally:
        found.close()
