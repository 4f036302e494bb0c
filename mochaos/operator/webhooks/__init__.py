"""The operator's admission webhooks served on the local cluster: what they are and how the
cluster is told of them (``admission``), and the one shared manager that serves them for
every pytest process using the cluster (``host``: its life under one lock)."""
