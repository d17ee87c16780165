import os
import sys

import pytest

# Import the package from this source tree (no installation needed).
sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(__file__), "..")))
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(scope="session")
def ps():
    import polysci
    return polysci


@pytest.fixture(scope="session")
def ctx(ps):
    c = ps.Context()
    yield c
