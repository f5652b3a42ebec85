"""Shared fixtures of the Python package's tests: the source tree, the CLI and the models.

ctest runs this folder in one pytest process (tests/python/CMakeLists.txt) with
PYTHONPATH=<build>/python, MICROTIR_CLI (the CLI built beside the package) and
MICROTIR_SOURCE_DIR set; the models are compiled once per session.
"""

import os
import shutil

import numpy as np
import pytest

SOURCE_DIR = os.environ.get("MICROTIR_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
DIGITS = os.path.join(SOURCE_DIR, "models", "digits", "digits.json")
CONV_CASE = os.path.join(SOURCE_DIR, "tests", "tflite", "tflm_ops", "conv_2d_i8_10")


@pytest.fixture(scope="session")
def microtir():
    import microtir as package

    return package


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("MICROTIR_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("MICROTIR_CLI is not set (ctest sets it to the CLI built beside the package)")
    return path


@pytest.fixture(scope="session")
def digits(microtir):
    return microtir.load(DIGITS)


@pytest.fixture(scope="session")
def digits_artifact(microtir, digits):
    return microtir.compile(digits)


@pytest.fixture(scope="session")
def digits_sample():
    return np.load(os.path.join(SOURCE_DIR, "models", "digits", "sample_x.npy"))


def have_tools(*tools):
    return all(shutil.which(t) for t in tools)
