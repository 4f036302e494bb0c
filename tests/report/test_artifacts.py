"""Artifacts of a test: history always, evidence on failure, timeline files."""

import json

import yaml

from mochaos.observe.history import History
from mochaos.report.artifacts import write_artifacts, write_timeline

from support.builders import SEED_NAMESPACE, HistoryBuilder

OTHER = f"{SEED_NAMESPACE}-2"  # shares a prefix: must not leak into the slices


def _items(path):
    text = path.read_text()
    doc = yaml.safe_load(text)
    return text, {(o["kind"], o["metadata"]["name"]): o for o in doc["items"]}


def test_a_passed_test_keeps_only_its_streamed_history_untouched(
    tmp_path, seed_history, seed_result
):
    streamed = tmp_path / "history.jsonl"
    seed_history.to_jsonl(streamed)  # as the recorder's stream left it
    before = streamed.read_bytes()
    written = write_artifacts(
        tmp_path,
        seed_history,
        seed_result.verdicts,
        operator_log=None,
        audit_log=None,
        namespace=SEED_NAMESPACE,
        failed=False,
    )
    assert written == {"history": str(streamed)}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.jsonl"]
    assert streamed.read_bytes() == before, "the end-of-test writer rewrote the stream's file"
    assert list(History.from_jsonl(streamed)) == list(seed_history)


def test_without_a_streamed_history_none_is_listed_or_written(tmp_path, seed_history, seed_result):
    written = write_artifacts(
        tmp_path, seed_history, seed_result.verdicts, operator_log=None, audit_log=None,
        namespace=SEED_NAMESPACE, failed=False,
    )  # fmt: skip
    assert written == {}
    assert list(tmp_path.iterdir()) == []


def test_a_failed_test_keeps_objects_at_the_first_violation_and_at_the_end(
    tmp_path, seed_history, seed_result
):
    seed_history.to_jsonl(tmp_path / "history.jsonl")
    written = write_artifacts(
        tmp_path,
        seed_history,
        seed_result.verdicts,
        operator_log=tmp_path / "missing.log",
        audit_log=None,
        namespace=SEED_NAMESPACE,
        failed=True,
    )
    assert set(written) == {"history", "objects_at_violation", "objects_at_end", "events"}
    # first violation: single-binding at +5.1 s, when B was relabelled for X
    text, at_violation = _items(tmp_path / "objects-at-violation.yaml")
    assert "first violation: single-binding" in text.splitlines()[1]
    pod_b = at_violation[("Pod", "B")]["metadata"]
    assert pod_b["labels"]["pool.matrixorigin.io/claimed-by"] == "X"
    assert "managedFields" not in pod_b
    assert "deletionTimestamp" not in at_violation[("CNClaim", "X")]["metadata"]
    assert at_violation[("CNClaimSet", "S1")]["spec"]["replicas"] == 2
    assert ("Event", "X.synced") not in at_violation
    _, at_end = _items(tmp_path / "objects-at-end.yaml")
    assert "deletionTimestamp" in at_end[("CNClaim", "X")]["metadata"]
    assert at_end[("CNClaimSet", "S1")]["spec"]["replicas"] == 1
    events = yaml.safe_load((tmp_path / "events.yaml").read_text())["items"]
    assert [e["metadata"]["name"] for e in events] == ["X.synced", "Y.synced", "Z.synced"]


def test_events_and_log_slices_keep_only_the_tests_namespace(tmp_path):
    b = HistoryBuilder.recorded()
    b.running_pod("A", node="n1")
    b.created_claim("X", claimset="S1")
    b.event("X.1", claim="X", reason="FinalizeFail", message="boom", type_="Warning")
    b.event("X.1", claim="X", reason="FinalizeFail", message="boom again", type_="Warning")
    b.namespace = OTHER
    b.event("elsewhere", claim="Q", reason="ReconcileSuccess", message="object is synced")
    operator_log = tmp_path / "operator.in.log"
    operator_log.write_text(
        "\n".join(
            [
                json.dumps({"msg": "finalize CNClaim", "namespace": SEED_NAMESPACE, "name": "X"}),
                json.dumps({"msg": "finalize CNClaim", "namespace": OTHER, "name": "X"}),
                json.dumps({"msg": "starting manager"}),
                json.dumps({"msg": "reconcile", "request": f"{SEED_NAMESPACE}/X"}),
                f"I1129 plain text line about {SEED_NAMESPACE}/X",
                f"I1129 plain text line about {OTHER}/X",
            ]
        )
        + "\n"
    )
    audit_log = tmp_path / "audit.in.log"

    def audit(ns, uri):
        ref = {"resource": "cnclaims", "namespace": ns} if ns else {"resource": "nodes"}
        return json.dumps({"kind": "Event", "objectRef": ref, "requestURI": uri})

    audit_log.write_text(
        "\n".join(
            [
                audit(SEED_NAMESPACE, f"/apis/x/v1/namespaces/{SEED_NAMESPACE}/cnclaims/X"),
                audit(OTHER, f"/apis/x/v1/namespaces/{OTHER}/cnclaims/X"),
                audit(None, "/api/v1/nodes"),
                audit(None, f"/api/v1/namespaces/{SEED_NAMESPACE}/pods?watch=1"),
                "not json",
            ]
        )
        + "\n"
    )
    written = write_artifacts(
        tmp_path,
        b.history(),
        [],
        operator_log=operator_log,
        audit_log=audit_log,
        namespace=SEED_NAMESPACE,
        failed=True,
    )
    assert "objects_at_violation" not in written  # failed without a recorded violation
    events = yaml.safe_load((tmp_path / "events.yaml").read_text())["items"]
    assert [(e["metadata"]["name"], e["message"]) for e in events] == [("X.1", "boom again")]
    kept = (tmp_path / "operator.log").read_text().splitlines()
    finalize = {"msg": "finalize CNClaim", "namespace": SEED_NAMESPACE, "name": "X"}
    assert kept[0] == json.dumps(finalize)
    assert kept[1:] == [
        json.dumps({"msg": "reconcile", "request": f"{SEED_NAMESPACE}/X"}),
        f"I1129 plain text line about {SEED_NAMESPACE}/X",
    ]
    uris = [json.loads(line)["requestURI"] for line in (tmp_path / "audit.jsonl").open()]
    assert uris == [
        f"/apis/x/v1/namespaces/{SEED_NAMESPACE}/cnclaims/X",
        f"/api/v1/namespaces/{SEED_NAMESPACE}/pods?watch=1",
    ]
    assert written["operator_log"] == str(tmp_path / "operator.log")
    assert written["audit_log"] == str(tmp_path / "audit.jsonl")


def test_write_timeline_writes_markdown_and_html(tmp_path, seed_history, seed_result):
    written = write_timeline(
        tmp_path / "t", seed_history, seed_result.verdicts, title="seed", meta={"a": "b"}
    )
    assert written == {
        "timeline_md": str(tmp_path / "t" / "timeline.md"),
        "timeline_html": str(tmp_path / "t" / "timeline.html"),
    }
    assert (tmp_path / "t" / "timeline.md").read_text().startswith("# seed\n")
    assert "data-lanes=" in (tmp_path / "t" / "timeline.html").read_text()
