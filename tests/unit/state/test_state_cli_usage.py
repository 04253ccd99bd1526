"""``state export`` and ``plan`` refuse bad usage in one line before connecting anywhere (port 1: nothing
listens), with exit 2, or 1 under ``--detailed-exitcode`` (Terraform's contract)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksteward.cli.main import main

NOWHERE = ["--bootstrap-server", "127.0.0.1:1"]


def test_export_writes_yaml_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["state", "export", *NOWHERE, "--output", "json"]) == 2
    assert capsys.readouterr().err == (
        "ksteward state export: state export writes the state file (YAML); --output json is not available here\n"
    )


def test_plan_of_a_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "bad.yaml"
    file.write_text("acls: {'User:a': ['ALLOW READ TOPIC:LITERAL:']}\n")
    assert main(["plan", str(file), *NOWHERE]) == 2
    assert capsys.readouterr().err == (
        f"ksteward plan: {file}: acls.User:a: 'ALLOW READ TOPIC:LITERAL:': empty resource name\n"
    )
    assert main(["plan", str(file), *NOWHERE, "--detailed-exitcode"]) == 1
    assert main(["plan", str(tmp_path / "missing.yaml"), *NOWHERE]) == 2
    assert "cannot read" in capsys.readouterr().err
