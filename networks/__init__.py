"""Networks: whole workloads above the tuner.

Workload suites (``networks/suites/*.yaml``) and ONNX networks are lowered layer by
layer through the core (``toolkit``) and, when asked, tuned through ``tuner``. This
floor never imports the public face (``toolkit/__init__.py``, ``toolkit.api``, the CLI).
"""
