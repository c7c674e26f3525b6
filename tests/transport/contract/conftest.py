"""The bus contract, run on every bus (contract_support.BUSES): the ``bus`` fixture builds
each in turn, shared by one module's tests (they keep apart by frame names, ``names``); a bus
whose extra is missing skips (fails under CI, as everywhere)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from contract_support import BUS_KINDS, BUSES, SERVER_LINKS, Bus


@pytest.fixture(scope="module", params=BUSES)
def bus(request) -> Iterator[Bus]:
    """Each bus in turn, shared by the tests of one module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TF2PY_KEYS", raising=False)  # plain buses, whatever the caller set
        built = BUS_KINDS[request.param]()
        try:
            yield built
        finally:
            built.close()


@pytest.fixture(scope="module", params=SERVER_LINKS)
def server_address(request) -> Iterator[str]:
    """A buffer server address on each bus that has a server link (``Bus.server_address``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TF2PY_KEYS", raising=False)
        built = BUS_KINDS[request.param]()
        try:
            yield built.server_address()
        finally:
            built.close()


@pytest.fixture
def names() -> Callable[[str], str]:
    """``names("base")`` -> a frame id of this test only (tests share a bus)."""
    tag = uuid.uuid4().hex[:8]
    return lambda base: f"{base}_{tag}"
