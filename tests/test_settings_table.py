"""docs/settings.md's table is config.SETTINGS, and the settings' consumers derive from them."""

from __future__ import annotations

import dataclasses

import pytest

from mochaos import settings_table
from mochaos.cli import main
from mochaos.config import CHECK_SETTINGS, SETTINGS, RunConfig


def test_the_page_s_table_is_written_from_the_settings():
    page = settings_table.PAGE.read_text()
    assert page == settings_table.rewrite(page), (
        "docs/settings.md differs from config.SETTINGS: run python -m mochaos.settings_table"
    )
    for s in SETTINGS:
        assert f"| `{s.flag}` | `{s.ini}` | `{s.env}` |" in page


def test_run_config_has_one_field_per_setting_with_its_default():
    fields = [f for f in dataclasses.fields(RunConfig) if f.name not in ("run_id", "sources")]
    assert [f.name for f in fields] == [s.name for s in SETTINGS]
    for f, s in zip(fields, SETTINGS, strict=True):
        if s.name != "chaos_seed":  # None in the table: resolve draws a random seed
            assert f.default == s.default, s.name


def test_targets_and_thresholds_read_the_settings_marked_for_them():
    cfg = RunConfig(run_id="r")
    assert set(cfg.target_options()) == {s.name for s in SETTINGS if s.target} | {"run_id"}
    scaled = RunConfig(run_id="r", time_scale=0.5, finalize_timeout=30.0, retry_budget=3)
    options = scaled.check_options()
    assert (options.finalize_timeout, options.retry_budget, options.time_scale) == (15, 3, 0.5)


def test_the_check_command_overrides_exactly_the_thresholds(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = capsys.readouterr().out
    flags = {w.rstrip(",") for w in text.split() if w.startswith("--") and w != "--help"}
    assert flags == {s.flag for s in CHECK_SETTINGS}
