"""The tasks a test declares leave the catalog with it: other tests list the catalog. A test
module that declares tasks imports the autouse fixture (`from helpers.declared import
forget_declared_tasks`)."""

from __future__ import annotations

import pytest

from ruler.catalog.declared import declared_names, forget


@pytest.fixture(autouse=True)
def forget_declared_tasks():
    before = set(declared_names())
    yield
    for name in declared_names():
        if name not in before:
            forget(name)
