"""`ruler release --dry-run` says what it verifies while it does (issue 40.25: ~40 s of silence
on the README's build): a line per stage (tokenizers, files, loading) before the plan, and a bar
over the files on stderr unless --no-progress."""

from __future__ import annotations

import pytest

from ruler.commands.main import main


@pytest.mark.build
def test_a_dry_run_says_what_it_verifies_before_the_plan(built_gpt4_niah_single, capsys):
    data = built_gpt4_niah_single  # gpt-4: niah_single_1 x 1024 x 2 samples (read only)
    assert main(["release", str(data), "--repo", "org/ruler", "--dry-run", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    plan = next(i for i, line in enumerate(lines) if line.startswith("release plan: "))
    assert lines[:plan] == [
        f"verifying {data} first (as `ruler verify --regenerate 2` does):",
        "  loading the tokenizers of 1 config(s)",
        "  checking 1 file(s): hashes, schema, counts, up to 3 row(s) of each re-tokenized, up "
        "to 2 row(s) of each rebuilt from the build's identity",
        "  loading every config and split with datasets.load_dataset"]
    assert "ruler release: verify" not in err  # --no-progress: no bar
    assert main(["release", str(data), "--repo", "org/ruler", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "  checking 1 file(s)" in out and "ruler release: verify" in err
