"""Wrapping and truncating text to a width, in characters."""

ELLIPSIS = "…"


def truncate(text: str, width: int, ellipsis: str = ELLIPSIS) -> str:
    """At most `width` characters; when cut, the end is `ellipsis`."""
    if width < len(ellipsis):
        raise ValueError(f"width must be at least {len(ellipsis)}")
    if len(text) <= width:
        return text
    return text[: width - len(ellipsis)] + ellipsis


def wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap; a word longer than `width` gets a line of its own, cut into pieces."""
    if width < 1:
        raise ValueError("width must be positive")
    lines, line = [], ""
    for word in text.split():
        while len(word) > width:
            if line:
                lines.append(line)
                line = ""
            lines.append(word[:width])
            word = word[width:]
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines
