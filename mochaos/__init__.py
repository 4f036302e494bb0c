"""mo-chaos: chaos and end-to-end tests for the MatrixOne operator's claim controllers."""

__version__ = "0.1.0"
