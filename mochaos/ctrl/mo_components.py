"""MatrixOne's components the operator dials, as a fault names them, and how one is down.

The operator reaches a test namespace's MatrixOne over morpc at three kinds of address
(matrixone-operator 2301e3b): the log service, for HAKeeper (``mocli/manager.go:141-168``),
the TN's lock service (``mocli/lockservice_client.go``) and each CN's query service
(``querycli/query.go``). A scenario's fault makes one of them unreachable and brings it back;
the MatrixOne double (``go/matrixone-double/faults.go``) and the model's own MatrixOne
(:mod:`mochaos.model.matrixone_faults`) both take these names.
"""

from __future__ import annotations

HAKEEPER = "hakeeper"
"""The log service as the operator reaches it (HAKeeper keeps running behind it)."""
LOCK_SERVICE = "lockservice"
"""The TN's lock service."""
QUERY = "query"
"""A CN's query service: the component is ``query/<pod>`` (:func:`query_of`)."""

REFUSE = "refuse"
"""Down as a process that is gone: a connection is refused at once, calls fail fast."""
HANG = "hang"
"""Down as a process that is frozen, or a partition: nothing answers, every call runs into
the operator's own timeout (:data:`RPC_TIMEOUT`)."""
HOWS = (REFUSE, HANG)

RPC_TIMEOUT = 10.0
"""The operator's timeout of one call to MatrixOne, seconds (``mocli.DefaultRPCTimeout``,
``mocli/manager.go:34``; the query client's, ``querycli/query.go``)."""
DISCOVERY_TIMEOUT = 1.0
"""How long the operator's HAKeeper client waits for HAKeeper's discovery (``GET_SHARD_INFO``
on the LogSet's address) when it holds no connection — after one was cut, every call
starts with it — seconds (matrixone ``pkg/logservice/shardinfo.go:49`` at fa8af5c4dad4,
``hakeeper_client.go`` ``prepareClient``): against a hanging HAKeeper each call fails
after it with "context deadline exceeded", not after :data:`RPC_TIMEOUT`."""


def query_of(pod: str) -> str:
    """The component of ``pod``'s CN query service: ``query/<pod>``."""
    return f"{QUERY}/{pod}"
