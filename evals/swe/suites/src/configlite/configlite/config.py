"""Typed access to parsed sections."""

from configlite.errors import ConfigError, MissingKey

TRUE = frozenset({"1", "yes", "true", "on"})
FALSE = frozenset({"0", "no", "false", "off"})
_MISSING = object()


class Config:
    def __init__(self, sections: dict):
        self._sections = sections

    def sections(self) -> list:
        return sorted(self._sections)

    def get(self, section: str, key: str, default=_MISSING) -> str:
        try:
            return self._sections[section][key.lower()]
        except KeyError:
            if default is not _MISSING:
                return default
            raise MissingKey(section, key) from None

    def get_int(self, section: str, key: str, default=_MISSING) -> int:
        value = self.get(section, key, default)
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"[{section}] {key} = {value!r} is not an integer") from None

    def get_bool(self, section: str, key: str, default=_MISSING) -> bool:
        value = self.get(section, key, default)
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in TRUE:
            return True
        if word in FALSE:
            return False
        raise ConfigError(f"[{section}] {key} = {value!r} is not a boolean")

    def get_list(self, section: str, key: str, default=_MISSING) -> list:
        value = self.get(section, key, default)
        if isinstance(value, list):
            return value
        return [part.strip() for part in value.split(",") if part.strip()]
