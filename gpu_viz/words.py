"""Counted nouns for printed output: ``count(1, "block")`` is "1 block", ``count(3, "pass")`` "3 passes"."""


def noun(n, singular: str, plural: str = None) -> str:
    """``singular`` when ``n`` is 1, else ``plural`` (default: ``singular`` + "es" after s/x/sh/ch, + "s")."""
    if n == 1:
        return singular
    if plural is None:
        plural = singular + ("es" if singular.endswith(("s", "x", "sh", "ch")) else "s")
    return plural


def count(n, singular: str, plural: str = None) -> str:
    """``n`` and its noun in the right number: "1 block", "24 blocks", "2 passes"."""
    return f"{n} {noun(n, singular, plural)}"


def numbers(values, limit: int = None) -> str:
    """Numbers written out for a reader: "264, 272, 280" (with ", ..." past ``limit``)."""
    values = list(values)
    shown = values if limit is None or len(values) <= limit else values[:limit]
    text = ", ".join(str(v) for v in shown)
    return text + (", ..." if len(shown) < len(values) else "")
