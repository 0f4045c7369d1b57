"""One identity check (`identity.build_differences`) for `ruler build` (before it starts and
while it publishes) and `ruler merge`: a folder's recorded build of a config is the same build,
or the differences are named, and a build recorded without identity (an older ruler's) is
never taken for the same one."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest

from helpers.builds import build
from ruler.builder.identity import build_differences
from ruler.builder.manifest import Manifest
from ruler.commands.main import main
from ruler.kernel.errors import RulerError

pytestmark = [pytest.mark.build]

OLD = "no identity recorded (a manifest of an older ruler)"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("built")
    build(out, "gpt-4", ["qa_1"], [1024], 2, workers=1)
    return out


def _strip_identity(out):
    """Make OUT's gpt-4 build look like one of an older ruler (no identity recorded)."""
    data = json.loads((out / "manifest.json").read_text())
    del data["builds"]["gpt-4"]["identity"]
    (out / "manifest.json").write_text(json.dumps(data))


def test_build_differences(built):
    entry = Manifest.load(built).build("gpt-4")
    identity, sources = entry.identity, entry.source_hashes
    assert build_differences(None, identity, sources) == []
    assert build_differences(entry, identity, sources) == []
    assert build_differences(entry, replace(identity, seed=7), sources) == ["seed 42 -> 7"]
    other = {**sources, "squad": "ab" * 32}
    assert build_differences(entry, identity, other) == [
        f"source squad sha256 {sources['squad'][:12]} -> {'ab' * 6}"]
    assert build_differences(entry, identity, {}) == []  # a source only one build reads
    assert build_differences(replace(entry, identity=None), identity, sources) == [OLD]


def test_build_and_merge_refuse_a_build_of_an_older_ruler(built, tmp_path, capsys):
    old = tmp_path / "old"
    shutil.copytree(built, old)
    _strip_identity(old)
    with pytest.raises(RulerError, match=r"built with another identity \(no identity recorded"):
        build(old, "gpt-4", ["qa_1"], [1024], 2, workers=1)
    assert main(["merge", str(built), "--out", str(old)]) == 2
    assert f"is another build than in {old} ({OLD})" in capsys.readouterr().err


def test_a_build_of_an_older_ruler_recorded_meanwhile_stops_the_build(tmp_path, monkeypatch):
    """The publisher's check is the same one: a config that an older ruler recorded (no
    identity) while this build ran is not adopted as this build's."""
    from ruler.builder.pipeline.worker import Worker

    out = tmp_path / "out"
    real = Worker.make_row
    state = {"done": False}

    def older_build_meanwhile(self, task, L, index):
        if not state["done"]:
            state["done"] = True
            monkeypatch.setattr(Worker, "make_row", real)
            build(out, "gpt-4", ["vt"], [1024], 2, workers=1, seed=5)
            _strip_identity(out)
            monkeypatch.setattr(Worker, "make_row", older_build_meanwhile)
        return real(self, task, L, index)

    monkeypatch.setattr(Worker, "make_row", older_build_meanwhile)
    with pytest.raises(RulerError, match=r"another build recorded config 'gpt-4'.*no identity"):
        build(out, "gpt-4", ["niah_single_1"], [1024], 2, workers=1)
    assert list(Manifest.load(out).files) == ["data/gpt-4/vt/1024.parquet"]
    assert Manifest.load(out).build("gpt-4").seed == 5
