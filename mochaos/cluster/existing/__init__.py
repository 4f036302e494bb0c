"""The ``existing`` provider: a cluster someone else runs, named by an allowed kubeconfig
context (:class:`~mochaos.cluster.existing.existing_provider.ExistingProvider`)."""
