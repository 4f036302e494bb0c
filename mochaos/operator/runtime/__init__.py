"""How an operator runs: as a local process (``process``) or a Docker container
(``operator_container``) launched with its configuration (``manager_launch``) and its own
``/etc/hosts`` (``private_hosts``); as a Deployment in the cluster (``in_cluster_operator``,
its log followed by ``pod_log``, frozen by ``pod_freezer``); and test namespaces made ready
ahead for real managers (``warm``)."""
