"""Controller building blocks shared by the reference operator model and the environment
doubles (``mochaos.doubles``). Nothing here imports anything else of mo-chaos, so the model
stays free of the framework while the doubles reuse the same queue semantics.
"""
