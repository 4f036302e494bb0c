"""Teardown's calls to the apiserver outlast a slow or briefly absent apiserver."""

from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException
from tenacity import stop_after_attempt, wait_none
from urllib3.exceptions import ReadTimeoutError

from mochaos import namespaces
from mochaos.errors import InfraError

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
