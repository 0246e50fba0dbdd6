"""Title case in the style most English style guides use."""

SMALL_WORDS = frozenset("a an and as at but by for in nor of on or per the to via vs".split())


def _cap(word: str) -> str:
    # Words with inner capitals (iPhone, McDonald) are left as written.
    if any(c.isupper() for c in word[1:]):
        return word
    return word[:1].upper() + word[1:]


def title_case(text: str) -> str:
    """Capitalise every word except small ones; the first and last word are always capitalised."""
    words = text.split()
    out = []
    for i, word in enumerate(words):
        edge = i == 0 or i == len(words) - 1
        if word.lower() in SMALL_WORDS and not edge:
            out.append(word.lower())
        else:
            out.append(_cap(word))
    return " ".join(out)
