"""Images mo-chaos builds itself when no registry can give them.

``matrixone`` builds ``matrixorigin/matrixone:<version>`` from that version's Go module,
``minio`` an S3 server from MinIO's; both are docker-loadable archives (``archive``) on a
cached Debian base (``debian``) or on nothing, cached by recipe (``recipe``).
``node_image`` builds kind's node image offline (``rootfs``, ``preloaded``, ``go_tools``),
``operator_images`` the operator's and OpenKruise's managers; ``catalog`` says which
references can be built here and how.
"""
