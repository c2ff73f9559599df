"""The async face and the blocking face (``cdpnb.sync``) have the same names.

Walks both and fails on any difference: every public method, property, attribute
and module-level name of the async API has its blocking twin, derived from the
async definition itself (so the parameters cannot drift), and the twin of a
coroutine blocks instead of returning an awaitable. mypy checks the blocking
signatures statically (``tests/typing/sync_face.py``).
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import cdpnb
import cdpnb.sync
from cdpnb.blocking import CONTEXT_DUNDERS, Facade, Forward, derive, public_names
from cdpnb.supervisor import SupervisorOptions
from cdpnb.supervisor.registry import Registry as AsyncRegistry

ROOT = Path(__file__).resolve().parent.parent
#: Blocking twins written by hand, and why.
HAND_WRITTEN = {
    "__enter__": "returns the blocking face itself, not a new one",
    "__exit__": "calls the blocking stop()",
    "on": "its handlers run on the supervisor's event thread: this face's calls block "
          "the caller's thread, and with it any loop running there",
    "once": "as on",
}


def _twin(facade: type[Any], name: str) -> Any:
    return inspect.getattr_static(facade, CONTEXT_DUNDERS.get(name, name))


def _source_function(raw: Any) -> Any:
    return raw.__func__ if isinstance(raw, classmethod | staticmethod) else raw


def _check_class(async_class: type[Any], facade: type[Any]) -> list[str]:
    """Differences between ``async_class`` and its blocking ``facade``, in words."""
    problems = []
    for name in public_names(async_class):
        raw = inspect.getattr_static(async_class, name)
        target = CONTEXT_DUNDERS.get(name, name)
        try:
            twin = _twin(facade, name)
        except AttributeError:
            problems.append(f"{name}: missing from the blocking face")
            continue
        if target in HAND_WRITTEN and target in facade.__dict__:
            continue
        source = _source_function(raw)
        if isinstance(raw, property):
            if not isinstance(twin, Forward) or twin.getter is not raw.fget:
                problems.append(f"{name}: a property, but its twin does not read it through")
            continue
        function = _source_function(twin)
        if not callable(source):
            if twin is not raw:
                problems.append(f"{name}: a class attribute that differs")
            continue
        if inspect.iscoroutinefunction(function):
            problems.append(f"{name}: the blocking twin is a coroutine function")
        wrapped = getattr(function, "__wrapped__", None)
        wrapped = getattr(wrapped, "__func__", wrapped)  # a classmethod was bound
        if wrapped is not source:
            problems.append(f"{name}: not derived from the async definition")
        else:
            # a classmethod's twin takes what the bound classmethod takes (no cls)
            expected = getattr(async_class, name) if isinstance(raw, classmethod) else source
            if inspect.signature(function) != inspect.signature(expected):
                problems.append(f"{name}: its signature differs")
    return problems


def test_every_supervisor_name_has_a_blocking_twin() -> None:
    assert _check_class(cdpnb.Supervisor, cdpnb.sync.Supervisor) == []
    names = set(public_names(cdpnb.Supervisor))
    # the names a blocking user found missing are there now
    assert {"wait_for", "annotate", "view", "state", "policy", "alive", "stopped",
            "page_session_id", "bridge_enabled", "unsupported", "start"} <= names


def test_every_registry_name_has_a_blocking_twin() -> None:
    assert _check_class(AsyncRegistry, cdpnb.sync.Registry) == []
    assert {"get", "task_ids", "get_or_start", "stop", "stop_all"} <= set(
        public_names(AsyncRegistry))


def test_start_takes_every_option_the_async_start_takes() -> None:
    blocking = inspect.signature(cdpnb.sync.Supervisor.start).parameters
    asynchronous = inspect.signature(cdpnb.Supervisor.start).parameters
    assert list(blocking) == list(asynchronous)
    assert {"bridge", "bypass_csp", "record", "redact", "record_meta"} <= set(blocking)


def test_instance_attributes_read_through() -> None:
    aio = cdpnb.Supervisor("ws://127.0.0.1:9/devtools/browser/x", SupervisorOptions())
    face = cdpnb.sync.Supervisor.of(aio)
    assert cdpnb.sync.Supervisor.of(aio) is face
    attributes = [n for n in vars(aio) if not n.startswith("_")]
    assert {"hints", "endpoint", "options"} <= set(attributes)
    for name in attributes:
        assert getattr(face, name) is getattr(aio, name), name
    for name, raw in vars(cdpnb.Supervisor).items():
        if isinstance(raw, property):
            assert getattr(face, name) == getattr(aio, name), name


def test_every_module_name_has_a_blocking_twin() -> None:
    exported = set(cdpnb.__all__) - {"sync", "__version__"}
    assert set(cdpnb.sync.__all__) == exported | {"Registry", "ReplayBackend"}
    for name in exported:
        value, twin = getattr(cdpnb, name), getattr(cdpnb.sync, name)
        if inspect.iscoroutinefunction(value):
            assert not inspect.iscoroutinefunction(twin), name
            assert twin.__wrapped__ is value, name
        elif value is cdpnb.PendingAnswer:
            # an answer on its way serves both faces: awaited, or .result() blocks
            assert twin is value and callable(value.result)
        elif inspect.isclass(value) and hasattr(value, "__await__"):
            # launch, replay: awaited in the async face, a call that blocks here
            assert twin.__wrapped__ is value, name
            assert inspect.signature(twin).parameters == inspect.signature(value).parameters
        elif value is cdpnb.Supervisor:
            assert issubclass(twin, Facade) and twin.async_class is value
        elif name == "proxy":
            # a module that opens a proxy when called (as cdpnb.campaign runs one): its
            # opener is awaited in the async face, a call that blocks here
            assert twin.__wrapped__ is value.proxy, name
            assert inspect.signature(twin).parameters == inspect.signature(value).parameters
        elif name == "registry":
            assert isinstance(twin, cdpnb.sync.Registry) and twin.aio is value
        else:
            assert twin is value, f"{name} should be the same object in both faces"


def test_a_name_added_to_the_async_face_is_picked_up_without_an_edit() -> None:
    class Grown(cdpnb.Supervisor):
        async def release(self, target_id: str, *, timeout: float = 1.0) -> str:
            return f"released {target_id}"

        @property
        def pages(self) -> list[str]:
            return ["p1"]

    @derive(Grown)
    class GrownFace(Facade[Grown]):
        pass

    assert _check_class(Grown, GrownFace) == []
    face = GrownFace(Grown("ws://127.0.0.1:9/x", SupervisorOptions()))
    assert face.release("t1") == "released t1"  # type: ignore[attr-defined]
    assert face.pages == ["p1"]  # type: ignore[attr-defined]
    assert str(inspect.signature(face.release)) == "(target_id: 'str', *, timeout: 'float' = 1.0) -> 'str'"  # type: ignore[attr-defined]  # noqa: E501


def test_mypy_sees_the_real_blocking_signatures() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
                           str(ROOT / "tests" / "typing" / "sync_face.py")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    bad = ROOT / "tests" / "typing" / "sync_face_errors.py"
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
                           str(bad)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    expected = [i + 1 for i, line in enumerate(bad.read_text().splitlines())
                if line.rstrip().endswith("# error")]
    assert [int(line.split(":")[1]) for line in errors] == expected, done.stdout


def test_launch_before_start_is_a_clear_error() -> None:
    launcher = cdpnb.launch("chromium")
    with pytest.raises(cdpnb.BackendNotStarted, match="await cdpnb.launch"):
        _ = launcher.cdp_url
    assert "not started" in repr(launcher)
