"""The operator targets, one module each, named in :data:`mochaos.operator.REGISTRY`.

``model`` (the reference model), ``source`` and ``binary`` (a real manager run as a process
on the local cluster), ``container`` (``image:`` on the local cluster, run with Docker),
``chart`` (``image:`` and ``source:`` on kind or an existing cluster, installed with the
operator's chart), ``installed`` (an operator already in the cluster); ``local_manager`` and
``in_cluster`` hold what the local-manager and the in-cluster targets share.
"""
