"""The editor names the run-time facts file: the `factsFile` initialization option and the
`graphsafe.factsFile` workspace setting (lsp/settings.py), used for open buffers and the index."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from lsprotocol import types

from graphsafe.analyzer.discovery import ModuleNaming
from graphsafe.analyzer.run_facts import function_hashes
from graphsafe.config import Settings
from graphsafe.lsp import index
from graphsafe.lsp.settings import facts_file_option, resolve
from tests.lsp.client import Session

STEP = "import torch\n\n\ndef step(x, sched):  # graphsafe: region\n    if sched[0] > 0:\n        return x * 2\n    return x\n"
NOTE = "observed at run time: `sched` is a tensor"


def write_facts(root: Path, name: str = "traces/run.json") -> Path:
    """Facts saying `sched` of train.py's `step` is a tensor, at `root/name` (not the default path)."""
    digest = next(iter(function_hashes(STEP)["step"]))
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    relative_root = "/".join([".."] * (len(Path(name).parts) - 1)) or "."
    path.write_text(json.dumps({"version": 1, "root": relative_root, "files": {"train.py": {"functions": {"step": {
        "source_hash": digest, "values": {"sched": {"kind": "tensor", "changed": False}}}}}}}))
    return path


# --- settings and the index, in process ---------------------------------------------------------


def test_a_relative_facts_file_setting_is_read_from_the_workspace_folder(tmp_path):
    write_facts(tmp_path)
    resolved = resolve(tmp_path, facts_file="traces/run.json")
    assert resolved.settings.facts_file == (tmp_path / "traces" / "run.json").resolve()
    assert resolved.error is None


def test_a_facts_file_setting_naming_no_file_is_said_and_the_analysis_goes_on(tmp_path):
    resolved = resolve(tmp_path, facts_file="missing.json")
    assert resolved.settings.facts_file == (tmp_path / "missing.json").resolve()
    assert "missing.json is not a file" in resolved.error and "graphsafe trace --save-facts" in resolved.error


@pytest.mark.parametrize("value", [3, ["a.json"], {"path": "a.json"}, True])
def test_a_facts_file_setting_that_is_not_a_path_is_a_message(value):
    assert facts_file_option(value)[0] is None
    assert "must be a path" in facts_file_option(value)[1]


def test_an_empty_facts_file_setting_means_the_default(tmp_path):
    assert facts_file_option("") == (None, None) and facts_file_option(None) == (None, None)
    assert resolve(tmp_path).settings.facts_file is None


def test_the_index_attaches_the_facts_of_the_named_file(tmp_path):
    facts_file = write_facts(tmp_path)
    (tmp_path / "train.py").write_text(STEP)
    job = index.IndexJob([tmp_path / "train.py"], tmp_path, None, jobs=1, facts_file=facts_file)
    [facts] = job.run(threading.Event()).values()
    assert [(o.name, o.kind) for o in facts.observed] == [("sched", "tensor")]
    plain = index.IndexJob([tmp_path / "train.py"], tmp_path, None, jobs=1)  # no default file there
    assert list(plain.run(threading.Event()).values())[0].observed == ()


def test_a_file_changed_on_disk_keeps_the_facts_of_its_unchanged_functions(tmp_path):
    facts_file = write_facts(tmp_path)
    (tmp_path / "train.py").write_text(STEP)
    naming = ModuleNaming("train", False)
    settings = Settings(root=tmp_path, facts_file=facts_file)
    assert [o.name for o in index.read_facts(str(tmp_path / "train.py"), naming, settings).observed] == ["sched"]
    (tmp_path / "train.py").write_text(STEP.replace("x * 2", "x * 3"))  # `step` edited since the run
    assert index.read_facts(str(tmp_path / "train.py"), naming, settings).observed == ()


# --- the server ---------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_facts_file_initialization_option_is_used_for_open_buffers(session: Session):
    write_facts(session.root)
    await session.initialize({"factsFile": "traces/run.json"})
    uri = session.open("train.py", STEP)
    [d] = await session.wait_for_version(uri)
    assert d.code == "GS201" and NOTE in d.message


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_workspace_setting_switches_the_facts_file_and_analyses_open_buffers_again(session: Session):
    write_facts(session.root)
    await session.initialize()
    uri = session.open("train.py", STEP)
    assert await session.wait_for_version(uri) == []  # no facts: `sched` is Unknown
    session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"graphsafe": {"factsFile": "traces/run.json"}}))
    await session.wait_until(lambda: [NOTE in d.message for d in session.diagnostics(uri)] == [True],
                             "the GS201 the named facts decide")
    session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"graphsafe": {"factsFile": None}}))  # back to the default: no .graphsafe/facts.json here
    await session.wait_until(lambda: session.diagnostics(uri) == [], "the GS201 gone with the facts")


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_bad_facts_file_option_is_a_message_and_buffers_are_still_analysed(session: Session):
    await session.initialize({"factsFile": 3})
    uri = session.open("train.py", "import torch\n\n\ndef step(x: torch.Tensor):  # graphsafe: region\n    return x.item()\n")
    assert [d.code for d in await session.wait_for_version(uri)] == ["GS101"]
    await session.wait_until(lambda: any("factsFile must be a path" in m.message for m in session.client.messages),
                             "the message about factsFile")
