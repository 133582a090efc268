"""The TFLite reference harness, one module per job; ``tests/python/tflite_reference.py`` is the
facade the tests import (it re-exports the public names and holds the MediaPipe model paths).

Imports go one way: schema <- flatbuf <- queries <- rewrite <- {numpy_ref, build} <- quantize, with
armnn (pyarmnn, imported when a model runs) used by quantize and the facade only.
"""
