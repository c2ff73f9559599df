"""The package's version: a leaf module, so that any layer can name it without
importing the package root (which would be an arrow up every floor). pyproject.toml
states the same string; ``tests/test_version.py`` keeps the two in lockstep."""

__all__ = ["__version__"]

__version__ = "0.1.0"
