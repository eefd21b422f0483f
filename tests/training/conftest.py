"""Fixtures shared by the training tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """Tiny models run fastest on one thread, and the machine is shared."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
