"""GPU producers, one module per traced lesson (``kernels/<stem>.cu`` -> ``record/<stem>.py``):
poison the record buffers, launch the traced build, read back, check against float64 -> Trace.
Each module's ``trace(...)`` takes the same inputs as ``gpu_viz.model.<stem>.trace``."""
