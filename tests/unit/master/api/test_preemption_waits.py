"""Preemption long polls share one watcher; each still answers as it did on its own timer."""

from __future__ import annotations

import asyncio
import time

import pytest

from trialkit.master.api._preemption import PreemptionWaits


def test_waiters_hear_their_own_preemption_timeout_or_a_stopping_master() -> None:
    flags: set[int] = set()
    stopping = False
    waits = PreemptionWaits(lambda t: t in flags, lambda: stopping)

    async def scenario() -> tuple[list[bool], float, bool]:
        nonlocal stopping
        polls = [asyncio.create_task(waits.wait(t, 30.0)) for t in range(1, 201)]
        await asyncio.sleep(0.1)
        flags.update({7, 8})
        t0 = time.monotonic()
        done, _ = await asyncio.wait(polls, timeout=5, return_when=asyncio.FIRST_COMPLETED)
        heard = time.monotonic() - t0
        timed_out = await waits.wait(99, 0.2)  # not flagged: False after its timeout
        stopping = True
        rest = await asyncio.gather(*polls)
        return rest, heard, timed_out

    answers, heard, timed_out = asyncio.run(scenario())
    assert [t for t, a in enumerate(answers, start=1) if a] == [7, 8]  # the rest: stopping
    assert heard < 2.0 and timed_out is False


def test_a_flag_already_set_answers_without_waiting() -> None:
    waits = PreemptionWaits(lambda t: True, lambda: False)
    assert asyncio.run(waits.wait(1, 0.0)) is True
    assert asyncio.run(PreemptionWaits(lambda t: False, lambda: False).wait(1, 0.0)) is False


def test_two_hundred_waiters_wake_the_loop_once_a_round(monkeypatch: pytest.MonkeyPatch) -> None:
    waits = PreemptionWaits(lambda t: False, lambda: False)
    sleeps = 0
    real_sleep = asyncio.sleep

    async def counting_sleep(delay: float) -> None:
        nonlocal sleeps
        sleeps += 1
        await real_sleep(delay)

    async def scenario() -> list[bool]:
        return await asyncio.gather(*(waits.wait(t, 0.5) for t in range(200)))

    monkeypatch.setattr(asyncio, "sleep", counting_sleep)
    assert asyncio.run(scenario()) == [False] * 200
    # ~0.5 s of 50 ms rounds: one watcher's sleeps, not 200 polls' (which made ~2,000).
    assert sleeps <= 15, sleeps
