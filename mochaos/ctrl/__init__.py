"""Controller building blocks of the reference operator model (client-go's work-queue
semantics, plain-dict object helpers). Nothing here imports anything else of mo-chaos, so
the model stays free of the framework.
"""
