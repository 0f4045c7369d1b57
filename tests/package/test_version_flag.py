"""`ruler --version` (issue 40.25): the package's version, which every manifest records as the
generator's, and the installed versions of the packages that shape the rows and the files."""

from __future__ import annotations

import pytest

import ruler
from ruler.builder.packages import CONTENT_PACKAGES, FILE_PACKAGES, installed_versions
from ruler.commands.main import main


def test_version_prints_the_package_and_the_row_shaping_versions(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert out.err == "" and lines[0] == f"ruler {ruler.__version__}"
    content = installed_versions(p for kind in CONTENT_PACKAGES.values() for p in kind)
    assert lines[1] == "rows shaped by: " + ", ".join(f"{d} {v}" for d, v in content.items())
    assert lines[2] == "files written by: " + ", ".join(
        f"{d} {v}" for d, v in installed_versions(FILE_PACKAGES).items())
    assert "numpy" in lines[1] and len(lines) == 3


def test_version_is_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "--version" in capsys.readouterr().out
