"""User-facing errors.

Everything a user can cause (a bad file, a bad option, a budget that cannot be met) is raised as a subclass of
:class:`UserError`. The CLI prints the message on one line and exits non-zero; anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """Base class for errors caused by user input. The message says what is wrong and how to fix it."""

    exit_code: int = 2


class InputFormatError(UserError):
    """An input file is missing, of an unknown format, or malformed (the message names the file and line)."""


class GraphValidationError(UserError):
    """Data does not form a valid graph (empty graph, ids out of range, NaN features, mismatched labels...)."""


class OptionError(UserError):
    """A command-line option or library argument has an invalid value (the message names the option)."""


class BudgetError(UserError):
    """A privacy budget cannot be met, or a step would exceed the remaining budget."""

    exit_code: int = 3


class ReleaseError(UserError):
    """A release directory cannot be written (exists without --force) or does not verify."""

    exit_code: int = 4


class UncertifiedError(UserError):
    """A run would produce a release with ``guarantee: none`` and ``--allow-uncertified`` was not given."""

    exit_code: int = 5


class NodeSetError(UserError):
    """The node set would be called public although nobody declared it (it was read off the private edges)."""


class ReleaseWarning(UserWarning):
    """An allowed but risky choice (the CLI prints it as one 'warning:' line)."""
