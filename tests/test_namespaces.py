"""A test namespace's teardown: its calls outlast a slow or briefly absent apiserver, and the
operator running in it is stopped only once the deletion was asked for, whatever happens."""

from __future__ import annotations

import secrets

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from tenacity import stop_after_attempt, wait_none
from urllib3.exceptions import ReadTimeoutError

from mochaos import namespaces
from mochaos.errors import InfraError, UsageError

QUICK = {**namespaces.APISERVER_RETRY, "wait": wait_none(), "stop": stop_after_attempt(4)}


def _flaky(failures: list[BaseException], answer: str = "ok"):
    calls = []

    def call() -> str:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return answer

    return call, calls


def test_read_timeouts_and_server_errors_are_retried() -> None:
    timeout = ReadTimeoutError(None, "/api", "Read timed out. (read timeout=10)")
    call, calls = _flaky([timeout, ApiException(status=503), ConnectionResetError()])
    assert namespaces._answered(call, "on ns", policy=QUICK) == "ok"
    assert len(calls) == 4


def test_an_apiserver_that_never_answers_is_an_infra_error_and_a_404_is_not_retried() -> None:
    call, _ = _flaky([ReadTimeoutError(None, "/api", "timed out")] * 4)
    with pytest.raises(InfraError, match="did not answer on ns within a minute: ReadTimeoutError"):
        namespaces._answered(call, "on ns", policy=QUICK)
    call, calls = _flaky([ApiException(status=404)])
    with pytest.raises(ApiException):
        namespaces._answered(call, "on ns", policy=QUICK)
    assert len(calls) == 1


def _deleting(core: client.CoreV1Api, name: str) -> bool:
    """True when the namespace is asked to go (or gone already)."""
    try:
        return core.read_namespace(name).metadata.deletion_timestamp is not None
    except ApiException as err:
        return err.status == 404


def test_teardown_stops_the_operator_only_once_the_deletion_was_asked_for(kube) -> None:
    core = client.CoreV1Api(kube)
    name = f"mochaos-ns-teardown-{secrets.token_hex(3)}"
    namespaces.create(kube, name, run_id="teardown-test")
    asked_when_stopped = []
    findings = namespaces.teardown(
        kube, name, stop=lambda: asked_when_stopped.append(_deleting(core, name)), wait=30.0
    )
    assert asked_when_stopped == [True] and findings == []
    assert namespaces.wait_gone(kube, name, timeout=60.0)


def test_teardown_stops_the_operator_even_when_the_namespace_is_not_ours(kube) -> None:
    core = client.CoreV1Api(kube)
    name = f"mochaos-ns-foreign-{secrets.token_hex(3)}"
    core.create_namespace({"metadata": {"name": name}})
    stopped = []
    try:
        with pytest.raises(UsageError, match="mo-chaos did not create it"):
            namespaces.teardown(kube, name, stop=lambda: stopped.append(1), wait=5.0)
        assert stopped == [1] and not _deleting(core, name)
    finally:
        core.delete_namespace(name)
