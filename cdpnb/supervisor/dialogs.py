"""Dialog policies, the must_respond watchdog, waiting and answering."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from cdpnb.errors import (
    CDPError,
    DialogError,
    DialogResponseFailed,
    NoPendingDialog,
    SeveralPendingDialogs,
    UnknownDialog,
    WaitTimeout,
)
from cdpnb.protocol import Event, Message, Note
from cdpnb.state import DialogRecord, PendingDialog
from cdpnb.supervisor.bridge import DialogBridge
from cdpnb.supervisor.core import Core
from cdpnb.supervisor.options import Policy, check_timeout

__all__ = ["ACTIONS", "DialogControl"]

log = logging.getLogger("cdpnb.supervisor")

ACTIONS = ("accept", "dismiss")
#: A native dialog closed by someone else this fast was not closed by a person.
FAST_REMOTE_MS = 50.0
OPENINGS = ("Page.javascriptDialogOpening", "cdpnb.bridgeDialogOpening")


class DialogControl:
    def __init__(self, core: Core, policy: Policy, dialog_timeout_s: float,
                 bridge: DialogBridge | None = None) -> None:
        self.core = core
        self.bridge = bridge
        self.policy = policy
        self.dialog_timeout_s = dialog_timeout_s
        self._watchdogs: dict[str, asyncio.TimerHandle] = {}
        self._opened: list[asyncio.Future[PendingDialog]] = []
        #: Called once per fast remote close of a native dialog (an auto-dismisser).
        self.on_fast_remote: Callable[[DialogRecord], None] | None = None

    # -- reacting to the stream (called by Core.apply, must not block) --------------

    def __call__(self, message: Message) -> None:
        kind = type(message)
        if kind is Event or kind is Note:
            if message.method in OPENINGS:
                self._on_opened()
            elif message.method in ("Page.javascriptDialogClosed", "cdpnb.dialogAnswered",
                                    "cdpnb.disconnected", "cdpnb.connected"):
                self._forget_closed()
                if message.method == "Page.javascriptDialogClosed":
                    self._check_fast_remote()

    def _check_fast_remote(self) -> None:
        recent = self.core.state.recent_dialogs
        if not recent:
            return
        last = recent[-1]
        if last.closed_by != "remote" or last.via != "native" or last.open_ms > FAST_REMOTE_MS:
            return
        self.core.stats["fast-remote-dismissals"] += 1
        if self.on_fast_remote is not None:
            self.on_fast_remote(last)

    def _on_opened(self) -> None:
        pending = self.core.state.pending_dialogs
        if not pending:
            return
        dialog = pending[-1]
        for waiter in self._opened:
            if not waiter.done():
                waiter.set_result(dialog)
        self._opened.clear()
        if self.policy == "must_respond":
            loop = asyncio.get_running_loop()
            self._watchdogs[dialog.id] = loop.call_later(
                self.dialog_timeout_s, self._watchdog_fires, dialog.id)
        else:
            accept = self.policy == "auto_accept"
            text = dialog.default_prompt if accept and dialog.type == "prompt" else None
            self.core.spawn(self.answer(dialog, accept, text, "auto_policy"),
                            name=f"cdpnb-auto-{dialog.id}")

    def _watchdog_fires(self, dialog_id: str) -> None:
        self._watchdogs.pop(dialog_id, None)
        dialog = self._pending(dialog_id)
        if dialog is None or dialog.answering is not None:
            return
        self.core.stats["watchdog-dismissals"] += 1
        self.core.spawn(self.answer(dialog, False, None, "watchdog"),
                        name=f"cdpnb-watchdog-{dialog_id}")

    def _forget_closed(self) -> None:
        open_ids = {d.id for d in self.core.state.pending_dialogs}
        for dialog_id in [i for i in self._watchdogs if i not in open_ids]:
            self._watchdogs.pop(dialog_id).cancel()

    def cancel_all(self) -> None:
        for handle in self._watchdogs.values():
            handle.cancel()
        self._watchdogs.clear()
        for waiter in self._opened:
            waiter.cancel()
        self._opened.clear()

    def _pending(self, dialog_id: str) -> PendingDialog | None:
        return next((d for d in self.core.state.pending_dialogs if d.id == dialog_id), None)

    # -- the API ------------------------------------------------------------------------

    async def wait(self, timeout: float | None) -> PendingDialog:
        """The oldest open dialog, or the next one to open."""
        limit = check_timeout("timeout", timeout, allow_none=True)
        pending = self.core.state.pending_dialogs
        if pending:
            return pending[0]
        waiter: asyncio.Future[PendingDialog] = asyncio.get_running_loop().create_future()
        self._opened.append(waiter)
        try:
            return await asyncio.wait_for(waiter, limit)
        except TimeoutError:
            raise WaitTimeout(f"no dialog opened within {limit:g} s") from None
        finally:
            if waiter in self._opened:
                self._opened.remove(waiter)

    async def respond(
        self, action: Any, prompt_text: Any = None, dialog_id: Any = None
    ) -> DialogRecord:
        if action not in ACTIONS:
            raise ValueError(f"action must be 'accept' or 'dismiss', got {action!r}")
        if prompt_text is not None and not isinstance(prompt_text, str):
            raise TypeError(f"prompt_text must be a str or None, got {type(prompt_text).__name__}")
        if dialog_id is not None and not isinstance(dialog_id, str):
            raise TypeError(f"dialog_id must be a str like 'd-1', got {dialog_id!r}")
        dialog = self._choose(dialog_id)
        if prompt_text is not None and (action != "accept" or dialog.type != "prompt"):
            raise ValueError(
                f"prompt_text is only for accepting a prompt; {dialog.id} is a {dialog.type} "
                f"and the action is {action!r}")
        return await self.answer(dialog, action == "accept", prompt_text, "agent")

    def _choose(self, dialog_id: str | None) -> PendingDialog:
        state = self.core.state
        pending = [d for d in state.pending_dialogs if d.answering is None]
        if dialog_id is None:
            if not pending:
                raise NoPendingDialog("no dialog is open" + self._last_closed_hint())
            if len(pending) > 1:
                listed = "; ".join(f"{d.id} ({d.type} {d.message[:40]!r})" for d in pending)
                raise SeveralPendingDialogs(
                    f"{len(pending)} dialogs are open, pass dialog_id= one of: {listed}")
            return pending[0]
        for d in state.pending_dialogs:
            if d.id == dialog_id:
                if d.answering is not None:
                    raise DialogError(f"dialog {dialog_id} is already being answered "
                                      f"(by {d.answering.closed_by})")
                return d
        closed = next((r for r in state.recent_dialogs if r.id == dialog_id), None)
        if closed is not None:
            raise UnknownDialog(f"dialog {dialog_id} is no longer open: it was closed by "
                                f"{closed.closed_by} after {closed.open_ms:.1f} ms")
        open_ids = ", ".join(d.id for d in pending) or "none"
        raise UnknownDialog(f"no open dialog has id {dialog_id!r} (open: {open_ids})")

    def _last_closed_hint(self) -> str:
        recent = self.core.state.recent_dialogs
        if not recent:
            return ""
        last = recent[-1]
        hint = f"; the last one, {last.id} ({last.type}), was closed by {last.closed_by}"
        if last.closed_by == "remote" and last.open_ms < 50:
            hint += (f" {last.open_ms:.1f} ms after it opened: something else on this "
                     "endpoint auto-dismisses dialogs")
        return hint

    async def answer(
        self, dialog: PendingDialog, accept: bool, prompt_text: str | None, closed_by: str
    ) -> DialogRecord:
        core = self.core
        core.note("cdpnb.dialogAnswering", {"dialog_id": dialog.id, "accept": accept,
                                            "prompt_text": prompt_text, "closed_by": closed_by},
                  dialog.session_id)
        params: dict[str, Any] = {"accept": accept}
        if prompt_text is not None:
            params["promptText"] = prompt_text
        try:
            if dialog.via == "bridge" and self.bridge is not None:
                await self.bridge.fulfil(dialog, accept, prompt_text)
            else:
                await core.send("Page.handleJavaScriptDialog", params,
                                session_id=dialog.session_id)
        except CDPError as exc:
            core.note("cdpnb.dialogAnswered", {"dialog_id": dialog.id, "ok": False,
                                               "error": exc.message}, dialog.session_id)
            raise DialogResponseFailed(
                f"answering {dialog.id} ({dialog.type}) failed: {exc.message}"
                + self._closed_meanwhile(dialog.id)) from exc
        except BaseException as exc:
            core.note("cdpnb.dialogAnswered", {"dialog_id": dialog.id, "ok": False,
                                               "error": repr(exc)}, dialog.session_id)
            raise
        core.note("cdpnb.dialogAnswered", {"dialog_id": dialog.id, "ok": True},
                  dialog.session_id)
        record = next((r for r in reversed(core.state.recent_dialogs) if r.id == dialog.id), None)
        if record is None:
            raise DialogError(f"{dialog.id} was answered but its record is missing")
        return record

    def _closed_meanwhile(self, dialog_id: str) -> str:
        record = next((r for r in self.core.state.recent_dialogs if r.id == dialog_id), None)
        if record is None:
            return ""
        return (f" (it was closed by {record.closed_by} {record.open_ms:.1f} ms after it "
                "opened)")
