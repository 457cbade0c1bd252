"""One-off studies, each recording a past decision (docs/measurements.md names which); run as
`python -m benchmarks.studies.<name>`, outside `make bench`."""
