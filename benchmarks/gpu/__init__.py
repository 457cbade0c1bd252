"""The accelerator kit and its checks: `check.py` (the acceptance command, `python
benchmarks/gpu/check.py` or `python -m benchmarks.gpu.check`), its runs (`check_runs`), its kit
(`kit`, `wheelhouse`), its report (`report`), the real trainer measured (`trainer`), the synthetic
step (`train`) and the per-op profile (`op_profile`). Its modules import one another as
`benchmarks.gpu.*`."""
