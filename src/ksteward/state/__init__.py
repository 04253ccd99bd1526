"""Desired state as a file: the sans-IO model, parser, ownership, diff and rendering behind
``ksteward state export``, ``ksteward plan`` and ``ksteward apply`` (docs/state-files.md).

Layers, top to bottom: ``ksteward.cli.state`` / ``ksteward.cli.plan`` / ``ksteward.cli.apply`` talk to a
cluster and print; this package never opens a socket. ``model`` holds the data classes every layer shares
(:class:`~ksteward.state.model.DesiredState`, :class:`~ksteward.state.model.Resources`,
:class:`~ksteward.state.model.Ownership`, :class:`~ksteward.state.model.Plan`).
"""
