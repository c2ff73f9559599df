"""``cdpnb.views``: every ``view()`` and ``report()`` of the package finds what makes it
through the shelf the layer above fills, and that layer loads only when asked for."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import cdpnb
from cdpnb.views import REPORTS, VIEWS, Shelf

PACKAGE = Path(cdpnb.__file__).resolve().parent
ROOT = PACKAGE.parent
PROBES = ROOT / "datasets" / "probes"
#: The rooms that fill the shelves (they define no view() of their own to look up).
PROVIDERS = {"notebook", "report"}


def _classes_with(method: str) -> list[type]:
    """Every class of the package (outside the providers) that defines ``method``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in PROVIDERS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = ".".join(("cdpnb", *rel.with_suffix("").parts)).removesuffix(".__init__")
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(item, ast.FunctionDef) and item.name == method
                    for item in node.body):
                found.append(getattr(importlib.import_module(module), node.name))
    return found


@pytest.mark.parametrize(("shelf", "method"), [(VIEWS, "view"), (REPORTS, "report")],
                         ids=["view", "report"])
def test_every_class_with_the_method_has_a_factory_on_the_shelf(shelf: Shelf,
                                                                  method: str) -> None:
    classes = _classes_with(method)
    assert classes, f"no class defines {method}()"
    importlib.import_module(shelf.provider)
    missing = [c.__qualname__ for c in classes if shelf.factory_for(c) is None]
    assert missing == [], f"{shelf.provider} registers no {method} for {missing}"


def test_a_class_nothing_shows_is_named_in_the_error() -> None:
    class Unshown:
        pass

    with pytest.raises(TypeError, match=r"cdpnb.notebook registers no view for "
                                        r".*Unshown objects"):
        VIEWS.make(Unshown())


def test_a_subclass_is_shown_by_its_base_class_factory() -> None:
    shelf = Shelf("view", "cdpnb.views")  # a provider that registers nothing

    class Base:
        pass

    class Derived(Base):
        pass

    shelf.register(Base, lambda obj, *args, **kwargs: ("base view", obj, args, kwargs))
    derived = Derived()
    assert shelf.make(derived, 1, wide=True) == ("base view", derived, (1,), {"wide": True})
    assert "Base" in repr(shelf)


def test_view_loads_the_notebook_layer_and_report_the_report_room_on_first_use() -> None:
    code = (
        "import json, sys, cdpnb\n"
        f"trace = cdpnb.Trace.load({str(PROBES / 'bun.native.jsonl.gz')!r})\n"
        "before = sorted(m for m in sys.modules if m.startswith(('cdpnb.notebook', "
        "'cdpnb.report')))\n"
        "view = trace.view()\n"
        "after_view = 'cdpnb.notebook' in sys.modules and 'cdpnb.report' not in sys.modules\n"
        "from cdpnb.probes import ProbeResult\n"
        f"result = ProbeResult.from_json(open({str(PROBES / 'probe.json')!r}).read())\n"
        "html = result.report()\n"
        "print(json.dumps([before, type(view).__name__, after_view, "
        "'cdpnb.report' in sys.modules, html.startswith('<!DOCTYPE html>')]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    before, view_type, after_view, report_loaded, is_html = json.loads(
        proc.stdout.strip().splitlines()[-1])
    assert before == []
    assert (view_type, after_view, report_loaded, is_html) == ("TraceView", True, True, True)
