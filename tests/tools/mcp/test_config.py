"""Server settings: the policy's `mcp` list, config files, and servers named on the command line."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cli.mcp import with_servers
from core.errors import HarnessError
from core.mcp_settings import McpServer
from core.presets import load_policy
from tools.mcp.config import expand_headers, from_command, from_url, gather, host_env, load_servers

POLICY = """
extends = "default"

[[mcp]]
name = "files"
command = "python"
args = ["servers/files.py"]
env = { LOG_LEVEL = "info" }
env_pass = ["GITHUB_TOKEN"]
trusted = true

[[mcp]]
name = "search"
url = "http://127.0.0.1:8000/mcp"
headers = { Authorization = "Bearer ${SEARCH_TOKEN}" }
approve = "never"
timeout_s = 5
"""


def test_a_policy_file_lists_servers_and_keeps_them_in_the_record(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(POLICY)
    policy = load_policy(str(path))
    files, search = policy.mcp
    assert files.trusted and files.approval == "never" and files.args == ["servers/files.py"]
    assert search.url and search.approval == "never" and search.timeout_s == 5
    assert not McpServer(name="x", command="c").trusted and McpServer(name="x", command="c").approval == "writes"
    assert policy.model_dump(mode="json")["mcp"][1]["headers"] == {"Authorization": "Bearer ${SEARCH_TOKEN}"}
    assert load_servers(path) == list(policy.mcp)


def test_a_yaml_file_may_hold_only_the_server_list(tmp_path):
    path = tmp_path / "servers.yaml"
    path.write_text("mcp:\n  - {name: web, url: 'https://example.org/mcp'}\n")
    [web] = load_servers(path)
    assert web.name == "web" and web.where == "https://example.org/mcp"


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"name": "a", "command": "x", "url": "http://h/mcp"}, "exactly one of"),
        ({"name": "a"}, "exactly one of"),
        ({"name": "a__b", "command": "x"}, "pattern"),
        ({"name": "a", "url": "ftp://h"}, "http://"),
        ({"name": "a", "command": "x", "trust": True}, "Extra inputs"),
    ],
)
def test_bad_settings_are_refused(settings, message):
    with pytest.raises(ValidationError, match=message):
        McpServer.model_validate(settings)


def test_a_bad_config_file_names_the_field(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[[mcp]]\nname = "a"\ncommand = "x"\ntimeout_s = -1\n')
    with pytest.raises(ValueError, match="server 1 is invalid: `timeout_s` Input should be greater than 0"):
        load_servers(path)


def test_the_child_gets_only_the_variables_named():
    server = McpServer(name="a", command="x", env={"MODE": "test"}, env_pass=["TOKEN", "ABSENT"])
    assert host_env(server, {"TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s"}) == {"TOKEN": "t", "MODE": "test"}


def test_headers_read_host_variables_when_the_connection_opens():
    server = McpServer(name="a", url="http://h/mcp", headers={"Authorization": "Bearer ${TOKEN}", "X": "plain"})
    assert expand_headers(server, {"TOKEN": "abc"}) == {"Authorization": "Bearer abc", "X": "plain"}
    with pytest.raises(ValueError, match=r"\$\{TOKEN\}, which is not set"):
        expand_headers(server, {})


def test_command_line_servers_get_plain_unique_names():
    assert from_command("python servers/my-files.py --root /tmp").name == "my_files"
    assert from_command("python -m tools.servers.git").name == "git"
    assert from_command("npx -y @modelcontextprotocol/server-filesystem /tmp").name == "server_filesystem"
    assert from_command("mcp-fetch").name == "mcp_fetch"
    named = from_command("fs=python server.py --flag=1")
    assert named.name == "fs" and named.args == ["server.py", "--flag=1"]
    assert from_url("http://127.0.0.1:9000/mcp").name == "127"
    assert from_url("docs=https://docs.example.org/mcp").name == "docs"
    servers = gather(["python a.py", "python a.py"], ["http://search.example.org/mcp"], [])
    assert [s.name for s in servers] == ["a", "a-2", "search"]
    assert not any(s.trusted for s in servers)


def test_command_line_servers_join_the_policy_and_names_must_stay_unique(tmp_path):
    policy = load_policy("default")
    both = with_servers(policy, ["python a.py"], ["http://h/mcp"], None)
    assert [s.name for s in both.mcp] == ["a", "h"] and with_servers(policy, None, None, None) is policy
    with pytest.raises(HarnessError, match="Two MCP servers are named 'a'"):
        with_servers(both, ["a=python b.py"], None, None)
