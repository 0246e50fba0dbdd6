"""Check a dataset against its own environment: do its tests flip as declared?

    harness swe validate DATASET [--specs FILE] [--repos DIR] [--reruns K]

For every instance the tests run in fresh containers, with the gold patch (K times with
--reruns K) and once with no patch. Declared right means: every FAIL_TO_PASS test fails without
the patch and passes with it, and every PASS_TO_PASS test passes both times. Anything else is
listed, per test, with the logs of both runs under <out>/logs/validate/<instance_id>/{gold,empty}/
(the gold patch's reruns under gold/reruns/<n>/). A test whose status differs between the gold
runs is flaky (evals/swe/flaky.py): it is listed apart and judged on nothing else, and the
command writes every flaky test to a list that grading can leave out (--exclude-flaky FILE).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import docker
from pydantic import BaseModel, Field

from evals.swe.flaky import flaky_tests
from evals.swe.grader import GradingError, InstanceLog, NotApplied, run_tests
from evals.swe.task import SweInstance
from evals.swe.testlog import lookup, maintained, passed


class Flip(BaseModel):
    instance_id: str
    error: str | None = None  # the gold patch did not apply, or the environment or the tests broke
    fail_to_pass_passing_before: list[str] = Field(default_factory=list)
    fail_to_pass_failing_after: list[str] = Field(default_factory=list)
    pass_to_pass_failing_before: list[str] = Field(default_factory=list)
    pass_to_pass_failing_after: list[str] = Field(default_factory=list)
    flaky: list[str] = Field(default_factory=list)  # status differed between the gold patch's runs

    @property
    def as_declared(self) -> bool:
        return self.error is None and not (
            self.fail_to_pass_passing_before
            or self.fail_to_pass_failing_after
            or self.pass_to_pass_failing_before
            or self.pass_to_pass_failing_after
        )


def validate_instance(
    inst: SweInstance, client: docker.DockerClient, logs: Path, progress: Callable[[str], None] = lambda s: None
) -> Flip:
    gold, empty = InstanceLog(logs / "gold", progress), InstanceLog(logs / "empty", progress)
    runs = [(gold, inst.patch), *((gold.rerun(n), inst.patch) for n in range(2, inst.reruns + 1)), (empty, "")]
    found = []
    for out, patch in runs:
        try:
            found.append(run_tests(inst, patch, client, out))
        except NotApplied:
            return Flip(instance_id=inst.instance_id, error="the gold patch does not apply")
        except GradingError as e:
            return Flip(instance_id=inst.instance_id, error=f"{'gold' if patch else 'empty'} run: {e}")
    flaky = flaky_tests(inst, found[:-1])
    before, after = lookup(found[-1]), lookup(found[0])
    f2p = [t for t in inst.FAIL_TO_PASS if t not in flaky]
    p2p = [t for t in inst.PASS_TO_PASS if t not in flaky]
    return Flip(
        instance_id=inst.instance_id,
        fail_to_pass_passing_before=[t for t in f2p if passed(before(t))],
        fail_to_pass_failing_after=[t for t in f2p if not passed(after(t))],
        pass_to_pass_failing_before=[t for t in p2p if not maintained(before(t))],
        pass_to_pass_failing_after=[t for t in p2p if not maintained(after(t))],
        flaky=flaky,
    )


def validate(
    instances: list[SweInstance],
    out: Path,
    on_done: Callable[[Flip], None] = lambda f: None,
    progress: Callable[[str], None] = lambda s: None,
) -> list[Flip]:
    flips = []
    with closing(docker.from_env(timeout=300)) as client:
        for inst in instances:
            flips.append(validate_instance(inst, client, out / "logs" / "validate" / inst.instance_id, progress))
            on_done(flips[-1])
    return flips
