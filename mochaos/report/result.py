"""The outcome of one scenario, as the report layer receives it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeAlias

from mochaos.invariants.verdict import Verdict, Violation

Outcome: TypeAlias = Literal["passed", "failed", "inconclusive", "error"]


@dataclass(slots=True)
class ScenarioResult:
    """Everything the reports need about one test, JSON-serialisable via ``to_dict``.

    ``detection_latency`` gives, per failed invariant, the seconds from the violation
    to its first detection by the continuous monitor during the run.
    ``outcome`` is the scenario's verdict: ``failed`` means the operator broke an
    invariant, ``inconclusive`` that the scenario judged nothing (a fault missed its
    window or did not land, a wait timed out, nothing to judge), ``error`` that the
    infrastructure failed or the test broke (never the operator's fault). ``check_options`` are
    the CheckOptions the verdicts were judged with (empty when none were).
    """

    nodeid: str
    outcome: Outcome
    operator_target: str = ""
    operator_version: str = ""
    cluster_provider: str = ""
    k8s_version: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    finalize_retries: dict[str, int] = field(default_factory=dict)
    agent_migration_retries: int = 0
    audit_counts: dict[str, float] = field(default_factory=dict)
    operator_writes: dict[str, int] = field(default_factory=dict)
    """The operator's writes by verb and how many were ``refused`` (4xx/5xx): from the
    interposer's record, else the audit log's (empty when neither was there)."""
    churned_pods: int = 0
    """Pool pods marked for deletion before they ever served (observe/churn.py)."""
    detection_latency: dict[str, float] = field(default_factory=dict)
    monitor_cpu: float = 0.0
    """CPU seconds the invariant monitor spent judging the run as it went (and settling)."""
    check_options: dict[str, float] = field(default_factory=dict)
    bugs: list[str] = field(default_factory=list)
    duration: float = 0.0
    seed: int | None = None
    message: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)
    phase: str = ""
    """The mo-chaos phase an error happened in (empty unless the outcome is ``error``)."""
    usage_error: bool = False
    """An ``error`` that is the user's input's (a bad option, a misused scenario API): the
    run exits with the usage status (mochaos.exits), not the infrastructure one."""
    phases: list[dict[str, Any]] = field(default_factory=list)
    """The test's phases in order: name, seconds, ok."""
    findings: list[str] = field(default_factory=list)
    """What mo-chaos had to clean up itself (e.g. finalizers released at teardown)."""

    @property
    def max_finalize_retries(self) -> int:
        """The largest finalize attempt count of any claim (0 when none)."""
        return max(self.finalize_retries.values(), default=0)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (verdicts flattened)."""
        data = asdict(self)
        data["max_finalize_retries"] = self.max_finalize_retries
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScenarioResult:
        """Inverse of :meth:`to_dict`."""
        data = {k: v for k, v in data.items() if k != "max_finalize_retries"}
        verdicts = []
        for v in data.pop("verdicts", []):
            viol = v.get("violation")
            verdicts.append(
                Verdict(
                    invariant=v["invariant"],
                    status=v["status"],
                    bugs=tuple(v.get("bugs", ())),
                    severity=v.get("severity", "error"),
                    note=v.get("note", ""),
                    violation=Violation(
                        t=viol["t"],
                        seq=viol["seq"],
                        objects=tuple(viol["objects"]),
                        message=viol["message"],
                    )
                    if viol
                    else None,
                )
            )
        return cls(verdicts=verdicts, **data)
