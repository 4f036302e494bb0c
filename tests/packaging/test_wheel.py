"""The wheel is the product: what `pip install mo-chaos` gets must run the suites alone."""

from __future__ import annotations

import configparser
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (path,) = out.glob("mo_chaos-*.whl")
    return zipfile.ZipFile(path)


def names(wheel: zipfile.ZipFile) -> set[str]:
    return set(wheel.namelist())


def test_the_suites_are_an_importable_package(wheel):
    files = names(wheel)
    assert "mochaos/suites/__init__.py" in files
    assert "mochaos/suites/conftest.py" in files
    assert "mochaos/suites/test_scalein_during_migration.py" in files


def test_the_exploration_entry_ships_with_the_package(wheel):
    files = names(wheel)
    assert "mochaos/explore/test_explore.py" in files  # pytest --pyargs mochaos.explore
    assert "mochaos/scenario/_workloads.py" in files


def test_manifests_and_schemas_are_package_data(wheel):
    files = names(wheel)
    for kind in ("cnpool", "cnclaimset", "logset", "dnset"):
        assert f"mochaos/manifests/matrixone/{kind}.yaml" in files
    for plural in ("cnclaims", "cnclaimsets", "cnpools"):
        assert f"mochaos/crds/schemas/{plural}.yaml" in files
    assert "mochaos/report/junit.xsd" in files


def test_go_sources_of_the_doubles_ship_with_the_package(wheel):
    go = [n for n in names(wheel) if n.startswith("mochaos/doubles/") and n.endswith(".go")]
    mods = [n for n in names(wheel) if n.startswith("mochaos/doubles/") and n.endswith("go.mod")]
    if not list((ROOT / "mochaos" / "doubles").rglob("*.go")):
        pytest.skip("no Go double in this tree yet")
    assert go and mods


def test_the_plugin_and_the_command_are_entry_points(wheel):
    (ep,) = [n for n in names(wheel) if n.endswith(".dist-info/entry_points.txt")]
    parser = configparser.ConfigParser()
    parser.read_string(wheel.read(ep).decode())
    assert parser["pytest11"]["mochaos"] == "mochaos.plugin"
    assert parser["console_scripts"]["mochaos"] == "mochaos.cli:main"


def test_nothing_of_the_repository_outside_the_package_is_needed(wheel):
    top = {n.split("/", 1)[0] for n in names(wheel)}
    assert top == {"mochaos", *(t for t in top if t.endswith(".dist-info"))}
