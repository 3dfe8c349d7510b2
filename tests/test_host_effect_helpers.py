"""A bare call, in a region, of a project function whose own work is host bookkeeping (logging,
containers it keeps) is reported at the call (GS501/GS503, analyzer/host_effect_helpers.py): the
helper is right outside the step, each call in the step runs once at capture."""

from __future__ import annotations

from tests.helpers import project_findings

BASE = """\
import logging

import torch

log = logging.getLogger(__name__)


class Agent:
    def __init__(self):
        self.tracking_data = {}
        self.rows = []

    def track_data(self, tag, value):
        self.tracking_data[tag].append(value)

    def say(self, text):
        log.info(text)

    def wait(self, x):
        self.rows.append(x)
        torch.cuda.synchronize()

    def scale(self, x):
        return x * 2

    def log(self, name, value):
        self.rows.append((name, value))
"""

PPO = """\
import torch
from base import Agent


class PPO(Agent):
    def update(self, x: torch.Tensor):  # graphsafe: region
        y = self.scale(x)
        self.track_data("loss", 1.0)
        self.track_data("value", 2.0)
        self.say("hello")
        self.wait(x)
        self.scale(x)
        self.log("a", 1.0)
        return y
"""


def findings(tmp_path):
    return {(name, line, code) for name, line, code in project_findings(tmp_path, {"base.py": BASE, "ppo.py": PPO})
            if name == "ppo.py"}


def test_each_call_of_a_helper_changing_a_kept_container_is_reported_at_the_call(tmp_path):
    found = findings(tmp_path)
    assert ("ppo.py", 8, "GS503") in found
    assert ("ppo.py", 9, "GS503") in found


def test_a_call_of_a_helper_that_logs_is_reported_at_the_call_as_logging(tmp_path):
    found = findings(tmp_path)
    assert ("ppo.py", 10, "GS501") in found
    assert not any(line == 10 and code == "GS503" for _, line, code in found)


def test_a_helper_doing_device_work_the_rules_report_is_left_to_its_own_lines(tmp_path):
    assert not any(line == 11 for _, line, _ in findings(tmp_path))  # `wait` also syncs: GS106 is its own


def test_a_helper_without_host_effects_and_a_logging_name_stay_silent_at_the_call(tmp_path):
    found = findings(tmp_path)
    assert not any(line == 12 for _, line, _ in found)  # `scale`
    assert not any(line == 13 and code == "GS503" for _, line, code in found)  # `log`: GS501's to judge
