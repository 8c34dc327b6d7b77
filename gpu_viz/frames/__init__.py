"""Trace -> frames, one module per animated lesson (``frames/<stem>.py``): what each step of an
animation shows, handed to the one renderer in ``gpu_viz.widgets``."""
