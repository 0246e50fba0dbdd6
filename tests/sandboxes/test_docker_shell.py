"""The persistent shell: state persists, timeouts kill the command but not the session, output is capped."""

import threading
import time

from sandboxes.base import DEFAULT_OUTPUT_CAP


def test_cwd_and_exports_persist_between_commands(sandbox):
    assert sandbox.exec("mkdir -p repo && cd repo && export GREETING=hello", timeout=10).exit_code == 0
    r = sandbox.exec('pwd; echo "$GREETING"', timeout=10)
    assert r.output == "/workspace/repo\nhello\n"
    assert r.exit_code == 0


def test_exit_status_stderr_and_missing_newline(sandbox):
    r = sandbox.exec("echo out; echo err >&2; printf tail; exit_code() { return 7; }; exit_code", timeout=10)
    assert r.exit_code == 7
    assert r.output == "out\nerr\ntail"


def test_commands_cannot_read_the_protocol_from_stdin(sandbox):
    r = sandbox.exec("cat; echo after-cat", timeout=10)
    assert r.output == "after-cat\n"
    assert sandbox.exec("echo still-framed", timeout=10).output == "still-framed\n"


def test_syntax_error_is_a_result_and_the_shell_goes_on(sandbox):
    r = sandbox.exec("echo 'unterminated", timeout=10)
    assert r.exit_code == 2
    assert "unexpected EOF" in r.output
    assert sandbox.exec("echo fine", timeout=10).output == "fine\n"


def test_exit_ends_the_shell_and_the_next_command_gets_a_new_one_in_the_same_cwd(sandbox):
    sandbox.exec("cd /tmp", timeout=10)
    r = sandbox.exec("exit 3", timeout=10)
    assert r.exit_code == 3
    assert r.output.startswith(
        "\n[sandbox: the shell exited with status 3; the next command runs in a new shell, starting in /tmp:"
    )
    assert sandbox.exec("pwd", timeout=10).output == "/tmp\n"


def test_sleep_times_out_and_the_same_shell_keeps_its_state(sandbox):
    sandbox.exec("cd /tmp && export KEPT=yes", timeout=10)
    start = time.monotonic()
    r = sandbox.exec("echo before; sleep 1000", timeout=1.5)
    assert time.monotonic() - start < 5
    assert r.timed_out and r.exit_code is None
    assert r.output.startswith("before\n")
    after = sandbox.exec('pwd; echo "$KEPT"; ls /proc | grep -c "^[0-9]"', timeout=10)
    assert after.output.splitlines()[:2] == ["/tmp", "yes"]
    # No sleep left behind: docker-init, the idle process, two shells, ls and grep.
    assert int(after.output.splitlines()[2]) <= 6


def test_a_loop_of_builtins_times_out_and_a_fresh_shell_takes_over_saying_what_was_lost(sandbox):
    sandbox.exec("cd /tmp && export KEPT=1", timeout=10)
    start = time.monotonic()
    r = sandbox.exec("trap '' TERM; echo looping; while :; do :; done", timeout=1)
    assert r.timed_out and r.exit_code is None and time.monotonic() - start < 4
    assert r.output == (
        "looping\n\n[sandbox: the shell itself was still busy at the timeout and was killed; the next command runs "
        "in a new shell, starting in /tmp: the old shell's exported variables, shell functions and background jobs "
        "are gone]"
    )
    assert sandbox.exec('pwd; echo "${KEPT:-unset}"', timeout=10).output == "/tmp\nunset\n"


def test_endless_output_is_capped_and_drained(sandbox):
    r = sandbox.exec("yes", timeout=2)
    assert r.timed_out and r.output_capped
    assert len(r.output) == DEFAULT_OUTPUT_CAP
    assert r.output.startswith("y\ny\n")
    r = sandbox.exec("yes | head -c 20000000; echo", timeout=30)
    assert r.exit_code == 0 and r.output_capped
    assert len(r.output) == DEFAULT_OUTPUT_CAP
    assert sandbox.exec("echo small", timeout=10).output == "small\n"


def test_a_command_that_kills_its_own_shell_gets_a_result_and_a_new_shell(sandbox):
    r = sandbox.exec("kill -KILL $$", timeout=10)
    assert r.exit_code == 137
    assert sandbox.alive()
    assert sandbox.exec("echo next", timeout=10).output == "next\n"


def test_threads_sharing_one_sandbox_take_turns(sandbox):
    results, errors = {}, []

    def work(i):
        try:
            results[i] = [sandbox.exec(f"echo {i}-{j}", timeout=10).output for j in range(25)]
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(results[i] == [f"{i}-{j}\n" for j in range(25)] for i in range(4))


def test_multi_line_commands_heredocs_and_quotes(sandbox):
    command = "cat > \"it's.txt\" <<'EOF'\nline one\n  $NOT_EXPANDED 'quoted' \"double\"\nEOF\nfor i in 1 2; do\n  echo \"n=$i\"\ndone\ncat it\\'s.txt"
    r = sandbox.exec(command, timeout=10)
    assert r.exit_code == 0
    assert r.output == "n=1\nn=2\nline one\n  $NOT_EXPANDED 'quoted' \"double\"\n"


def test_a_command_that_closes_or_redirects_the_shells_output_changes_it_for_itself_only(sandbox):
    sandbox.exec("cd /tmp && export KEPT=1", timeout=10)
    assert sandbox.exec("exec 1>&-; exec 2>&-", timeout=10).exit_code == 0
    assert sandbox.exec("echo after-close >&2", timeout=10).output == "after-close\n"
    assert sandbox.exec("exec >/tmp/log.txt; echo hidden", timeout=10).output == ""
    assert sandbox.exec("echo after-redirect; cat /tmp/log.txt", timeout=10).output == "after-redirect\nhidden\n"
    assert sandbox.exec('exec {__h_fd}>&-; echo "$PWD $KEPT"', timeout=10).output == "/tmp 1\n"
    assert sandbox.shell_state().env == {"KEPT": "1"}  # what a snapshot reads at the stop


def test_exec_of_another_program_in_the_shells_place_is_said_and_a_new_shell_takes_over(sandbox):
    sandbox.exec("cd /tmp", timeout=10)
    r = sandbox.exec("exec python3 -c 'print(1)'", timeout=10)
    assert r.output.startswith(
        "1\n\n[sandbox: the shell was replaced by the program the command `exec`s, which exited with status 0; "
        "the next command runs in a new shell, starting in /tmp:"
    )
    start = time.monotonic()
    r = sandbox.exec("exec sleep 100", timeout=1)
    assert r.timed_out and time.monotonic() - start < 5
    assert "the program the command `exec`s in the shell's place was still running at the timeout" in r.output
    assert sandbox.exec("pwd", timeout=10).output == "/tmp\n"


def test_binary_output_reaches_the_model_as_text(sandbox):
    # An odd byte in a text line is escaped; a binary run is one note, and so is a short line with an odd byte
    # right after one (a fragment of the same bytes, as random data splits at its newlines).
    command = "echo start; printf 'a\\x01b\\xff\\n'; head -c 9700 /dev/zero; echo; printf 'c\\x02\\n'; echo end"
    r = sandbox.exec(command, timeout=10)
    assert r.output == (
        "start\na\\x01b\\xff\n"
        "[binary output: 9,704 bytes not shown; pipe it through `xxd | head` or `strings` to look at it]\nend\n"
    )


def test_a_command_abandoned_on_a_signal_is_killed_and_the_shell_stays_in_step(sandbox):
    from core import interrupts

    sandbox.exec("cd /tmp && export KEPT=1", timeout=10)
    threading.Timer(0.5, interrupts.request, ["SIGINT"]).start()
    start = time.monotonic()
    try:
        sandbox.exec("sleep 30", timeout=60)
        raise AssertionError("the command was not abandoned")
    except interrupts.Abandoned as e:
        assert e.signal_name == "SIGINT"
    finally:
        interrupts.clear()
    assert time.monotonic() - start < 5
    state = sandbox.shell_state()  # the snapshot at the stop reads the shell's own state, not the old command's
    assert (state.cwd, state.env) == ("/tmp", {"KEPT": "1"})
    sleeping = "grep -lx sleep /proc/[0-9]*/comm | wc -l"  # the container's own idle `sleep infinity` alone
    assert sandbox.exec(f"{sleeping}; echo $KEPT", timeout=10).output == "1\n1\n"
