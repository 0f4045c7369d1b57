"""The one registry mechanism (`ruler.builder.registry.Registry`): lazy addresses imported on
first use, entry point groups read once, registrars, duplicates and unknown names refused in
one line, one load under concurrent first use. Real modules and real installed entry points
(a dist-info folder on sys.path), no mocks."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ruler.builder import registry as registry_module
from ruler.builder.errors import RulerError
from ruler.builder.registry import DuplicateName, Registry, UnknownName, load_target


@dataclass(frozen=True)
class Thing:
    name: str
    value: int = 0


def _things(group: str | None = None) -> Registry[Thing]:
    return Registry("thing", group, accepts=lambda obj: isinstance(obj, Thing),
                    name_of=lambda t: t.name)


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """A folder on sys.path to write modules into; they are forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("toy_reg_"):
            del sys.modules[name]


@pytest.fixture
def installed(modules):
    """Install entry points: a dist-info folder on sys.path, read afresh by the registry."""
    def install(dist: str, groups: dict[str, dict[str, str]]) -> None:
        info = modules / f"{dist}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text("".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
            for group, eps in groups.items()))
        registry_module._installed_entry_points.cache_clear()

    yield install
    registry_module._installed_entry_points.cache_clear()


def test_a_lazy_entry_is_imported_on_first_use_only(modules):
    (modules / "toy_reg_lazy.py").write_text(
        "from test_registry import Thing\nTHING = Thing('lazy', 7)\n")
    things = _things()
    things.register_lazy("lazy", "toy_reg_lazy:THING")
    assert "lazy" in things and "toy_reg_lazy" not in sys.modules  # known, not imported
    assert things["lazy"] == Thing("lazy", 7) and "toy_reg_lazy" in sys.modules
    assert things.names() == ("lazy",) and dict(things.items()) == {"lazy": Thing("lazy", 7)}


def test_a_lazy_module_may_register_its_entry_itself(modules):
    """An address without an attribute names a module that registers the entry when imported
    (the way a module calling `register_family` at import keeps working)."""
    things = _things()
    registry_module.REGISTRY_UNDER_TEST = things
    (modules / "toy_reg_self.py").write_text(
        "from ruler.builder import registry\nfrom test_registry import Thing\n"
        "registry.REGISTRY_UNDER_TEST.register(Thing('self', 3))\n")
    try:
        things.register_lazy("self", "toy_reg_self")
        assert things["self"] == Thing("self", 3)
        # imported already: the module's own object may be registered at its address, no
        # other (a module imported for another reason never lets anyone take the name)
        (modules / "toy_reg_done.py").write_text(
            "from test_registry import Thing\nTHING = Thing('done', 4)\n")
        done = load_target("toy_reg_done:THING")
        things.register_lazy("done", "toy_reg_done:THING")
        with pytest.raises(DuplicateName, match="'done' is registered already"):
            things.register(Thing("done", 5))
        assert things.register(done) is done and things["done"] is done
    finally:
        del registry_module.REGISTRY_UNDER_TEST


def test_duplicates_are_refused_and_the_same_entry_again_is_nothing():
    things = _things()
    one = things.register(Thing("a", 1))
    assert things.register(Thing("a", 1)) == one  # equal: registering again does nothing
    with pytest.raises(DuplicateName, match=r"thing 'a' is registered already \(by module "
                                            r"test_registry\)"):
        things.register(Thing("a", 2))
    things.register_lazy("b", "somewhere:B")
    with pytest.raises(DuplicateName, match="'b' is registered already"):
        things.register_lazy("b", "elsewhere:B")
    with pytest.raises(DuplicateName, match="is registered already"):  # not imported: refused
        things.register(Thing("b"))
    with pytest.raises(DuplicateName, match="cannot be registered as 'c'"):
        things.register(Thing("a", 1), name="c")
    with pytest.raises(TypeError, match="is not a thing"):
        things.register("a string")
    assert isinstance(DuplicateName("x"), RulerError) and isinstance(DuplicateName("x"),
                                                                     ValueError)


def test_an_unknown_name_lists_the_known_ones_and_the_closest():
    things = _things()
    for name in ("alpha", "alphabet", "beta"):
        things.register(Thing(name))
    with pytest.raises(UnknownName) as e:
        things["alpah"]
    assert str(e.value) == ("unknown thing 'alpah'; choose one of alpha, alphabet, beta "
                            "(did you mean 'alpha' or 'alphabet'?)")
    with pytest.raises(KeyError):  # a Mapping: get() and `in` work as for a dict
        things["zzz"]
    assert things.get("zzz") is None and "zzz" not in things
    assert str(pytest.raises(UnknownName, things.__getitem__, "zzz").value) == \
        "unknown thing 'zzz'; choose one of alpha, alphabet, beta"


def test_an_entry_that_fails_to_import_is_one_line(modules):
    (modules / "toy_reg_broken.py").write_text("raise ImportError('no engine here')\n")
    things = _things()
    things.register_lazy("broken", "toy_reg_broken:THING")
    with pytest.raises(RulerError, match=r"^thing 'broken' \(toy_reg_broken:THING, ruler\) "
                                         r"failed to load: ImportError: no engine here$"):
        things["broken"]
    things.register_lazy("wrong", "test_registry:_things")  # a function that registers nothing
    with pytest.raises(RulerError, match="is not a thing and did not register one"):
        things["wrong"]


def test_installed_entry_points_extend_the_registry(installed, modules):
    (modules / "toy_reg_plugin.py").write_text(
        "from ruler.builder import registry\nfrom test_registry import Thing\n"
        "PLUGGED = Thing('plugged', 1)\nMISNAMED = Thing('other', 2)\n"
        "def several():\n"
        "    registry.REGISTRY_UNDER_TEST.register(Thing('first', 3))\n"
        "    registry.REGISTRY_UNDER_TEST.register(Thing('second', 4))\n")
    installed("toy-reg-plugin", {
        "toy.things": {"plugged": "toy_reg_plugin:PLUGGED", "several": "toy_reg_plugin:several"},
        "toy.misnamed": {"misnamed": "toy_reg_plugin:MISNAMED"}})
    things = _things("toy.things")
    things.register(Thing("builtin"))
    registry_module.REGISTRY_UNDER_TEST = things
    try:
        assert things["plugged"] == Thing("plugged", 1)  # by its entry point's name, lazily
        assert "several" in things.known_names() and "first" not in things.known_names()
        assert things["first"] == Thing("first", 3)  # a miss runs the registrars
        assert "several" not in things  # a registrar's label is not an entry
        assert things.names() == ("builtin", "plugged", "first", "second")
        with pytest.raises(RulerError, match=r"thing 'misnamed' .* is named 'other': the "
                                             r"names must agree"):
            _things("toy.misnamed")["misnamed"]
    finally:
        del registry_module.REGISTRY_UNDER_TEST


def test_a_plugin_cannot_take_a_builtin_name(installed, modules):
    (modules / "toy_reg_clash.py").write_text(
        "from test_registry import Thing\nCLASH = Thing('builtin')\n")
    installed("toy-reg-clash", {"toy.clash": {"builtin": "toy_reg_clash:CLASH"}})
    things = _things("toy.clash")
    things.register(Thing("builtin"))
    with pytest.raises(DuplicateName, match=r"plug-in toy-reg-clash \(entry point builtin in "
                                            r"group toy.clash\) offers thing 'builtin', which "
                                            r"is registered already \(by module "
                                            r"test_registry\): rename it in the plug-in"):
        things.names()


def test_concurrent_first_use_loads_once(installed, modules):
    """Eight threads ask for a plug-in's entry at once: its registrar runs once, all get the
    same object."""
    (modules / "toy_reg_slow.py").write_text(
        "import time\nfrom ruler.builder import registry\nfrom test_registry import Thing\n"
        "CALLS = []\n"
        "def register():\n"
        "    CALLS.append(1)\n"
        "    time.sleep(0.2)\n"
        "    registry.REGISTRY_UNDER_TEST.register(Thing('slow', 5))\n")
    installed("toy-reg-slow", {"toy.slow": {"slow_label": "toy_reg_slow:register"}})
    things = _things("toy.slow")
    registry_module.REGISTRY_UNDER_TEST = things
    got: list[Thing] = []
    try:
        threads = [threading.Thread(target=lambda: got.append(things["slow"]))
                   for _ in range(8)]
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert time.monotonic() - start < 5
    finally:
        del registry_module.REGISTRY_UNDER_TEST
    assert got == [Thing("slow", 5)] * 8
    assert load_target("toy_reg_slow:CALLS") == [1]


def test_load_target_reads_attribute_paths():
    assert load_target("ruler.builder.registry:Registry.register") is Registry.register
    assert load_target("ruler.builder.registry") is registry_module
    assert Path(load_target("ruler.builder.registry:__file__")).name == "registry.py"
