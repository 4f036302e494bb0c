"""``python -m mochaos explore``: bad input is one line and exit status 2, before any run."""

from __future__ import annotations

import pytest

from mochaos.cli import main
from mochaos.explore.plan import Exploration


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--operator", "model:fixed"], "explore needs --operator and --workload"),
        (["--operator", "model:fixed", "--workload", "dance"], "unknown workload 'dance'"),
        (["--operator", "model:fixed", "--workload", "migration", "--faults", "nap"],
         "unknown fault nap"),
        (["--operator", "model:nope", "--workload", "migration"], "unknown model profile"),
        (["--operator", "model:fixed", "--workload", "migration", "--budget", "-1"],
         "--budget must be >= 0"),
        (["--report", "/nonexistent/exploration.json"], "cannot read"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, says):
    assert main(["explore", "--reports-dir", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert says in err[-1], err
    assert not list(tmp_path.glob("explore-*"))  # nothing ran


def test_report_renders_the_matrix_of_a_file(tmp_path, capsys):
    path = Exploration(workload="migration", target={"operator": "model:fixed"}).save(
        tmp_path / "exploration.json"
    )
    assert main(["explore", "--report", str(path)]) == 0
    assert (tmp_path / "exploration.html").is_file()
    assert "no failure signature" in capsys.readouterr().out
