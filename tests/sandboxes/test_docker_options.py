"""The sandbox options are plain data: a policy file can hold them, and typos are refused."""

import pytest
from pydantic import ValidationError

from sandboxes.docker_container import IDLE_UID, run_kwargs, run_labels
from sandboxes.docker_options import LABEL, OPTIONS_LABEL, RUN_LABEL, DockerOptions


def test_defaults_are_the_locked_down_ones(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    kw = run_kwargs(DockerOptions(), run_labels(DockerOptions(), None))
    # The container's own processes are not the sandbox user's (1000:1000, which every shell names): it cannot kill them.
    assert kw["network_mode"] == "none" and kw["user"] == f"{IDLE_UID}:{IDLE_UID}" and kw["working_dir"] == "/"
    assert kw["cap_drop"] == ["ALL"] and kw["cap_add"] is None
    assert kw["security_opt"] == ["no-new-privileges"] and kw["read_only"] is True
    # 1 GiB for processes and 1 GiB for the workspace, a tmpfs whose pages count as memory.
    assert kw["pids_limit"] == 256 and kw["mem_limit"] == kw["memswap_limit"] == 2 << 30
    [mount] = kw["mounts"]
    assert (
        mount["Target"] == "/workspace"
        and mount["VolumeOptions"]["DriverConfig"]["Options"]["o"] == "size=1g,uid=1000,gid=1000,mode=0755"
    )
    assert set(kw["environment"]) == {"PATH", "HOME", "LANG"}
    assert kw["labels"][LABEL] == "1"


def test_a_runs_sandbox_is_labelled_with_its_folder_and_options(tmp_path):
    opts = DockerOptions(memory="2g")
    labels = run_labels(opts, tmp_path / "run")
    assert labels[RUN_LABEL] == str(tmp_path / "run")
    assert DockerOptions.model_validate_json(labels[OPTIONS_LABEL]) == opts
    assert RUN_LABEL not in run_labels(opts, None)


def test_options_round_trip_as_data_and_refuse_unknown_fields():
    opts = DockerOptions.model_validate({"image": "python:3.11-slim", "network": "bridge", "memory": "2g"})
    assert DockerOptions.model_validate_json(opts.model_dump_json()) == opts
    with pytest.raises(ValidationError):
        DockerOptions.model_validate({"netwrok": "bridge"})


def test_credentials_cannot_be_copied_from_the_host_even_by_name():
    with pytest.raises(ValidationError, match="OPENAI_API_KEY, GITHUB_TOKEN look like credentials"):
        DockerOptions(env_from_host=["LANG", "OPENAI_API_KEY", "GITHUB_TOKEN"])
    assert DockerOptions(env_from_host=["TZ"]).env_from_host == ["TZ"]
