"""denpex's packages are layered: each imports only the layers below it, and none form a cycle.

The layers are the import-linter contracts in pyproject.toml (`[tool.importlinter]`, listed top
to bottom, and in the README's "Layout"). grimp reads every import statement: module-level,
inside a function and under `TYPE_CHECKING` alike, so an import moved into a function to dodge
the graph still counts.
"""

from __future__ import annotations

import tomllib

import grimp
import pytest
from importlinter.cli import lint_imports

from tests.conftest import REPO

CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
    "importlinter"
]


def _layers() -> list[list[str]]:
    """The layers contract's layers, top to bottom, each as the modules it holds."""
    (contract,) = (c for c in CONFIG["contracts"] if c["type"] == "layers")
    return [[name.strip() for name in layer.split("|")] for layer in contract["layers"]]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("denpex", cache_dir=None)


def _illegal(graph: grimp.ImportGraph) -> set[tuple[str, str]]:
    layers = [grimp.Layer(*modules, independent=True) for modules in _layers()]
    return {(d.importer, d.imported) for d in graph.find_illegal_dependencies_for_layers(layers)}


def test_the_import_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    """What `lint-imports` checks: the layers, and no cycle between denpex's children."""
    kept = lint_imports(config_filename=str(REPO / "pyproject.toml"), no_cache=True, no_logo=True)
    assert kept == 0, capsys.readouterr().out


def test_every_package_and_module_of_denpex_has_a_layer(graph: grimp.ImportGraph) -> None:
    layered = [module for layer in _layers() for module in layer]
    assert len(layered) == len(set(layered)), "a module is named in two layers"
    assert set(graph.find_children("denpex")) == set(layered)


def test_no_layer_imports_one_above_it_or_a_sibling(graph: grimp.ImportGraph) -> None:
    assert _illegal(graph) == set()


def test_an_import_of_a_higher_layer_breaks_the_layering() -> None:
    broken = grimp.build_graph("denpex", cache_dir=None)
    broken.add_import(
        importer="denpex.events",
        imported="denpex.pipeline",
        line_number=1,
        line_contents="from denpex.pipeline import diagnose",
    )
    assert ("denpex.events", "denpex.pipeline") in _illegal(broken)


def test_evaluation_is_imported_by_the_command_line_alone(graph: grimp.ImportGraph) -> None:
    importers = {
        importer
        for module in graph.find_descendants("denpex.evaluation") | {"denpex.evaluation"}
        for importer in graph.find_modules_that_directly_import(module)
    }
    outside = {
        importer
        for importer in importers
        if not importer.startswith(("denpex.evaluation.", "denpex.cli."))
    }
    assert outside == set()
