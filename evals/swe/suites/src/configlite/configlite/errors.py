class ConfigError(Exception):
    """Every error of this package."""


class ParseError(ConfigError):
    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line = line


class MissingKey(ConfigError):
    def __init__(self, section: str, key: str):
        super().__init__(f"[{section}] has no key {key!r}")
        self.section = section
        self.key = key
