"""Shared core of the project: typed stage configs, the `albert` CLI, logging, file I/O,
tokenization.

Importing it sets nothing: each command's entry point sets up logging (`albert.log.setup_logging`,
which also keeps TensorFlow's C++ logs quiet) before anything imports TensorFlow.
"""
