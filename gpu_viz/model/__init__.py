"""CPU producers, one module per traced lesson (``model/<stem>.py``): the same Trace as
``gpu_viz.record.<stem>``, computed warp-synchronously in numpy with the kernel's float32
operation order; fields only silicon knows come from a named model and are marked simulated."""
