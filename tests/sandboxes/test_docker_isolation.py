"""Isolation against the real engine: network, user, limits, environment, crosstalk."""

import subprocess
import threading
import time

from sandboxes.docker import DockerSandbox
from sandboxes.docker_options import DockerOptions


def test_outbound_connections_fail_fast(sandbox):
    code = "import socket; socket.create_connection(('1.1.1.1', 80), timeout=10)"
    start = time.monotonic()
    r = sandbox.exec(f'python3 -c "{code}"', timeout=20)
    assert r.exit_code != 0
    assert "unreachable" in r.output.lower()
    assert time.monotonic() - start < 3
    assert sandbox.exec("getent hosts deb.debian.org", timeout=20).exit_code != 0


def test_commands_run_as_non_root_without_capabilities(sandbox):
    r = sandbox.exec("id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status", timeout=10)
    lines = r.output.split()
    assert lines[0] == "1000"
    assert lines[lines.index("CapEff:") + 1] == "0000000000000000"
    assert lines[lines.index("CapBnd:") + 1] == "0000000000000000"
    assert lines[lines.index("NoNewPrivs:") + 1] == "1"
    assert sandbox.exec("touch /etc/x", timeout=10).exit_code != 0  # read-only root
    assert sandbox.exec("touch /workspace/x /tmp/x", timeout=10).exit_code == 0


def test_fork_bomb_is_contained_by_the_pids_limit(docker_ready):
    with DockerSandbox.start(DockerOptions(pids=64), client=docker_ready) as sb:
        counts, done = [], threading.Event()

        def watch():  # the engine's count of processes in the container while the bomb runs
            while not done.is_set():
                counts.append(sb.api.stats(sb.container.id, stream=False, one_shot=True)["pids_stats"]["current"])

        watcher = threading.Thread(target=watch)
        watcher.start()
        r = sb.exec("bomb() { bomb | bomb & }; bomb; sleep 1000", timeout=3)
        done.set()
        watcher.join()
        assert r.timed_out
        assert "fork: retry: Resource temporarily unavailable" in r.output  # the bomb hit the limit
        assert max(counts) <= 64  # and the limit held
        # The host could still start processes while the bomb ran.
        assert subprocess.run(["true"]).returncode == 0
        # The sweep stopped and killed the bomb: the sandbox works again.
        after = sb.exec("echo alive; ls /proc | grep -c '^[0-9]'", timeout=20)
        assert after.output.splitlines()[0] == "alive"
        assert int(after.output.splitlines()[1]) <= 6
        assert sb.alive()


def test_memory_hog_is_killed_and_the_sandbox_survives(docker_ready):
    with DockerSandbox.start(DockerOptions(memory="256m"), client=docker_ready) as sb:
        r = sb.exec("python3 -c 'b = bytearray(2 * 1024**3); print(len(b))'", timeout=60)
        assert r.exit_code == 137  # SIGKILL from the kernel's OOM killer
        assert "[sandbox: a process was killed for going over the memory limit (256m)]" in r.output
        assert sb.alive()
        assert sb.exec("echo ok", timeout=10).output == "ok\n"


def test_host_secrets_never_enter_the_container(docker_ready, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-host-secret-anthropic")
    monkeypatch.setenv("HARNESS_TEST_ALLOWED", "visible")
    with DockerSandbox.start(DockerOptions(env_from_host=["HARNESS_TEST_ALLOWED"]), client=docker_ready) as sb:
        # The container's own environment (its idle process's, which its commands may not read) and a shell's.
        env = sb.exec("env", timeout=10).output + "\n".join(sb.container.attrs["Config"]["Env"])
    assert "sk-host-secret" not in env
    assert "API_KEY" not in env
    assert "HARNESS_TEST_ALLOWED=visible" in env


def test_four_sandboxes_run_concurrently_without_crosstalk(docker_ready):
    seen: dict[int, list[str]] = {}
    errors = []

    def work(i: int) -> None:
        try:
            with DockerSandbox.start(client=docker_ready) as sb:
                sb.write_file("me.txt", f"sandbox-{i}".encode())
                sb.exec(f"export ME=sandbox-{i}", timeout=10)
                seen[i] = [
                    sb.exec('echo "$ME $(cat me.txt) $(ls /workspace | wc -l)"', timeout=10).output for _ in range(50)
                ]
        except Exception as e:  # reported below with its sandbox number
            errors.append((i, e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(4):
        assert set(seen[i]) == {f"sandbox-{i} sandbox-{i} 1\n"}
