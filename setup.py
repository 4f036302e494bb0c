"""The build hook that ships the Go modules of ``go/`` inside the wheel.

Everything else about the package is declared in pyproject.toml. mo-chaos builds its Go
modules (the MatrixOne double, the apiserver interposer) from source on the user's machine,
so a wheel carries each module's sources, go.mod and go.sum (no ``_test.go``) as
``mochaos/_go/<module>/``, where :func:`mochaos.paths.go_module` finds them. An editable
install copies nothing: it reads the checkout's ``go/``.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

GO = Path("go")
SHIPPED = ("mochaos", "_go")


def go_sources() -> list[Path]:
    """The files of ``go/`` a build needs: non-test Go sources, go.mod and go.sum."""
    return [
        p for p in sorted(GO.rglob("*"))
        if p.is_file() and (p.name in ("go.mod", "go.sum")
                            or (p.suffix == ".go" and not p.name.endswith("_test.go")))
    ]  # fmt: skip


class BuildPyWithGo(build_py):
    """build_py, then the Go modules' sources copied into the package's build folder."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        for src in go_sources():
            dest = Path(self.build_lib, *SHIPPED, src.relative_to(GO))
            self.mkpath(str(dest.parent))
            self.copy_file(str(src), str(dest))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        shipped = [str(Path(self.build_lib, *SHIPPED, s.relative_to(GO))) for s in go_sources()]
        return [*super().get_outputs(include_bytecode), *shipped]


setup(cmdclass={"build_py": BuildPyWithGo})
