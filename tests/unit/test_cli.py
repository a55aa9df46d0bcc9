"""The `ade` command line: what every command shares."""

from __future__ import annotations

import pytest

from ade_platform import __version__
from ade_platform.cli import main


def test_version_names_the_installed_distribution(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out == f"ade-platform {__version__}"
    assert __version__[0].isdigit() and __version__ != "0+unknown"
