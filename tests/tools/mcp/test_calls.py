"""Calls to real MCP servers: results, errors, timeouts, crashes and tools that appear at run time.

The dispatcher is the boundary that must never raise, so most checks go through
`agent.dispatch` and look at the observation the model would see.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

from core.mcp_settings import McpServer
from tools.base import Registry
from tools.mcp import with_mcp

from .conftest import SERVERS, alive, context, free_port, observe, said, stdio, wait_for_port


def test_text_and_structured_results(trusted_basic, tmp_path):
    obs = observe(trusted_basic, tmp_path, "basic__echo", text="hello")
    assert obs.status == "ok" and obs.text == "hello"  # the {"result": ...} wrapper adds nothing new
    obs = observe(trusted_basic, tmp_path, "basic__weather", city="Oslo")
    assert obs.status == "ok" and json.loads(obs.text) == {"city": "Oslo", "celsius": 21}


def test_images_and_resources_become_references(trusted_basic, tmp_path):
    obs = observe(trusted_basic, tmp_path, "basic__picture")
    assert obs.text.splitlines() == [
        "here is the chart",
        "[image: image/png, 8 bytes, not shown]",
        "[resource link: file:///data/report.csv (report, text/csv)]",
        "[resource: mem://notes (text/plain, 9 bytes)]",
        "note body",
    ]


def test_is_error_becomes_an_error_observation(trusted_basic, tmp_path):
    obs = observe(trusted_basic, tmp_path, "basic__fail")
    assert obs.status == "error" and obs.error_kind == "tool_error" and "the disk is full" in obs.text


def test_a_hanging_tool_times_out_as_an_observation(trusted_basic, tmp_path):
    start = time.monotonic()
    obs = observe(trusted_basic, tmp_path, "basic__hang", within_s=1.5)
    assert obs.status == "timeout" and "gave no answer within 1.5 s" in obs.text
    assert "the call may still be running there" in obs.text
    assert time.monotonic() - start < 5
    assert observe(trusted_basic, tmp_path, "basic__echo", text="still here").text == "still here"


def test_arguments_the_server_rejects_are_an_error_observation(trusted_basic, tmp_path):
    obs = observe(trusted_basic, tmp_path, "basic__echo", wrong=1)
    assert obs.status == "error" and "text" in obs.text


def test_a_tool_added_at_run_time_appears_after_the_change_notification(trusted_basic, tmp_path):
    assert trusted_basic.get("basic__late") is None
    assert observe(trusted_basic, tmp_path, "basic__grow").status == "ok"
    deadline = time.monotonic() + 10
    while trusted_basic.get("basic__late") is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert observe(trusted_basic, tmp_path, "basic__late").text == "late tool here"
    assert "basic__echo" in trusted_basic.names()  # the rest of the server's tools stay


def test_a_tool_added_to_the_registry_stays_when_a_server_changes_its_list(tmp_path):
    with with_mcp([stdio("mine", "basic.py", trusted=True)], Registry()) as registry:
        extra = replace(registry.get("mine__echo"), name="extra")
        registry.add(extra)
        assert observe(registry, tmp_path, "mine__grow").status == "ok"
        deadline = time.monotonic() + 10
        while registry.get("mine__late") is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert registry.get("mine__late") is not None and registry.get("extra") is extra


def test_a_handshake_era_connection_also_follows_tool_list_changes(tmp_path):
    with with_mcp([stdio("old", "basic.py", protocol="legacy", trusted=True)], Registry()) as registry:
        assert observe(registry, tmp_path, "old__grow").status == "ok"
        deadline = time.monotonic() + 10
        while registry.get("old__late") is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert observe(registry, tmp_path, "old__late").text == "late tool here"


def test_a_server_killed_between_calls_is_restarted_before_the_next_call(tmp_path):
    pidfile = tmp_path / "pid"
    with with_mcp([stdio("victim", "basic.py", "--pidfile", str(pidfile), trusted=True)], Registry()) as registry:
        os.kill(int(pidfile.read_text()), signal.SIGKILL)
        connection = registry.mcp._connections["victim"]
        deadline = time.monotonic() + 10
        while not connection.lost and time.monotonic() < deadline:  # the change stream sees the drop
            time.sleep(0.05)
        obs = observe(registry, tmp_path, "victim__echo", text="again")
        assert obs.status == "ok" and obs.text.endswith("\nagain")
        assert "MCP server victim crashed (its connection closed since the last call)" in obs.text
        assert "It was restarted" in obs.text


def test_a_crashed_server_is_reported_restarted_and_keeps_its_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_SECRET", "do-not-leak")
    monkeypatch.setenv("HARNESS_TEST_PASSED", "allowed")
    server = stdio("crashy", "basic.py", env={"MODE": "test"}, env_pass=["HARNESS_TEST_PASSED"])
    with with_mcp([server], Registry()) as registry:

        def probe(name: str) -> str:
            return said(observe(registry, tmp_path, "crashy__env_probe", name=name).text, "crashy")

        assert (probe("HARNESS_TEST_SECRET"), probe("HARNESS_TEST_PASSED"), probe("MODE")) == (
            "(unset)",
            "allowed",
            "test",
        )
        obs = observe(registry, tmp_path, "crashy__crash")
        assert obs.status == "error" and "MCP server crashy crashed" in obs.text
        assert "segfault in the flux capacitor" in obs.text and "It was restarted" in obs.text
        assert "may or may not have taken effect" in obs.text
        assert any("crashy crashed" in p for p in registry.mcp.problems)
        assert (probe("HARNESS_TEST_SECRET"), probe("HARNESS_TEST_PASSED")) == ("(unset)", "allowed")


def test_a_server_that_cannot_restart_answers_with_a_clear_error(tmp_path):
    marker = tmp_path / "started"
    with with_mcp([stdio("once", "basic.py", "--once", str(marker), reconnects=1)], Registry()) as registry:
        obs = observe(registry, tmp_path, "once__crash")
        assert obs.status == "error" and "It could not be restarted" in obs.text
        assert "refusing to start a second time" in obs.text
        later = observe(registry, tmp_path, "once__echo", text="anyone?")
        assert later.status == "error" and "Its tools cannot be used in this run" in later.text


def test_an_http_server_that_comes_back_is_reconnected(tmp_path):
    port = free_port()
    serve = [sys.executable, str(SERVERS / "basic.py"), "http", str(port)]
    process = subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        with with_mcp(
            [McpServer(name="web", url=f"http://127.0.0.1:{port}/mcp", trusted=True)], Registry()
        ) as registry:
            connection = registry.mcp._connections["web"]
            process.kill()
            process.wait(10)
            deadline = time.monotonic() + 10
            while not connection.lost and time.monotonic() < deadline:  # the change stream sees the drop
                time.sleep(0.05)
            process = subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_for_port(port, process)
            obs = observe(registry, tmp_path, "web__echo", text="back")
            assert obs.status == "ok" and obs.text.endswith("\nback")
            assert "MCP server web went away" in obs.text and "It was reconnected" in obs.text
    finally:
        process.kill()
        process.wait(10)


def test_with_no_reconnects_a_crash_ends_the_server(tmp_path):
    with with_mcp([stdio("fragile", "basic.py", reconnects=0)], Registry()) as registry:
        assert "not restarted again" in observe(registry, tmp_path, "fragile__crash").text
        assert "cannot be used" in observe(registry, tmp_path, "fragile__echo", text="x").text


def test_closing_stops_the_server_and_later_calls_are_answered_not_raised(tmp_path):
    pidfile = tmp_path / "pid"
    with with_mcp([stdio("stopme", "basic.py", "--pidfile", str(pidfile))], Registry()) as registry:
        pid = int(pidfile.read_text())
        assert alive(pid)
        echo = registry.get("stopme__echo")
    assert not alive(pid)
    result = echo.run(echo.args.model_validate({"text": "late"}), context())
    assert not result.ok and "closed" in result.text
