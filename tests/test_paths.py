"""Where mo-chaos finds its own Go modules: the wheel's copy, else the checkout's go/."""

from __future__ import annotations

from mochaos import paths


def test_a_checkout_reads_its_go_folder():
    assert paths.go_module("matrixone-double") == paths.CHECKOUT_GO / "matrixone-double"
    assert (paths.go_module("matrixone-double") / "go.mod").is_file()


def test_an_installed_wheel_reads_the_copy_it_carries(tmp_path, monkeypatch):
    (tmp_path / "matrixone-double").mkdir()
    monkeypatch.setattr(paths, "SHIPPED_GO", tmp_path)
    assert paths.go_module("matrixone-double") == tmp_path / "matrixone-double"
