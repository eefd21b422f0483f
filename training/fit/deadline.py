"""A training run sized by the clock: `fit --hours H` ends after H hours of this sitting, with
its cosine schedule stretched or shrunk, as it goes, to anneal exactly then.

Why: the campaign trains for as long as a session lasts, on machines whose speed differs by 2×
and while other work shares the cores. A `--steps` guess that is too large leaves the saved
weights at a high learning rate, which can lose to the model it started from
(docs/studies/2026-11-25e.md); one too small leaves the core idle for the rest of the session.
So the run measures its own pace and re-plans its last step every step: the step count the
schedule aims at is where this pace lands at the deadline, never more than `--steps` (then a cap).
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: steps of a sitting before its pace is trusted (the first ones compile and fill caches)
WARM_STEPS = 20
#: the wall clock the deadline reads (a module attribute, so a test can give a run its own)
CLOCK: Callable[[], float] = time.monotonic


class Deadline:
    """Re-plans a run's step count from this sitting's pace, to end at a wall-clock time."""

    def __init__(
        self,
        hours: float,
        cap: int,
        step: int,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.clock = clock or CLOCK
        self.end = self.clock() + hours * 3600.0
        self.cap = cap
        self.first_step = step
        self.paced_from: tuple[int, float] | None = None  # (step, time) once warm

    def over(self) -> bool:
        """Whether the wall-clock time is up."""
        return self.clock() >= self.end

    def steps(self, step: int) -> int:
        """The step count to aim at, `step` steps done: the cap until the pace is known, `step`
        itself once the time is up (the run ends), else where the pace reaches the deadline."""
        now = self.clock()
        if now >= self.end:
            return step
        if self.paced_from is None:
            if step - self.first_step >= WARM_STEPS:
                self.paced_from = (step, now)
            return self.cap
        start_step, start_time = self.paced_from
        if step == start_step or now <= start_time:
            return self.cap
        pace = (step - start_step) / (now - start_time)  # steps per second, pauses included
        return max(step + 1, min(self.cap, int(step + pace * (self.end - now))))
