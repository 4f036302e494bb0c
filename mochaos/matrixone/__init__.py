"""The real MatrixOne a real operator needs on kind: topology, storage, sessions, waits.

``topology`` renders and applies each test namespace's LogSet, DNSet and the
scenario pool's template; ``minio`` provides the S3 storage; ``sessions`` holds
real SQL sessions on a CN; ``waits`` holds every duration the path waits for;
``version`` turns an image tag into the semantic version the webhooks need.
"""
