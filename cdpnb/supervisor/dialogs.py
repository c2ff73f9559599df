"""Dialog policies, the must_respond watchdog, waiting and answering.

Everything here acts on the changes the reducers report (``DialogOpened``,
``DialogClosed``, ``DialogUnanswerable``): which dialog the browser would answer is
the state's knowledge (``cdpnb.state.dialogs``), never guessed here. An answer is
sent only for the dialog the state says is answerable; the others go to the
recovery, which frees their page.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
from collections.abc import Callable
from typing import Any, Literal

from cdpnb.errors import (
    CDPError,
    DialogError,
    DialogNotAnswerable,
    DialogResponseFailed,
    NoPendingDialog,
    SeveralPendingDialogs,
    UnknownDialog,
    WaitTimeout,
)
from cdpnb.protocol import Message, Note
from cdpnb.runtime.engine import engine
from cdpnb.runtime.waits import wait_for
from cdpnb.session.bridge import DialogBridge
from cdpnb.session.core import Core
from cdpnb.session.driver import Command
from cdpnb.session.options import Policy, check_timeout
from cdpnb.state import Change, DialogRecord, PendingDialog
from cdpnb.state.changes import DialogClosed, DialogOpened, DialogUnanswerable
from cdpnb.state.dialogs import (
    FAST_REMOTE_MS,
    PAGE_CLOSE_CLOSES_S,
    UNANSWERABLE,
    answerable_dialog,
)
from cdpnb.supervisor.watchdog import DialogDeadlines

__all__ = ["ACTIONS", "DialogAction", "DialogControl", "explain_unanswerable"]

log = logging.getLogger("cdpnb.supervisor")

#: What ``respond()`` takes (a typo such as ``"acept"`` is a mypy error, then a
#: ValueError).
DialogAction = Literal["accept", "dismiss"]
ACTIONS: tuple[DialogAction, ...] = ("accept", "dismiss")


def explain_unanswerable(dialog: PendingDialog, other: PendingDialog | None) -> str:
    """Why ``dialog`` cannot be answered, in words, naming the answerable one."""
    named = f"{other.id} ({other.type} in frame {other.frame_id})" if other else "none"
    why = UNANSWERABLE.get(dialog.unanswerable or "", dialog.unanswerable or "")
    return why.replace("{other}", named)


class DialogControl:
    """Reacts to the dialog changes of the fold: at once where it folds, and on the
    engine loop for the watchdog and the recovery."""

    CHANGES = (DialogOpened, DialogClosed, DialogUnanswerable)

    def __init__(self, core: Core, policy: Policy, dialog_timeout_s: float,
                 bridge: DialogBridge,
                 native_answer: Callable[[PendingDialog, bool, str | None], Command],
                 *, on_fast_remote: Callable[[DialogRecord], None],
                 on_unanswerable: Callable[[PendingDialog], None],
                 on_closed: Callable[[DialogRecord], None]) -> None:
        self.core = core
        self.bridge = bridge
        self.policy = policy
        #: must_respond's watchdog (``cdpnb.supervisor.watchdog``).
        self.deadlines = DialogDeadlines(dialog_timeout_s, self._watchdog_fires)
        #: A native answer in the endpoint's protocol (the driver's command).
        self.native_answer = native_answer
        #: Called once per fast remote close of a native dialog (an auto-dismisser).
        self.on_fast_remote = on_fast_remote
        #: Called with each dialog the browser cannot answer (the recovery frees it).
        self.on_unanswerable = on_unanswerable
        #: Called after each close (the recovery checks whether a page is stuck now).
        self.on_closed = on_closed

    # -- reacting to changes (called by Core.apply, must not block) -----------------

    def on_fold(self, message: Message, changes: tuple[Change, ...]) -> None:
        """(Called ``now``, on the thread that folds the message, under the fold lock.)
        An auto policy answers an answerable dialog at once, from this thread; the rest
        (judging a fast remote close, the recovery of what is unanswerable, the
        watchdog's one timer when it must be set earlier) runs on the engine loop, which
        is woken only when there is such work: each wake-up runs Python beside the
        caller's thread as the page goes on, and waking it for every dialog's opening
        and closing made an alert's round trip 5-8% slower (measured side by side, one
        browser, 2026-11-26)."""
        engine_work = False
        for change in changes:
            kind = type(change)
            if kind is DialogOpened:
                assert isinstance(change, DialogOpened)
                dialog = change.dialog
                if self.policy == "must_respond":
                    if dialog.answerable:
                        self.deadlines.open(dialog.id)  # (wakes the engine only if need be)
                elif dialog.answerable:
                    self.core.after_this_message(functools.partial(self._answer_now, dialog))
                # (unanswerable: DialogUnanswerable follows; the recovery takes it)
            elif kind is DialogClosed:
                assert isinstance(change, DialogClosed)
                record = change.record
                self.on_closed(record)  # (the recovery's check: thread-safe)
                self.deadlines.close(record.id)
                engine_work = engine_work or self._fast_remote(record)
            elif kind is DialogUnanswerable:
                engine_work = True
        if engine_work:
            engine.loop.call_soon_threadsafe(self._on_engine, message, changes)

    def _on_engine(self, message: Message, changes: tuple[Change, ...]) -> None:
        for change in changes:
            kind = type(change)
            if kind is DialogClosed:
                assert isinstance(change, DialogClosed)
                self._closed_dialog(change.record)
            elif kind is DialogUnanswerable:
                assert isinstance(change, DialogUnanswerable)
                self.deadlines.close(change.dialog.id)
                self.on_unanswerable(change.dialog)

    def _policy_answer(self, dialog: PendingDialog) -> tuple[bool, str | None]:
        accept = self.policy == "auto_accept"
        return accept, dialog.default_prompt if accept and dialog.type == "prompt" else None

    def _answer_now(self, dialog: PendingDialog) -> None:
        accept, text = self._policy_answer(dialog)
        why = self._answering(dialog, accept, text, "auto_policy", None)
        try:
            self.core.dispatch(*self._command_for(dialog, accept, text, why),
                               functools.partial(self._answered_at_once_by, dialog), why=why)
        except BaseException as exc:  # (not written: said as the answer's end)
            self._answered_at_once_by(dialog, None, exc)

    def _answered_at_once_by(self, dialog: PendingDialog, _result: Any,
                             error: BaseException | None) -> None:
        """An auto policy's answer, ended: on the thread that folded its reply (no loop
        wakes for it), as ``answer`` ends one; a failure noted and logged as a
        background task's."""
        try:
            if error is not None:
                raise self._answer_failed(dialog, error)
            self._answer_went(dialog)
        except Exception as exc:
            self.core.report_failure(f"cdpnb-auto-{dialog.id}", exc)

    def _closed_dialog(self, record: DialogRecord) -> None:
        if self._fast_remote(record):
            # Judged once the page had time to say it closed: a tab's close reports its
            # dialog closed first, and the record is then amended to the browser's
            # (cdpnb.state.dialogs.closed_with_page). Only a close still someone
            # else's then is an auto-dismissing client.
            asyncio.get_running_loop().call_later(
                PAGE_CLOSE_CLOSES_S * 2, self._judge_fast_remote, record.id)

    @staticmethod
    def _fast_remote(record: DialogRecord) -> bool:
        return (record.closed_by == "remote" and record.via == "native"
                and record.open_ms <= FAST_REMOTE_MS)

    def _judge_fast_remote(self, dialog_id: str) -> None:
        record = next((r for r in self.core.state.recent_dialogs if r.id == dialog_id), None)
        if record is not None and record.closed_by == "remote":
            self.on_fast_remote(record)

    def _watchdog_fires(self, dialog_id: str) -> None:
        dialog = self._pending(dialog_id)
        # Never an answer for a dialog the browser is not showing as answerable.
        if dialog is None or dialog.answering is not None or not dialog.answerable:
            return
        self.core.spawn(self.answer(dialog, False, None, "watchdog"),
                        name=f"cdpnb-watchdog-{dialog_id}")

    def stop_watchdogs(self) -> None:
        """Stop the watchdog (waits end with the core's waiters)."""
        self.deadlines.stop()

    def _pending(self, dialog_id: str) -> PendingDialog | None:
        return next((d for d in self.core.state.pending_dialogs if d.id == dialog_id), None)

    # -- the API ------------------------------------------------------------------------

    async def wait(self, timeout: float | None) -> PendingDialog:
        """The oldest open dialog, or the next one to open. Ends at once with
        SupervisorStopped / ConnectionLost if the supervisor stops or the connection
        is lost first."""
        limit = check_timeout("timeout", timeout, allow_none=True)
        core = self.core
        if core.state.pending_dialogs:
            return core.state.pending_dialogs[0]
        # A dialog that opened and closed within one message (Lightpanda's do) counts.
        with core.first_change(DialogOpened) as opened:
            if core.state.pending_dialogs:  # opened while we subscribed
                return core.state.pending_dialogs[0]
            try:
                return (await wait_for(opened, limit)).dialog
            except TimeoutError:
                raise WaitTimeout(f"no dialog opened within {limit:g} s") from None

    async def respond(
        self, action: Any, prompt_text: Any = None, dialog_id: Any = None
    ) -> DialogRecord:
        if action not in ACTIONS:
            raise ValueError(f"action must be 'accept' or 'dismiss', got {action!r}")
        return await self.reply(action == "accept", prompt_text, dialog_id)

    async def reply(self, accept: bool, prompt_text: Any = None,
                    dialog_id: Any = None) -> DialogRecord:
        """:meth:`respond` with the answer as a bool (closed_by "agent", as respond's)."""
        dialog, prompt_text = self._reply_to(accept, prompt_text, dialog_id)
        return await self.answer(dialog, accept, prompt_text, "agent")

    def reply_now(self, accept: bool, prompt_text: Any = None, dialog_id: Any = None,
                  ) -> concurrent.futures.Future[DialogRecord]:
        """``reply``, written at once from the calling thread, its record handed to the
        future on the thread that folds the answer's reply (``Core.dispatch``): what a
        dialog event's ``accept()`` and ``dismiss()`` send, so that a handler's answer
        waits for no loop to wake (through the engine loop, a handler's alert was
        1.48× the bare client's after idle against the agent's 1.32×, measured)."""
        future: concurrent.futures.Future[DialogRecord] = concurrent.futures.Future()
        try:
            dialog, prompt_text = self._reply_to(accept, prompt_text, dialog_id)
            self._refuse_if_unanswerable(dialog)
            why = self._answering(dialog, accept, prompt_text, "agent", None)
            self.core.dispatch(*self._command_for(dialog, accept, prompt_text, why),
                               functools.partial(self._replied, dialog, future), why=why)
        except BaseException as exc:
            if not future.done():
                future.set_exception(exc)
        return future

    def _replied(self, dialog: PendingDialog, future: concurrent.futures.Future[DialogRecord],
                 _result: Any, error: BaseException | None) -> None:
        """``reply_now``'s answer, ended (on the folding thread), as ``answer`` ends one."""
        try:
            if error is not None:
                raise self._answer_failed(dialog, error)
            future.set_result(self._went(dialog))
        except BaseException as exc:
            future.set_exception(exc)

    def _reply_to(self, accept: bool, prompt_text: Any, dialog_id: Any
                  ) -> tuple[PendingDialog, str | None]:
        """The dialog a reply answers and the text it sends (checked)."""
        if prompt_text is not None and not isinstance(prompt_text, str):
            raise TypeError(f"prompt_text must be a str or None, got {type(prompt_text).__name__}")
        if dialog_id is not None and not isinstance(dialog_id, str):
            raise TypeError(f"dialog_id must be a str like 'd-1', got {dialog_id!r}")
        dialog = self._choose(dialog_id)
        if not accept or dialog.type not in ("prompt", "unknown"):
            # Ignored, as WebDriver BiDi's handleUserPrompt ignores userText and
            # Playwright's dialog.accept(text) does for anything but an accepted prompt.
            # (A WebDriver classic dialog's type is unknown: the text goes with the
            # answer, and an alert or a confirm refuses it there: cdpnb.protocol.classic.)
            prompt_text = None
        elif prompt_text is None and dialog.type == "prompt":
            # What pressing OK gives the page: the prompt's default. Measured on every
            # backend: an accept without text gives "" (CDP's promptText and BiDi's
            # userText default to empty), unlike a person, and unlike auto_accept.
            prompt_text = dialog.default_prompt
        return dialog, prompt_text

    def _choose(self, dialog_id: str | None) -> PendingDialog:
        state = self.core.state
        open_now = [d for d in state.pending_dialogs
                    if d.answering is None or not d.answerable]
        if dialog_id is None:
            answerable = [d for d in open_now if d.answerable]
            if not open_now:
                raise NoPendingDialog("no dialog is open" + self._last_closed_hint())
            if not answerable:
                self._refuse(open_now[-1])
            if len(answerable) > 1:
                listed = "; ".join(f"{d.id} ({d.type} {d.message[:40]!r})" for d in answerable)
                raise SeveralPendingDialogs(
                    f"{len(answerable)} dialogs are open, pass dialog_id= one of: {listed}")
            return answerable[0]
        for d in state.pending_dialogs:
            if d.id == dialog_id:
                if not d.answerable:
                    self._refuse(d)
                if d.answering is not None:
                    raise DialogError(f"dialog {dialog_id} is already being answered "
                                      f"(by {d.answering.closed_by})")
                return d
        closed = next((r for r in state.recent_dialogs if r.id == dialog_id), None)
        if closed is not None:
            why = f" ({closed.reason})" if closed.reason else ""
            raise UnknownDialog(f"dialog {dialog_id} is no longer open: it was closed by "
                                f"{closed.closed_by}{why} after {closed.open_ms:.1f} ms")
        open_ids = ", ".join(d.id for d in open_now) or "none"
        raise UnknownDialog(f"no open dialog has id {dialog_id!r} (open: {open_ids})")

    def _refuse_if_unanswerable(self, dialog: PendingDialog) -> None:
        """DialogNotAnswerable if the state now holds ``dialog`` unanswerable."""
        current = self._pending(dialog.id)
        if current is not None and not current.answerable:
            self._refuse(current)

    def _refuse(self, dialog: PendingDialog) -> None:
        other = answerable_dialog(self.core.state, dialog.page_session_id)
        if other is not None and other.id == dialog.id:
            other = None
        named = f"; the browser would answer {other.id} instead" if other else ""
        raise DialogNotAnswerable(
            f"{dialog.id} ({dialog.type} in frame {dialog.frame_id}) cannot be answered: "
            f"{explain_unanswerable(dialog, other)}{named}",
            dialog_id=dialog.id, reason=dialog.unanswerable or "", answerable=other.id
            if other else None)

    def _last_closed_hint(self) -> str:
        recent = self.core.state.recent_dialogs
        if not recent:
            return ""
        last = recent[-1]
        why = f" ({last.reason})" if last.reason else ""
        hint = f"; the last one, {last.id} ({last.type}), was closed by {last.closed_by}{why}"
        if last.closed_by == "remote" and last.open_ms < FAST_REMOTE_MS:
            hint += (f" {last.open_ms:.1f} ms after it opened: something else on this "
                     "endpoint auto-dismisses dialogs")
        return hint

    async def answer(
        self, dialog: PendingDialog, accept: bool, prompt_text: str | None, closed_by: str,
        reason: str | None = None,
    ) -> DialogRecord:
        """Send the answer for ``dialog`` (the state must hold it answerable) and return
        its record; DialogResponseFailed if the browser refused it or gave it to
        another dialog."""
        core = self.core
        self._refuse_if_unanswerable(dialog)
        why = self._answering(dialog, accept, prompt_text, closed_by, reason)
        try:
            await core.send(*self._command_for(dialog, accept, prompt_text, why), why=why)
        except BaseException as exc:
            failed = self._answer_failed(dialog, exc)
            if failed is exc:
                raise
            raise failed from exc
        return self._went(dialog)

    def _went(self, dialog: PendingDialog) -> DialogRecord:
        """The answer was taken (``_answer_went``): the dialog's record."""
        self._answer_went(dialog)
        record = next((r for r in reversed(self.core.state.recent_dialogs)
                       if r.id == dialog.id), None)
        if record is None:
            raise DialogError(f"{dialog.id} was answered but its record is missing")
        return record

    def _answer_failed(self, dialog: PendingDialog, exc: BaseException) -> BaseException:
        """The answer was not taken: noted; what to raise (a CDP error's words in
        DialogResponseFailed, anything else as it is)."""
        if isinstance(exc, CDPError):
            self.core.note("cdpnb.dialogAnswered", {"dialog_id": dialog.id, "ok": False,
                                                    "error": exc.message}, dialog.session_id)
            return DialogResponseFailed(
                f"answering {dialog.id} ({dialog.type}) failed: {exc.message}"
                + self._closed_meanwhile(dialog.id))
        self.core.note("cdpnb.dialogAnswered", {"dialog_id": dialog.id, "ok": False,
                                                "error": repr(exc)}, dialog.session_id)
        return exc

    def _answer_went(self, dialog: PendingDialog) -> None:
        """The browser took the answer: noted; DialogResponseFailed if it gave it to
        another dialog."""
        misdelivered = self._delivered_to(dialog.id)
        self.core.note("cdpnb.dialogAnswered", {"dialog_id": dialog.id, "ok": True},
                       dialog.session_id)
        if misdelivered is not None:
            raise DialogResponseFailed(
                f"the browser gave the answer meant for {dialog.id} to {misdelivered.id} "
                f"({misdelivered.type} in frame {misdelivered.frame_id}): it opened while the "
                f"answer was on its way and took the page's dialog handle; {dialog.id} is "
                "still open and can no longer be answered")

    def _answer_command(self, dialog: PendingDialog, accept: bool, prompt_text: str | None
                        ) -> tuple[str, dict[str, Any], str | None]:
        """The command that answers ``dialog``: the protocol's own for a native one, its
        paused request's response for a bridged one."""
        if dialog.via == "bridge":
            return self.bridge.answer_command(dialog, accept, prompt_text)
        return self.native_answer(dialog, accept, prompt_text)

    def _command_for(self, dialog: PendingDialog, accept: bool, prompt_text: str | None,
                     why: Note) -> tuple[str, dict[str, Any], str | None]:
        """``_answer_command``; ``why`` folded if it cannot be made (then the answer's
        failure follows its decision in the trace, as for one the browser refused)."""
        try:
            return self._answer_command(dialog, accept, prompt_text)
        except BaseException:
            self.core.apply(why)
            raise

    def _answering(self, dialog: PendingDialog, accept: bool, prompt_text: str | None,
                   closed_by: str, reason: str | None) -> Note:
        """The note of the decision to answer ``dialog``, folded as its answer is
        written (``Core.send``'s ``why``): the answer leaves first."""
        return self.core.stamped("cdpnb.dialogAnswering", {
            "dialog_id": dialog.id, "accept": accept, "prompt_text": prompt_text,
            "closed_by": closed_by, **({"reason": reason} if reason else {})},
            dialog.session_id)

    def _delivered_to(self, dialog_id: str) -> DialogRecord | None:
        still = self._pending(dialog_id)
        if still is None or still.answering is None or still.answering.delivered_to is None:
            return None
        taken = still.answering.delivered_to
        return next((r for r in reversed(self.core.state.recent_dialogs) if r.id == taken), None)

    def _closed_meanwhile(self, dialog_id: str) -> str:
        record = next((r for r in self.core.state.recent_dialogs if r.id == dialog_id), None)
        if record is None:
            return ""
        return (f" (it was closed by {record.closed_by} {record.open_ms:.1f} ms after it "
                "opened)")
