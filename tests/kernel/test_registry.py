"""The one registry mechanism (`ruler.kernel.registry.Registry`): lazy addresses imported on
first use, entry point groups read once, registrars, duplicates and unknown names refused in
one line, one load under concurrent first use. Real modules and real installed entry points
(a dist-info folder on sys.path), no mocks."""

from __future__ import annotations

import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ruler.kernel import registry as registry_module
from ruler.kernel.errors import RulerError
from ruler.kernel.registry import DuplicateName, Registry, UnknownName, load_target


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
        "from ruler.kernel import registry\nfrom test_registry import Thing\n"
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
        "from ruler.kernel import registry\nfrom test_registry import Thing\n"
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
        # the entry point's and those its registrar registered are the plug-in's (issue 40.27)
        assert things.builtin_names() == ("builtin",)
        assert all(things.from_plugin(n) for n in ("plugged", "first", "second"))
        with pytest.raises(RulerError, match=r"thing 'misnamed' .* is named 'other': the "
                                             r"names must agree"):
            _things("toy.misnamed")["misnamed"]
    finally:
        del registry_module.REGISTRY_UNDER_TEST


def test_a_plugin_cannot_take_a_builtin_name(installed, modules, capsys):
    """The built-in keeps its name; the plug-in's entry is left out with one warning line
    (issue 40.14: a clash was a DuplicateName that broke every command, `--help` too)."""
    (modules / "toy_reg_clash.py").write_text(
        "from test_registry import Thing\nCLASH = Thing('builtin', 9)\n")
    installed("toy-reg-clash", {"toy.clash": {"builtin": "toy_reg_clash:CLASH"}})
    things = _things("toy.clash")
    things.register(Thing("builtin"))
    assert things.names() == ("builtin",) and things["builtin"] == Thing("builtin")
    warned = capsys.readouterr().err.splitlines()
    assert len(warned) == 1 and re.fullmatch(
        r"ruler: warning: plug-in toy-reg-clash \(entry point builtin in group toy.clash\) "
        r"offers thing 'builtin', which is registered already \(by module test_registry\): "
        r"rename it in the plug-in; the plug-in's is not used", warned[0])
    assert things.names() == ("builtin",) and capsys.readouterr().err == ""  # said once


# --- a broken plug-in is left out, warned of once; the rest works (issue 40.14) -----------------

def test_a_plugin_that_fails_to_load_is_left_out_with_one_warning(installed, modules, capsys):
    (modules / "toy_reg_broken_dep.py").write_text("import toy_reg_no_such_engine\n")
    (modules / "toy_reg_exits.py").write_text("import sys\nsys.exit(3)\n")
    (modules / "toy_reg_raises.py").write_text(
        "def register():\n    raise RuntimeError('line one\\nline two')\n")
    (modules / "toy_reg_fine.py").write_text(
        "from test_registry import Thing\nFINE = Thing('fine', 1)\nNUMBER = 42\n")
    installed("toy-reg-broken", {"toy.broken": {
        "needs-engine": "toy_reg_broken_dep:THING", "exits": "toy_reg_exits:THING",
        "raises": "toy_reg_raises:register", "fine": "toy_reg_fine:FINE",
        "number": "toy_reg_fine:NUMBER"}})
    things = _things("toy.broken")
    things.register(Thing("builtin"))
    assert things.names() == ("builtin", "fine")  # no SystemExit, no traceback
    warned = capsys.readouterr().err.splitlines()
    assert len(warned) == 4 and all(w.startswith("ruler: warning: thing '") for w in warned)
    assert all("plug-in toy-reg-broken (entry point" in w and w.endswith("; left out")
               for w in warned)
    by_name = {w.split("'")[1]: w for w in warned}
    assert "ModuleNotFoundError: No module named 'toy_reg_no_such_engine'" in \
        by_name["needs-engine"]
    assert "failed to load: it called sys.exit(3)" in by_name["exits"]
    assert "failed to load: RuntimeError: line one line two" in by_name["raises"]
    assert "is int 42, not a thing" in by_name["number"]
    # asked for, each is one line saying why; the others are there
    for name in ("needs-engine", "exits", "raises", "number"):
        with pytest.raises(RulerError) as e:
            things[name]
        assert str(e.value).startswith(f"thing {name!r} is not available: ") and \
            "\n" not in str(e.value)
    assert things["fine"] == Thing("fine", 1) and "exits" not in things
    with pytest.raises(UnknownName, match="unknown thing 'other'; choose one of builtin, fine; "
                                          "4 plug-in entries were left out"):
        things["other"]
    assert capsys.readouterr().err == ""  # each said once


def test_a_broken_plugin_asked_for_first_is_one_line(installed, modules, capsys):
    (modules / "toy_reg_first.py").write_text("raise ImportError('no engine here')\n")
    installed("toy-reg-first", {"toy.first": {"first": "toy_reg_first:THING"}})
    things = _things("toy.first")
    with pytest.raises(RulerError, match=r"^thing 'first' \(toy_reg_first:THING, plug-in "
                                         r"toy-reg-first \(entry point first in group "
                                         r"toy.first\)\) failed to load: ImportError: no "
                                         r"engine here$"):
        things["first"]
    assert things.names() == () and "first" in things.left_out()


def test_two_plugins_offering_one_name_are_both_left_out(installed, modules, capsys):
    (modules / "toy_reg_twice.py").write_text(
        "from test_registry import Thing\nA = Thing('twice', 1)\nB = Thing('twice', 2)\n")
    # (underscores: importlib.metadata takes a dist-info folder's name up to its first `-`)
    installed("toy_reg_twice_a", {"toy.twice": {"twice": "toy_reg_twice:A"}})
    installed("toy_reg_twice_b", {"toy.twice": {"twice": "toy_reg_twice:B"}})
    things = _things("toy.twice")
    things.register(Thing("builtin"))
    assert things.names() == ("builtin",)
    warned = capsys.readouterr().err.splitlines()
    assert warned == ["ruler: warning: two installed plug-ins offer 'twice' in entry point group "
                      "toy.twice: toy_reg_twice:A (toy_reg_twice_a) and toy_reg_twice:B "
                      "(toy_reg_twice_b); neither is used: uninstall one"]
    with pytest.raises(RulerError, match="thing 'twice' is not available: two installed"):
        things["twice"]


def test_concurrent_first_use_loads_once(installed, modules):
    """Eight threads ask for a plug-in's entry at once: its registrar runs once, all get the
    same object."""
    (modules / "toy_reg_slow.py").write_text(
        "import time\nfrom ruler.kernel import registry\nfrom test_registry import Thing\n"
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
    assert load_target("ruler.kernel.registry:Registry.register") is Registry.register
    assert load_target("ruler.kernel.registry") is registry_module
    assert Path(load_target("ruler.kernel.registry:__file__")).name == "registry.py"
