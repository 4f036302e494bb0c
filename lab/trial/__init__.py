"""A trial of the MatrixOne image outside any cluster: the operator's pods as Docker containers.

``render`` builds the operator's own webhooks and controllers into a renderer (from a
checkout, at test time), ``pods`` turns what they create into pods, ``docker_pods`` runs
those pods as containers on one network, ``run`` puts it together with MinIO and SQL.
"""
