"""Shared core of the project: typed stage configs, the `albert` CLI, logging, file I/O,
tokenization.

Importing it sets nothing, except in the `albert` command itself, whose signal handlers it installs
first (`albert.signals`). Each command's entry point sets up logging (`albert.log.setup_logging`,
which also keeps TensorFlow's C++ logs quiet) before anything imports TensorFlow.
"""

from albert.signals import install_for_command

# the `albert` command (its subcommands train): SIGTERM/SIGINT handled before anything else imports
install_for_command("albert.cli", script="albert", prog="albert")
