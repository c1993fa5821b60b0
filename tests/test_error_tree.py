"""Every error denpex raises on purpose belongs to one tree (denpex.errors.DenpexError), so a
caller can tell denpex's refusals from its bugs with one `except`."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import denpex
from denpex.errors import DenpexError

# Modules that need optional services or extras to import are still walked: their import is
# what is tested, and none of them needs a running service to be imported.
_SKIP_PREFIXES = ("denpex.rules", "denpex.prompts", "denpex.__main__")


def _denpex_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(denpex.__path__, "denpex."):
        if info.name.startswith(_SKIP_PREFIXES) or ".migrations.versions." in info.name:
            continue
        module = importlib.import_module(info.name)
        for name, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == info.name:
                found[f"{info.name}.{name}"] = value
    return found


def test_every_exception_denpex_defines_is_a_denpex_error() -> None:
    exceptions = _denpex_exceptions()
    assert len(exceptions) > 10  # the walk found the package's errors
    outside = sorted(name for name, cls in exceptions.items() if not issubclass(cls, DenpexError))
    assert outside == []


def test_the_error_tree_lists_every_direct_kind() -> None:
    # The docstring of denpex.errors is the map a newcomer reads: each kind is named in it.
    import denpex.errors as errors

    documented = errors.__doc__ or ""
    for name, cls in _denpex_exceptions().items():
        if cls.__bases__[0] is DenpexError or DenpexError in cls.__bases__:
            assert cls.__name__ in documented, name
