"""Images mo-chaos builds itself when no registry can give them: MatrixOne, MinIO.

``matrixone`` builds ``matrixorigin/matrixone:<version>`` from that version's Go module,
``minio`` an S3 server from MinIO's; both are docker-loadable archives (``archive``) on a
cached Debian base (``debian``) or on nothing, cached by recipe (``recipe``).
"""
