"""denpex's one settings object: an option over its `DENPEX_*` variable over the default."""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex.settings import Settings, secret_value


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in ("DENPEX_STORE", "DENPEX_DATA_DIR", "DENPEX_CACHE_DIR", "DENPEX_OVERLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return monkeypatch


def test_without_a_store_named_the_store_is_the_sqlite_file_in_the_data_folder(
    environment: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = Settings()
    assert settings.chosen_store == str(tmp_path / "data" / "denpex" / "incidents.sqlite")
    assert settings.is_default_store
    assert settings.named_store is None
    assert settings.cache_folder == tmp_path / "cache" / "denpex"


def test_an_option_wins_over_its_variable_and_a_missing_option_keeps_it(
    environment: pytest.MonkeyPatch,
) -> None:
    environment.setenv("DENPEX_STORE", "postgresql://db/denpex")
    environment.setenv("DENPEX_LLM_TIMEOUT", "30")
    settings = Settings().given(store="/srv/incidents.sqlite", llm_timeout=None)
    assert settings.chosen_store == "/srv/incidents.sqlite"
    assert settings.named_store == "/srv/incidents.sqlite"
    assert settings.llm_timeout == 30.0


@pytest.mark.parametrize("off", ["off", "OFF", "none", "0"])
def test_off_turns_the_store_off_from_either_side(
    environment: pytest.MonkeyPatch, off: str
) -> None:
    assert Settings().given(store=off).chosen_store is None
    environment.setenv("DENPEX_STORE", off)
    assert Settings().chosen_store is None
    assert Settings().named_store is None


def test_an_empty_variable_names_nothing_rather_than_the_current_folder(
    environment: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    environment.setenv("DENPEX_OVERLAY", "")
    environment.setenv("DENPEX_CACHE_DIR", "  ")
    settings = Settings()
    assert settings.overlay is None
    assert settings.cache_folder == tmp_path / "cache" / "denpex"


def test_secrets_are_kept_out_of_the_settings_repr(environment: pytest.MonkeyPatch) -> None:
    environment.setenv("DENPEX_TENANT_SECRET", "s3cr3t-value")
    settings = Settings()
    assert "s3cr3t-value" not in repr(settings)
    assert secret_value(settings.tenant_secret) == "s3cr3t-value"


def test_an_option_that_is_no_setting_is_refused() -> None:
    with pytest.raises(TypeError, match="no such setting: stroe"):
        Settings().given(stroe="off")


def test_every_bound_on_reading_is_a_variable_and_unset_ones_keep_the_engines_default(
    environment: pytest.MonkeyPatch,
) -> None:
    from denpex.ingest.sources import InputLimits

    assert Settings().reading_limits == {}
    given = {
        "DENPEX_MAX_UNPACKED_BYTES": "1048576",
        "DENPEX_MAX_MEMBERS": "10",
        "DENPEX_MAX_NESTING": "0",
        "DENPEX_MAX_DIRECTORY_DEPTH": "3",
        "DENPEX_MAX_DUMP_BYTES": "4096",
        "DENPEX_MAX_DUMP_CONTAINERS": "500",
        "DENPEX_MAX_DUMP_DEPTH": "8",
    }
    for name, value in given.items():
        environment.setenv(name, value)
    limits = InputLimits(**Settings().reading_limits)
    assert (limits.max_unpacked_bytes, limits.max_members, limits.max_nesting) == (1048576, 10, 0)
    assert (limits.max_directory_depth, limits.max_dump_bytes) == (3, 4096)
    assert (limits.max_dump_containers, limits.max_dump_depth) == (500, 8)


@pytest.mark.parametrize(
    ("name", "value"),
    [("DENPEX_MAX_MEMBERS", "0"), ("DENPEX_MAX_NESTING", "-1"), ("DENPEX_MAX_BODY_BYTES", "x")],
)
def test_a_bound_that_is_not_a_positive_number_is_refused(
    environment: pytest.MonkeyPatch, name: str, value: str
) -> None:
    from pydantic import ValidationError

    environment.setenv(name, value)
    with pytest.raises(ValidationError):
        Settings()
