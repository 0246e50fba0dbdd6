"""URL slugs: lowercase ASCII words joined by a separator."""

import re
import unicodedata

_NOT_WORD = re.compile(r"[^a-z0-9]+")


def ascii_fold(text: str) -> str:
    """Drop accents: 'Crème brûlée' -> 'Creme brulee'."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def slugify(text: str, sep: str = "-", max_length: int | None = None) -> str:
    slug = _NOT_WORD.sub(sep, ascii_fold(text).lower()).strip(sep)
    if max_length is not None and len(slug) > max_length:
        slug = slug[:max_length].rstrip(sep)
    return slug
