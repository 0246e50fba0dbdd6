"""Text utilities for titles, slugs, wrapping and previews."""

from textkit.case import title_case
from textkit.slug import slugify
from textkit.wrap import truncate, wrap

__all__ = ["slugify", "title_case", "truncate", "wrap"]
__version__ = "1.2.0"
