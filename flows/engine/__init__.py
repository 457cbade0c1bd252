"""What every flow runs on: stages as cached, retried Prefect tasks, result storage, Prefect
settings and the flows' `python -m` entry."""
