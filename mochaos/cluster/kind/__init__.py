"""The ``kind`` provider: a real Kubernetes in Docker, for qualifying an operator image.

:class:`~mochaos.cluster.kind.kind_provider.KindProvider` is the provider; beside it
``kind_config`` (the generated Cluster config and pinned node image), ``kind_images``
(images onto the nodes), ``kind_node`` (work inside a node container), ``docker_engine``
(the engine under kind), and the host's workarounds: ``host_facts`` (what this host lacks),
``engine_host`` (a Docker daemon started for kind), ``runtime_shim`` (an OCI runtime that
drops the capabilities the host cannot grant).
"""
