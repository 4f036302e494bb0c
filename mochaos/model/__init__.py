"""The reference operator model: the claim protocol of matrixone-operator, re-stated in Python.

It runs against a real apiserver like a controller (informers, work queues, optimistic
concurrency, finalizers) so mo-chaos can prove its checks catch each bug where no operator
image can run. It imports nothing of the framework (only the neutral building blocks of
``mochaos.ctrl``): it is the system under test.
"""
