"""The optional C extension (engine/csrc/): the position facts, legal move ids and state tokens.

Everything else about the package is declared in pyproject.toml. The extension is optional: a
machine without a C compiler still installs oneply, and the engine then runs the Python path
(engine/facts/features.py, the specification) and says so once on stderr.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "oneply.engine._core",
            sources=["engine/csrc/board.c", "engine/csrc/facts.c", "engine/csrc/core.c"],
            depends=["engine/csrc/board.h", "engine/csrc/facts.h"],
            extra_compile_args=["-O2", "-std=c99"],
            optional=True,
        )
    ]
)
