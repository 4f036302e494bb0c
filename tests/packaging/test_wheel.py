"""The wheel is the product: what `pip install mo-chaos` gets must run the suites alone."""

from __future__ import annotations

import configparser
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mochaos.doubles.matrixone import build

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


def test_the_go_modules_ship_inside_the_package_without_their_tests(wheel):
    """Each Go module of the repository's go/ is in the wheel as mochaos/_go/<module>/: its
    non-test sources, go.mod and go.sum (a wheel install builds them), no _test.go."""
    shipped = {n.removeprefix("mochaos/_go/") for n in names(wheel) if n.startswith("mochaos/_go/")}
    modules = sorted(p.parent for p in (ROOT / "go").glob("*/go.mod"))
    assert modules, "no Go module under go/"
    for module in modules:
        files = {str(p.relative_to(ROOT / "go")) for p in module.rglob("*") if p.is_file()}
        tests = {f for f in files if f.endswith("_test.go")}
        assert tests, f"{module.name}: expected the module to have Go tests (kept out of the wheel)"
        wanted = {
            f for f in files if f.endswith(".go") or f.rsplit("/", 1)[-1] in ("go.mod", "go.sum")
        }
        assert wanted - tests <= shipped, sorted(wanted - tests - shipped)
        assert not tests & shipped, sorted(tests & shipped)
    assert not [n for n in shipped if n.endswith("_test.go")]
    assert "matrixone-double/go.mod" in shipped and "matrixone-double/main.go" in shipped


def test_the_double_s_recipe_is_the_same_from_the_wheel(wheel, tmp_path, monkeypatch):
    """The build recipe digests the module's sources: the wheel's copy gives the checkout's
    digest, so an installed mo-chaos finds the binaries a checkout built (no rebuild)."""
    wheel.extractall(tmp_path, [n for n in names(wheel) if n.startswith("mochaos/_go/")])
    checkout = build.recipe()
    monkeypatch.setattr(build, "GO_MODULE", tmp_path / "mochaos" / "_go" / "matrixone-double")
    assert build.recipe() == checkout


def test_the_plugin_and_the_command_are_entry_points(wheel):
    (ep,) = [n for n in names(wheel) if n.endswith(".dist-info/entry_points.txt")]
    parser = configparser.ConfigParser()
    parser.read_string(wheel.read(ep).decode())
    assert parser["pytest11"]["mochaos"] == "mochaos.plugin"
    assert parser["console_scripts"]["mochaos"] == "mochaos.cli:main"


def test_nothing_of_the_repository_outside_the_package_is_needed(wheel):
    top = {n.split("/", 1)[0] for n in names(wheel)}
    assert top == {"mochaos", *(t for t in top if t.endswith(".dist-info"))}
