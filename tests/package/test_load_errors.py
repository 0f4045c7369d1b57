"""`ruler.load` of a config, task or split (length) the dataset does not have is one RulerError
line naming what there is (issue 40.25: the raw `datasets` ValueError, where the docs promise a
RulerError), for a build folder and for a Hub dataset."""

from __future__ import annotations

import pytest

import ruler
from ruler.kernel.errors import RulerError

CONFIG = "gpt-4"


@pytest.mark.build
def test_a_missing_split_config_or_task_of_a_build_folder_is_one_line(built_gpt4_niah_single):
    data = built_gpt4_niah_single  # gpt-4: niah_single_1 x 1024 x 2 samples (read only)
    cases = {
        (None, 8192, None): f"{data}: config 'gpt-4' has no split '8192' (a split is a length); "
                            f"its splits: 1024",
        (CONFIG, "4k", None): f"{data}: config 'gpt-4' has no split '4k' (a split is a "
                              f"length); its splits: 1024",
        ("llama-3.1", 1024, None): f"{data} has no config 'llama-3.1'; its configs: gpt-4",
        (CONFIG, 1024, "vt"): f"{data}: config 'gpt-4' has no task 'vt'; its tasks: "
                              f"niah_single_1",
        (CONFIG, 2048, "niah_single_1"): f"{data}: config 'gpt-4' task 'niah_single_1' has no "
                                         f"split '2048' (a split is a length); its splits: 1024",
    }
    for (config, length, task), message in cases.items():
        with pytest.raises(RulerError) as e:
            ruler.load(data, config, length, task=task)
        assert str(e.value) == message
    assert len(ruler.load(data, CONFIG, 1024, task="niah_single_1")) == 2


@pytest.mark.build
@pytest.mark.network
def test_a_missing_split_of_a_hub_dataset_is_one_line(built_gpt4_niah_single, tmp_path,
                                                        monkeypatch):
    from helpers.fake_hub import hub_for_this_process
    from ruler.release import release

    repo = "ruler-org/load-errors"
    with hub_for_this_process(tmp_path, "hf_loopbackSecretToken123", monkeypatch):
        release(built_gpt4_niah_single, repo, tag="v1", allow_unofficial=True,
                echo=lambda *a: None)
        with pytest.raises(RulerError) as e:
            ruler.load(repo, CONFIG, 8192, revision="v1")
        assert str(e.value) == (f"{repo}: cannot load config 'gpt-4', split '8192' (a split is "
                                f"a length): Unknown split \"8192\". Should be one of ['1024'].")
        with pytest.raises(RulerError) as e:
            ruler.load(repo, "llama-3.1", 1024, revision="v1")
        assert str(e.value).startswith(f"{repo}: cannot load config 'llama-3.1', split '1024' "
                                       f"(a split is a length): ")
        assert "gpt-4" in str(e.value) and "\n" not in str(e.value)
        assert len(ruler.load(repo, CONFIG, 1024, revision="v1")) == 2
