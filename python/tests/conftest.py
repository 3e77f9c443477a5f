"""Shared fixtures: a context on the cpu device (numpy arrays are host memory) and fresh random inputs."""
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # reference.py, batch.py
sys.path.insert(1, os.path.dirname(HERE))  # the package of this source tree, from any working folder

import attnrt  # noqa: E402


@pytest.fixture
def ctx():
    with attnrt.open("cpu:0") as c:
        yield c


@pytest.fixture
def rng(request):
    """A generator seeded differently every run (the seed is printed when a test fails)."""
    seed = int.from_bytes(os.urandom(4), "little")
    print("seed", seed)
    return np.random.default_rng(seed)
