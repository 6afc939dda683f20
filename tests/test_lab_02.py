"""Lab 02 as a learner meets it: correct nodes written differently are accepted (other deadlines
built from `timeout`, polling, anyio, a thread timer, ...), and the wrong answers beginners write
(the substring trick, skipped cancellation, a deadline of their own, a grace period, a decoy timer,
a faked outcome, ...) are rejected with a message naming the mistake; the deadline is judged by the
event loop's timer that cut the call, and timed where no timer explains the cut.

The learner answers below run concurrently (their checks mostly wait), so the whole set stays fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import threading
import time

import pytest
from lab_checks import assert_verdicts, verdicts
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.errors import GraphBubbleUp

import helpers.labs as core
from helpers.labs import lab02, solution_namespace
from helpers.nodes import CustomAsyncToolNode


class Base:
    """A correct node (asyncio.timeout + expired), with hooks the wrong variants override."""

    def __init__(self, tools, *, timeout=None, max_concurrency=None):
        self.tools = {t.name: t for t in tools}
        self.timeout, self.max_concurrency = timeout, max_concurrency

    def calls(self, state):
        return state["messages"][-1].tool_calls

    def limit(self):
        return asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else contextlib.nullcontext()

    def per_call(self, shared):
        return shared

    def find(self, name):
        return self.tools.get(name)

    def error(self, call, text):
        return ToolMessage(text, name=call["name"], tool_call_id=call["id"], status="error")

    async def run(self, tool, call):
        return await self.within(self.timeout, tool, call)

    async def within(self, seconds, tool, call):
        """The call's answer under `asyncio.timeout(seconds)`: the deadline's text once it expired."""
        try:
            async with asyncio.timeout(seconds) as scope:
                return ToolMessage(
                    str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
                )
        except TimeoutError as exc:
            if scope.expired():
                return self.error(call, self.deadline(call))
            return self.error(call, f"Error: {exc!r}")
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")

    def deadline(self, call):
        return f"Error: {call['name']} took longer than {self.timeout} s."

    async def one(self, call, shared):
        tool = self.find(call["name"])
        if tool is None:
            return self.error(call, f"Unknown tool {call['name']!r}; allowed: {', '.join(self.tools)}")
        async with self.per_call(shared):
            return await self.run(tool, call)

    async def __call__(self, state):
        shared = self.limit()
        return {"messages": list(await asyncio.gather(*(self.one(c, shared) for c in self.calls(state))))}


# correct alternatives
class TaskGroupWait(Base):
    """TaskGroup for the batch; asyncio.wait on one task, cancelled when the deadline passes."""

    async def run(self, tool, call):
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return self.error(call, f"timeout: {call['name']} did not finish in {self.timeout} seconds")
        try:
            return ToolMessage(str(task.result()), name=call["name"], tool_call_id=call["id"])
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self.error(call, f"{type(exc).__name__}: {exc}")

    async def __call__(self, state):
        shared = self.limit()
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self.one(c, shared)) for c in self.calls(state)]
        except* GraphBubbleUp as group:  # a TaskGroup wraps what its tasks raise: unwrap the interrupt
            raise group.exceptions[0] from None
        return {"messages": [t.result() for t in tasks]}


class TaskGroupWrapsTheInterrupt(TaskGroupWait):
    """Wrong: the same TaskGroup, the interrupt left wrapped in its ExceptionGroup."""

    async def __call__(self, state):
        shared = self.limit()
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(self.one(c, shared)) for c in self.calls(state)]
        return {"messages": [t.result() for t in tasks]}


class WaitForGuarded(Base):
    """`asyncio.wait_for` around a coroutine that answers the tool's own errors itself (3.11's
    `wait_for` sets a `loop.call_later` timer; 3.12's uses `asyncio.timeout`)."""

    async def run(self, tool, call):
        async def guarded():
            try:
                return ToolMessage(
                    str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
                )
            except GraphBubbleUp:
                raise
            except Exception as exc:
                return self.error(call, f"Error: {exc!r}")

        try:
            return await asyncio.wait_for(guarded(), self.timeout)
        except TimeoutError:
            return self.error(call, f"Error: {call['name']} timed out after {self.timeout} s")


class CallLaterCancel(Base):
    """`loop.call_later(self.timeout, task.cancel)`: a timer of its own on the loop."""

    async def run(self, tool, call):
        if self.timeout is None:
            return await super().run(tool, call)
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        timer = asyncio.get_running_loop().call_later(self.timeout, task.cancel)
        try:
            return ToolMessage(str(await task), name=call["name"], tool_call_id=call["id"])
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():
                raise
            return self.error(call, f"Error: {call['name']} exceeded its time limit")
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")
        finally:
            timer.cancel()


class FloatCast(Base):
    """`float(timeout)` stored: the node's own timeout all the same."""

    def __init__(self, tools, *, timeout=None, max_concurrency=None):
        super().__init__(
            tools, timeout=None if timeout is None else float(timeout), max_concurrency=max_concurrency
        )


class EarlierConstant(Base):
    """`asyncio.timeout(self.timeout)` with a constant 0.3 s inside it: cut before its timeout."""

    async def run(self, tool, call):
        try:
            async with asyncio.timeout(self.timeout) as outer:
                async with asyncio.timeout(None if self.timeout is None else 0.3) as inner:
                    return ToolMessage(
                        str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
                    )
        except TimeoutError as exc:
            if outer.expired() or inner.expired():
                return self.error(call, self.deadline(call))
            return self.error(call, f"Error: {exc!r}")
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class Polling(Base):
    """Correct: poll the task every `timeout / 20` until `loop.time() + timeout` has passed, then cancel."""

    async def run(self, tool, call):
        if self.timeout is None:
            return await super().run(tool, call)
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        deadline = loop.time() + self.timeout
        while not task.done() and loop.time() < deadline:
            await asyncio.sleep(self.timeout / 20)
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return self.error(call, f"Error: {call['name']} took longer than {self.timeout} s.")
        try:
            return ToolMessage(str(task.result()), name=call["name"], tool_call_id=call["id"])
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class FromBatchStart(Base):
    """Correct: the deadline counted from the start of the batch (`timeout` less the time spent)."""

    async def __call__(self, state):
        self.started = asyncio.get_running_loop().time()
        return await super().__call__(state)

    async def run(self, tool, call):
        spent = asyncio.get_running_loop().time() - self.started
        remaining = None if self.timeout is None else max(0.0, self.timeout - spent)
        return await self.within(remaining, tool, call)


class HalfTimeWarning(Base):
    """Correct: the deadline, and a do-nothing "slow call" timer at half the timeout beside it."""

    async def run(self, tool, call):
        loop = asyncio.get_running_loop()
        warn = None if self.timeout is None else loop.call_later(self.timeout / 2, lambda: None)
        try:
            return await super().run(tool, call)
        finally:
            if warn is not None:
                warn.cancel()


class AnyioDeadline(Base):
    """Correct: `anyio.fail_after(self.timeout)` (anyio's cancel scope, on asyncio's timers)."""

    async def run(self, tool, call):
        import anyio

        try:
            with anyio.fail_after(self.timeout) as scope:
                return ToolMessage(
                    str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
                )
        except TimeoutError as exc:
            if scope.cancel_called:
                return self.error(call, self.deadline(call))
            return self.error(call, f"Error: {exc!r}")
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class Reacts(Base):
    """A call as a task; `expired(task)` says whether to cancel it (and when, by when it returns)."""

    async def run(self, tool, call):
        if self.timeout is None:
            return await super().run(tool, call)
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        if await self.expired(task):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return self.error(call, self.deadline(call))
        try:
            return ToolMessage(str(task.result()), name=call["name"], tool_call_id=call["id"])
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")

    async def expired(self, task):
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        return not done


class SpinsUntilTheDeadline(Reacts):
    """Correct, if wasteful: `await asyncio.sleep(0)` until `loop.time() + timeout` has passed."""

    async def expired(self, task):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while not task.done() and loop.time() < deadline:
            await asyncio.sleep(0)
        return not task.done()


class ThreadTimer(Reacts):
    """Correct: a `threading.Timer(timeout)` cancels the call through `call_soon_threadsafe` (no loop
    timer: the check times this cut)."""

    async def expired(self, task):
        loop, passed = asyncio.get_running_loop(), threading.Event()
        timer = threading.Timer(
            self.seconds(), lambda: (passed.set(), loop.call_soon_threadsafe(task.cancel))
        )
        timer.start()
        try:
            await asyncio.wait({task})
        finally:
            timer.cancel()
        return passed.is_set()

    def seconds(self):
        return self.timeout


class ThreadTimerOwnNumber(ThreadTimer):
    """Wrong: the same, with a number of its own (0.45 s) instead of `timeout`."""

    def seconds(self):
        return 0.45


class SpinsAfterTheDeadline(Reacts):
    """Wrong: at the deadline, a 1 s "grace" spent in `await asyncio.sleep(0)`, then the cut."""

    async def expired(self, task):
        if not await super().expired(task):
            return False
        loop = asyncio.get_running_loop()
        end = loop.time() + 1.0
        while loop.time() < end and not task.done():
            await asyncio.sleep(0)
        return not task.done()


class BlocksAfterTheDeadline(Reacts):
    """Wrong: at the deadline, `time.sleep(0.8)` ("flush the logs"), then the cut."""

    async def expired(self, task):
        if not await super().expired(task):
            return False
        time.sleep(0.8)
        return True


class CallAtAPastDeadline(Reacts):
    """Wrong: waits `timeout + 0.6`, then `loop.call_at(deadline, task.cancel)`, its moment long gone."""

    async def expired(self, task):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        done, _ = await asyncio.wait({task}, timeout=self.timeout + 0.6)
        if done:
            return False
        loop.call_at(deadline, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
        return False if not task.cancelled() else True


class GracePeriod(Base):
    """Wrong: `asyncio.wait(timeout=self.timeout)`, then a 1 s grace before cancelling."""

    async def run(self, tool, call):
        if self.timeout is None:
            return await super().run(tool, call)
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        if not done:
            done, _ = await asyncio.wait({task}, timeout=1.0)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return self.error(call, f"Error: {call['name']} took longer than {self.timeout} s.")
        try:
            return ToolMessage(str(task.result()), name=call["name"], tool_call_id=call["id"])
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class ShieldThenLateCancel(Base):
    """Wrong: `asyncio.timeout(self.timeout)` around a shielded task, cancelled 0.6 s after it."""

    async def run(self, tool, call):
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        try:
            async with asyncio.timeout(self.timeout) as scope:
                return ToolMessage(
                    str(await asyncio.shield(task)), name=call["name"], tool_call_id=call["id"]
                )
        except TimeoutError as exc:
            if not scope.expired():
                return self.error(call, f"Error: {exc!r}")
            await asyncio.sleep(0.6)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return self.error(call, self.deadline(call))
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class DecoyTimer(Base):
    """Wrong: a do-nothing timer set from `self.timeout`; the real deadline is 1.2 s."""

    async def run(self, tool, call):
        if self.timeout is None:
            return await super().run(tool, call)
        decoy = asyncio.get_running_loop().call_later(self.timeout, lambda: None)
        try:
            return await self.within(1.2, tool, call)
        finally:
            decoy.cancel()


class LoneCallNotCancelled(Base):
    """Wrong: a batch of one call stops waiting at the deadline but never cancels the call (on the
    loop, or in a worker thread the check cannot cancel)."""

    threaded = False

    async def __call__(self, state):
        calls = self.calls(state)
        if len(calls) != 1 or self.find(calls[0]["name"]) is None:
            return await super().__call__(state)
        call = calls[0]
        work = self.find(call["name"]).ainvoke(call["args"])
        task = asyncio.ensure_future(asyncio.to_thread(asyncio.run, work) if self.threaded else work)
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        if not done:
            return {
                "messages": [self.error(call, f"Error: {call['name']} took longer than {self.timeout} s.")]
            }
        return {"messages": [ToolMessage(str(task.result()), name=call["name"], tool_call_id=call["id"])]}


class LoneCallInAThread(LoneCallNotCancelled):
    threaded = True


def closure_node(tools, *, timeout=None, max_concurrency=None):
    """A closure instead of a class; other wording; a deadline flag set by the check itself."""
    by_name = {t.name: t for t in tools}

    async def node(state):
        calls = state["messages"][-1].tool_calls
        sem = asyncio.Semaphore(max_concurrency) if max_concurrency else None

        async def answer(call):
            def err(text):
                return ToolMessage(text, tool_call_id=call["id"], status="error")

            if call["name"] not in by_name:
                return err(f"No such tool. Available tools: {sorted(by_name)}")

            async def guarded():
                if sem is None:
                    return await by_name[call["name"]].ainvoke(call["args"])
                async with sem:
                    return await by_name[call["name"]].ainvoke(call["args"])

            task = asyncio.create_task(guarded())
            try:
                return ToolMessage(
                    str(await asyncio.wait_for(asyncio.shield(task), timeout)), tool_call_id=call["id"]
                )
            except TimeoutError as exc:
                if task.done():  # the tool itself raised TimeoutError
                    return err(str(exc))
                task.cancel()
                return err(f"The call exceeded its deadline ({timeout} s) and was cancelled.")
            except GraphBubbleUp:
                raise
            except Exception as exc:
                return err(str(exc))

        return {"messages": await asyncio.gather(*(answer(c) for c in calls))}

    return node


class TimedOutWording(Base):  # the attacker's wordings: no number, other words
    def deadline(self, call):
        return f"Error: {call['name']} timed out."


class TimeLimitWording(Base):
    def deadline(self, call):
        return f"Error: {call['name']} exceeded the time limit and was cancelled."


class CancelWithoutAwait(Base):
    """asyncio.wait on every call, then `t.cancel()` on the pending ones without awaiting them."""

    async def __call__(self, state):
        calls, shared = self.calls(state), self.limit()

        async def untimed(call):
            tool = self.find(call["name"])
            if tool is None:
                return self.error(call, f"Unknown tool; allowed: {', '.join(self.tools)}")
            async with self.per_call(shared):
                try:
                    return ToolMessage(str(await tool.ainvoke(call["args"])), tool_call_id=call["id"])
                except GraphBubbleUp:
                    raise
                except Exception as exc:
                    return self.error(call, f"Error: {exc!r}")

        tasks = [asyncio.ensure_future(untimed(c)) for c in calls]
        done, pending = await asyncio.wait(tasks, timeout=self.timeout)
        for t in pending:
            t.cancel()
        return {
            "messages": [
                t.result() if t in done else self.error(c, f"Error: took longer than {self.timeout} s")
                for c, t in zip(calls, tasks, strict=True)
            ]
        }


# -- wrong answers ---------------------------------------------------------------------------------------
class SubstringTrick(Base):
    def find(self, name):
        return self.tools.get(name) or next((t for n, t in self.tools.items() if n in name), None)


class OffByOne(Base):
    def limit(self):
        return (
            asyncio.Semaphore(self.max_concurrency - 1) if self.max_concurrency else contextlib.nullcontext()
        )


class IgnoresTimeout(Base):
    async def run(self, tool, call):
        try:
            return ToolMessage(
                str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
            )
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class WaitForConfusion(Base):
    """`except TimeoutError` around wait_for; the message even carries the exception."""

    async def run(self, tool, call):
        try:
            result = await asyncio.wait_for(tool.ainvoke(call["args"]), self.timeout)
        except TimeoutError as exc:
            return self.error(call, f"Error: {call['name']} timed out after {self.timeout} s {exc!r}")
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")
        return ToolMessage(str(result), name=call["name"], tool_call_id=call["id"])


class WaitNoCancel(TaskGroupWait):
    async def run(self, tool, call):
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        if not done:
            return self.error(call, f"Error: {call['name']} took longer than {self.timeout} s.")
        try:
            return ToolMessage(str(task.result()), name=call["name"], tool_call_id=call["id"])
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class OwnDeadline(Base):
    """`asyncio.timeout(1.0)`: a deadline of its own, whatever `timeout` the node was built with."""

    def __init__(self, tools, *, timeout=None, max_concurrency=None):
        super().__init__(tools, timeout=1.0, max_concurrency=max_concurrency)


class DefaultDeadline(Base):
    """`self.timeout or 0.5`: a deadline of its own when the node is built with `timeout=None`."""

    def __init__(self, tools, *, timeout=None, max_concurrency=None):
        super().__init__(tools, timeout=timeout or 0.5, max_concurrency=max_concurrency)


def derived_deadline(rule):
    """A node whose deadline is `rule(self.timeout)` (None passed through): a number of its own."""

    class Derived(Base):
        async def run(self, tool, call):
            return await self.within(None if self.timeout is None else rule(self.timeout), tool, call)

    return Derived


class EveryAIMessage(Base):
    def calls(self, state):
        return [c for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]


class SemaphorePerCall(Base):
    def per_call(self, shared):
        return asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else shared


class SemaphoreInInit(Base):
    def __init__(self, tools, *, timeout=None, max_concurrency=None):
        super().__init__(tools, timeout=timeout, max_concurrency=max_concurrency)
        self.sem = asyncio.Semaphore(max_concurrency) if max_concurrency else contextlib.nullcontext()

    def limit(self):
        return self.sem


class FakedErrorText(Base):
    async def run(self, tool, call):
        message = await super().run(tool, call)
        if message.status == "error" and "traffic" in str(message.content):
            message.content = "Error: traffic service unreachable"
        return message


class NoTryExcept(Base):
    async def run(self, tool, call):
        return ToolMessage(str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"])


class CompletionOrder(Base):
    async def __call__(self, state):
        shared = self.limit()
        out = []
        for next_done in asyncio.as_completed([self.one(c, shared) for c in self.calls(state)]):
            out.append(await next_done)
        return {"messages": out}


class UnknownWithoutList(Base):
    async def one(self, call, shared):
        if call["name"] not in self.tools:
            return self.error(call, "Error: unknown tool")
        return await super().one(call, shared)


class Sequential(Base):
    async def __call__(self, state):
        shared = self.limit()
        return {"messages": [await self.one(c, shared) for c in self.calls(state)]}


class NoReturn(Base):
    async def __call__(self, state):
        await super().__call__(state)


class Hangs(Base):
    async def __call__(self, state):
        await asyncio.Event().wait()


class SyncCall(Base):
    def __call__(self, state):
        return {"messages": []}


class NamesTheHangingTool(Base):
    """The attacker's fake: no deadline at all, the hanging tool answered by its name."""

    async def one(self, call, shared):
        if call["name"] == "slow_search":
            return self.error(call, self.deadline(call))
        return await super().one(call, shared)

    async def run(self, tool, call):
        return await IgnoresTimeout.run(self, tool, call)


class HangingByArguments(NamesTheHangingTool):
    """The same fake, singling the hanging tool out by its `query` argument (the name is drawn)."""

    async def one(self, call, shared):
        if "query" in call["args"]:
            return self.error(call, self.deadline(call))
        return await Base.one(self, call, shared)


class StateAndConfig(Base):
    async def __call__(self, state, config):
        return await super().__call__(state)


class WrongSignature:
    def __init__(self, tools):
        self.tools = tools

    async def __call__(self, state):
        return {"messages": []}


@pytest.fixture
def quick_lab02(monkeypatch):
    """A shorter deadline and hang for the suite (a correct call takes 0.02 s)."""
    monkeypatch.setattr(lab02, "TIMEOUT", 0.6)
    monkeypatch.setattr(lab02, "HANG", 1.8)
    monkeypatch.setattr(lab02, "NO_DEADLINE", 0.8)  # above the largest deadline drawn (0.66 s)
    monkeypatch.setattr(core, "LIMIT", 3.0)


def test_lab02_accepts_correct_alternatives_and_names_each_wrong_answer(quick_lab02):
    answers = {
        "hangs": Hangs,
        "ignores timeout": IgnoresTimeout,
        "a deadline of its own": OwnDeadline,
        "a default deadline for timeout=None": DefaultDeadline,
        "asyncio.timeout + expired()": Base,
        "TaskGroup + asyncio.wait, cancelled": TaskGroupWait,
        "asyncio.wait_for, errors answered inside": WaitForGuarded,
        "loop.call_later(timeout, task.cancel)": CallLaterCancel,
        "a closure, other wording": closure_node,
        "the solution": solution_namespace("02")["MyToolNode"],
        "lesson 02's CustomAsyncToolNode": CustomAsyncToolNode,
        "substring trick": SubstringTrick,
        "off-by-one semaphore": OffByOne,
        "wait_for + except TimeoutError": WaitForConfusion,
        "asyncio.wait, never cancelled": WaitNoCancel,
        "answers every AIMessage": EveryAIMessage,
        "semaphore per call": SemaphorePerCall,
        "semaphore in __init__": SemaphoreInInit,
        "faked error text": FakedErrorText,
        "no try/except": NoTryExcept,
        "completion order": CompletionOrder,
        "unknown name without the list": UnknownWithoutList,
        "sequential": Sequential,
        "no return": NoReturn,
        "wrong signature": WrongSignature,
        "sync __call__": SyncCall,
        "deadline says 'timed out'": TimedOutWording,
        "deadline says 'exceeded the time limit'": TimeLimitWording,
        "asyncio.wait, cancelled without awaiting": CancelWithoutAwait,
        "hanging tool singled out by its argument": HangingByArguments,
        "__call__(self, state, config)": StateAndConfig,
    }
    assert_verdicts(
        verdicts(lab02.check_node, answers),
        {
            "asyncio.timeout + expired()": (),
            "TaskGroup + asyncio.wait, cancelled": (),
            "a closure, other wording": (),
            "the solution": (),
            "lesson 02's CustomAsyncToolNode": (),  # lesson and lab teach one semaphore rule: per run
            "substring trick": ("a tool ran for an unknown name", "merely contains"),
            "off-by-one semaphore": ("fewer than the limit: an off-by-one",),
            "ignores timeout": ("the node ignored `timeout`",),
            "a deadline of its own": ("must be the node's `timeout`", "not a number of your own"),
            "a default deadline for timeout=None": ("no call is cut off", "a default of your own"),
            "wait_for + except TimeoutError": ("catches the tool's own TimeoutError too", "scope.expired()"),
            "asyncio.wait, never cancelled": ("answered but never cancelled", "only stops WAITING"),
            "answers every AIMessage": ("answer only the LAST message's tool calls, not every AIMessage",),
            "semaphore per call": ("no limit was applied", "a new Semaphore per call"),
            "semaphore in __init__": ("bound to a different event loop", "made in `__init__`"),
            "faked error text": ("the exception's own text", "not a message of your own"),
            "no try/except": ("pydantic raised ValidationError", "called from your `run`"),
            "completion order": ("completion order",),
            "unknown name without the list": ("listing the allowed tools", "missing: lookup_weather"),
            "sequential": ("did not run together", "started later"),
            "no return": ("None means `__call__` has no `return`",),
            "hangs": ("did not return within 3 s", "not tried"),
            "wrong signature": ("cannot be called the way the exercise calls it", "timeout"),
            "sync __call__": ("`async def __call__(self, state)`",),
            "deadline says 'timed out'": (),
            "deadline says 'exceeded the time limit'": (),
            "asyncio.wait, cancelled without awaiting": (),
            "hanging tool singled out by its argument": ("never ran", "not the tool's name"),
            "__call__(self, state, config)": ("cannot be called as `node(state)`", "(state, config)"),
        },
    )


def test_lab02_a_node_without_a_deadline_cannot_answer_the_hanging_tool_by_name(quick_lab02, monkeypatch):
    monkeypatch.setattr(lab02, "SEARCH_NAMES", ("slow_search",))
    assert_verdicts(verdicts(lab02.check_node, {"by name": NamesTheHangingTool}), {"by name": ("never ran",)})
    monkeypatch.setattr(lab02, "SEARCH_NAMES", ("web_search",))  # another name: it hangs, unbounded
    assert_verdicts(
        verdicts(lab02.check_node, {"by name": NamesTheHangingTool}),
        {"by name": ("the node ignored `timeout`",)},
    )


def test_lab02_judges_the_deadline_by_the_timer_that_cut_the_call(quick_lab02):
    # the timer that fired just before the cut, against `timeout` after the node was called
    answers = {
        "twice the timeout": derived_deadline(lambda t: t * 2),
        "half the timeout": derived_deadline(lambda t: t / 2),
        "at most 0.5 s": derived_deadline(lambda t: min(t, 0.5)),
        "at least 0.5 s": derived_deadline(lambda t: max(t, 0.5)),
        "a constant 0.3 s inside asyncio.timeout(timeout)": EarlierConstant,
        "a 1 s grace after the deadline": GracePeriod,
        "a shielded call cancelled 0.6 s late": ShieldThenLateCancel,
        "a decoy timer from timeout, a deadline of 1.2 s": DecoyTimer,
        "a lone call never cancelled": LoneCallNotCancelled,
        "a lone call left running in a thread": LoneCallInAThread,
        "a 1 s grace spent spinning": SpinsAfterTheDeadline,
        "the loop blocked 0.8 s after the deadline": BlocksAfterTheDeadline,
        "call_at a deadline long past": CallAtAPastDeadline,
        "a thread timer with a number of its own": ThreadTimerOwnNumber,
        "the timeout itself": derived_deadline(lambda t: t),
        "float(timeout)": FloatCast,
        "polled every timeout / 20": Polling,
        "counted from the batch's start": FromBatchStart,
        "a warning timer at half the timeout beside it": HalfTimeWarning,
        "anyio.fail_after": AnyioDeadline,
        "spinning on asyncio.sleep(0) until the deadline": SpinsUntilTheDeadline,
        "a threading.Timer (timed)": ThreadTimer,
    }
    wrong = ("must be the node's `timeout`",)
    shorter, longer = (*wrong, "shorter than the timeout"), (*wrong, "longer than the timeout")
    assert_verdicts(
        verdicts(lab02.check_node, answers),
        {
            "twice the timeout": longer,
            "half the timeout": shorter,
            "at most 0.5 s": shorter,
            "at least 0.5 s": longer,
            "a constant 0.3 s inside asyncio.timeout(timeout)": shorter,
            "a 1 s grace after the deadline": longer,
            "a shielded call cancelled 0.6 s late": longer,
            "a decoy timer from timeout, a deadline of 1.2 s": longer,
            "a lone call never cancelled": (*wrong, "it was not cancelled", "cancel every call"),
            "a lone call left running in a thread": (*wrong, "it was not cancelled", "still running"),
            "a 1 s grace spent spinning": (*wrong, "no timer explains it", "is not about"),
            "the loop blocked 0.8 s after the deadline": (*wrong, "no timer explains it", "is not about"),
            "call_at a deadline long past": longer,
            "a thread timer with a number of its own": (*wrong, "did not come sooner"),
            **dict.fromkeys(list(answers)[-8:], ()),
        },
    )


def test_lab02_times_the_cut_where_it_cannot_watch_the_loop(quick_lab02, monkeypatch):
    # a loop without CPython's selector (uvloop, say): no timers seen, the cut is timed instead
    monkeypatch.setattr(lab02, "watched_loop", asyncio.new_event_loop)
    seen = []
    original = lab02._deadline_verdict
    monkeypatch.setattr(lab02, "_deadline_verdict", lambda cuts: seen.append(cuts) or original(cuts))
    answers = {"the solution": solution_namespace("02")["MyToolNode"], "a deadline of its own": OwnDeadline}
    assert_verdicts(
        verdicts(lab02.check_node, answers),
        {"the solution": (), "a deadline of its own": ("must be the node's `timeout`",)},
    )
    assert {(c[0][0], c[1][0]) for c in seen} == {("untimed", "untimed")}


def test_lab02_a_late_cut_and_a_stall_before_the_tool_starts_still_pass(quick_lab02):
    """The deadline is judged by the timer that cut the call, so a stall cannot fail a correct node.

    With the node's `timeout` the loop is blocked for 1.3 s just before the deadline: the cut comes
    about 1.3 s late, beyond any margin a timed check could allow. With the tenth of it, the loop is
    blocked for 0.3 s after the timer is set and before the tool starts, so the timer is already due
    when the tool begins."""

    class Stalls(Base):
        async def run(self, tool, call):
            if self.timeout is None or "query" not in call["args"]:
                return await super().run(tool, call)
            try:
                async with asyncio.timeout(self.timeout) as scope:
                    if self.timeout < 0.2:
                        time.sleep(0.3)
                    else:

                        async def block():
                            await asyncio.sleep(self.timeout * 0.9)
                            time.sleep(1.3)

                        asyncio.ensure_future(block())
                    return ToolMessage(
                        str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
                    )
            except TimeoutError as exc:
                if scope.expired():
                    return self.error(call, self.deadline(call))
                return self.error(call, f"Error: {exc!r}")

    seen = []
    original = lab02._deadline_verdict

    def spy(cuts):
        seen.append(cuts)
        return original(cuts)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lab02, "_deadline_verdict", spy)
        assert_verdicts(verdicts(lab02.check_node, {"stalls": Stalls}), {"stalls": ()})
    [[(way, _, timeout, cut), (short_way, _, short, cut_short)]] = seen
    assert (way, short_way) == ("its deadline", "its deadline")
    assert cut > timeout + 1.0, "the long cut was not late: the test did not stall the loop"
    assert cut_short < 0.3, "the short timer was not due before the tool started"


def test_lab02_a_digit_of_the_nonce_is_not_the_timeout(quick_lab02, monkeypatch):
    """The reference solution failed ~1.6 % of runs: timeout 1.0 → "1", found in the hex nonce."""
    own = 'Error: TimeoutError("upstream gateway timed out (the tool\'s own error) [a1b2c3]")'
    assert not lab02._mentions_deadline(own.replace(f"{lab02.GATEWAY_MESSAGE} [a1b2c3]", ""), 1.0)
    assert not lab02._mentions_deadline("[111111] [1a2b3c] call_1f", 1.0)
    assert lab02._mentions_deadline("Error: 'web_search' took longer than 1.0 s.", 1.0)
    assert lab02._mentions_deadline("gave up after 1 s", 1.0)

    class Ones(random.Random):  # the attacker's draw: timeout 1.0, a nonce of ones
        def uniform(self, a, b):
            return 1.0 / lab02.TIMEOUT

        def getrandbits(self, k):
            return int("1" * 32, 16) if k == 128 else super().getrandbits(k)

    monkeypatch.setattr(core, "rng", Ones)
    assert lab02.check_node(solution_namespace("02")["MyToolNode"])


@pytest.mark.timing
def test_lab02_verdict_survives_a_stall(monkeypatch, capsys):
    # The check's own deadline (lab02.TIMEOUT, about 1 s), not quick_lab02's 0.6 s: a good call must
    # come in under it with this test's 0.3 s stall and another one from the machine on top.
    monkeypatch.setattr(lab02, "HANG", 2.4)
    monkeypatch.setattr(core, "LIMIT", 5.0)

    class Stalled(Base):
        runs = 0

        async def __call__(self, state):
            Stalled.runs += 1
            if Stalled.runs % 2:  # every other run: the verdict, not the suite's time, is under test
                return await super().__call__(state)

            async def stall():
                await asyncio.sleep(0.005)
                time.sleep(0.3)

            update, _ = await asyncio.gather(super().__call__(state), stall())
            return update

    lab02.q1.check({"MyToolNode": Stalled})
    assert "✔ q1 passed" in capsys.readouterr().out


# -- what a determined learner tries: a swallowed interrupt, caps of its own, faked answers ------------
class SwallowsInterrupt(Base):
    """`except Exception` answers everything, GraphInterrupt included (the lesson's change 4 left out)."""

    async def within(self, seconds, tool, call):
        try:
            async with asyncio.timeout(seconds) as scope:
                return ToolMessage(
                    str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
                )
        except TimeoutError as exc:
            if scope.expired():
                return self.error(call, self.deadline(call))
            return self.error(call, f"Error: {exc!r}")
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class FixedSemaphore(Base):
    """`Semaphore(3)` whenever a limit is asked for: a number of its own in place of max_concurrency."""

    def limit(self):
        return asyncio.Semaphore(3) if self.max_concurrency else contextlib.nullcontext()


class CapOfItsOwn(Base):
    """`Semaphore(self.max_concurrency or 8)`: a cap of its own when no limit is asked for."""

    def limit(self):
        return asyncio.Semaphore(self.max_concurrency or 8)


class Answer(ToolMessage):
    """A ToolMessage subclass: the faked outcome an attacker returns."""


class SubclassedAnswers(Base):
    async def __call__(self, state):
        update = await super().__call__(state)
        return {"messages": [Answer(**m.model_dump()) for m in update["messages"]]}


class ReraisesAsInterruptOnly(Base):
    """Correct: re-raises only `GraphInterrupt` (what `interrupt()` raises), answers everything else."""

    async def within(self, seconds, tool, call):
        from langgraph.errors import GraphInterrupt

        try:
            return await super().within(seconds, tool, call)
        except GraphInterrupt:
            raise


def test_lab02_a_swallowed_interrupt_caps_of_its_own_and_faked_answers_are_refused_on_every_run(quick_lab02):
    wrong = {
        "swallows the interrupt": (
            "an interrupt() inside a tool must pause the graph",
            "re-raise `GraphBubbleUp`",
        ),
        "Semaphore(3) in place of max_concurrency": (
            "calls at once",
            "of your own in place of `max_concurrency`",
        ),
        "a TaskGroup that leaves the interrupt wrapped": ("ExceptionGroup", "unwrap"),
        "a cap of 8 without a limit": ("did not run together", "apply no cap of your own"),
        "ToolMessage subclass answers": ("an answer that is a Answer", "build each answer as"),
    }
    classes = {
        "swallows the interrupt": SwallowsInterrupt,
        "Semaphore(3) in place of max_concurrency": FixedSemaphore,
        "a cap of 8 without a limit": CapOfItsOwn,
        "ToolMessage subclass answers": SubclassedAnswers,
        "a TaskGroup that leaves the interrupt wrapped": TaskGroupWrapsTheInterrupt,
    }
    answers = {f"{name} #{i}": cls for name, cls in classes.items() for i in (1,)}
    answers |= {
        "the solution": solution_namespace("02")["MyToolNode"],
        "GraphInterrupt re-raised": ReraisesAsInterruptOnly,
    }
    expected = {f"{name} #{i}": wrong[name] for name in classes for i in (1,)}
    expected |= {"the solution": (), "GraphInterrupt re-raised": ()}
    assert_verdicts(verdicts(lab02.check_node, answers), expected)


def test_lab02_every_draw_holds_every_hard_case():
    for _ in range(200):
        c = lab02._draw(Base)
        assert c.limits[0] != c.limits[1] and 12 <= c.many <= 16
        assert c.near in lab02.NEAR_NAMES and c.search in lab02.SEARCH_NAMES and c.city != c.other
    titles = [title for title, _ in lab02.CASES]
    for words in (
        "unknown names",
        "bad arguments",
        "a hanging call",
        "own TimeoutError",
        "timeout=None",
        "calls run together",
        "max_concurrency",
        "per run",
        "StateGraph",
        "interrupt()",
    ):
        assert any(words in title for title in titles), words


def test_lab02_each_case_is_a_small_function_and_the_constants_are_immutable():
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(lab02))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith(("_case_", "check_")):
            assert node.end_lineno - node.lineno < 80, (node.name, node.end_lineno - node.lineno)
        if isinstance(node, ast.Assign):
            for target in node.targets:
                value = getattr(lab02, target.id)
                if target.id not in ("q1", "_SCHEMAS_LOCK"):
                    assert isinstance(value, str | int | float | tuple | frozenset | re.Pattern), target.id
