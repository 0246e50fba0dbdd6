import pytest

from configlite import Config, ConfigError, ParseError, parse

TEXT = """
# service settings
[server]
host = example.org
port = 8080
debug = yes
tags = a, b ,c

[empty]
"""


def cfg():
    return Config(parse(TEXT))


def test_get_and_types():
    c = cfg()
    assert c.get("server", "HOST") == "example.org"
    assert c.get_int("server", "port") == 8080
    assert c.get_bool("server", "debug") is True
    assert c.get_list("server", "tags") == ["a", "b", "c"]
    assert c.sections() == ["empty", "server"]


def test_defaults():
    assert cfg().get("server", "user", "root") == "root"
    assert cfg().get_int("server", "workers", 4) == 4


def test_bad_values():
    with pytest.raises(ConfigError):
        cfg().get_int("server", "host")


def test_parse_errors_name_the_line():
    with pytest.raises(ParseError) as err:
        parse("[a]\nno equals sign")
    assert err.value.line == 2
    with pytest.raises(ParseError):
        parse("key = 1")
