"""Words for printed output: counted nouns (``count(1, "block")`` is "1 block", ``count(3, "pass")``
"3 passes"), numbers written out, and paragraphs wrapped evenly for a slide (:func:`wrap_even`)."""
import re
import textwrap
from typing import List


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


#: Where a line never breaks: after a maker's or platform's name, which stays with what it names
#: ("NVIDIA driver", "NVIDIA H200", "CUDA runtime", "CUDA 12.4"), and between a number and its unit
#: or count noun ("900 GB/s", "4.9 µs", "7.2 x", "1024 threads").  A space matched here is kept by
#: :func:`wrap_even` and made a no-break space by :func:`keep_whole` (the tables' cells among them).
NO_BREAK = re.compile(r"(?<=\bNVIDIA) (?=\S)|(?<=\bCUDA) (?=\S)"
                      r"|(?<=\d) (?=(?:GB/s|GiB|MiB|KiB|GB|MB|KB|B|ms|µs|us|ns|s|%|x|threads|rows?|bytes)(?![\w/]))")
_NBSP = "\u00a0"


#: A hyphen inside a word, date or number ("2026-12-02", "2e-05", "write-up", "float16-1024").
INNER_HYPHEN = re.compile(r"(?<=\w)-(?=\w)")
#: Invisible; no line break on either side of it (Chromium honours it, as it does U+2011).
WORD_JOINER = "\u2060"
#: A short parenthesis ("(the shapes it has)", "(not live)", "(14.6x)"): a browser keeps it on one
#: line, and with the number or word before it when that is a number ("63.69 (14.6x)").
SHORT_PARENS = 20
_SHORT_PAREN = re.compile(r"\([^()\n]{1,%d}\)" % (SHORT_PARENS - 2))
_TIMES = re.compile(r"(?<=\d) ([x×]) (?=\d)")   # a shape, "16384 x 4096"
_VALUE_PAREN = re.compile(r"(?<=\d) (?=\([^()\n]{1,%d}\))" % (SHORT_PARENS - 2))


def keep_whole(text: str) -> str:
    """``text`` as a browser should wrap it on a slide: never inside a name of :data:`NO_BREAK`
    ("NVIDIA H200", "4.9 µs"), after a hyphen inside a word, date or number ("write-" / "up",
    "2026-" / "12-02": a word joiner follows the hyphen), inside a short parenthesis ("(the" /
    "shapes it has)"), inside a shape ("16384 x" / "4096") or between a number and the short
    parenthesis after it ("63.69" / "(14.6x)"): no-break spaces there.  Both marks are
    invisible; the text reads the same.  Idempotent."""
    text = _TIMES.sub(_NBSP + "\\1" + _NBSP, str(text))  # before NO_BREAK, whose "7.2 x" would take its first space
    text = NO_BREAK.sub(_NBSP, text)
    text = INNER_HYPHEN.sub("-" + WORD_JOINER, text.replace("-" + WORD_JOINER, "-"))
    text = _SHORT_PAREN.sub(lambda m: m.group(0).replace(" ", _NBSP), text)
    return _VALUE_PAREN.sub(_NBSP, text)


def plain(text: str) -> str:
    """``text`` with :func:`keep_whole`'s marks taken out (word joiners dropped, no-break spaces
    as spaces): what a reader -- or a check that looks for a GPU's name or a record's label in a
    rendered table -- sees."""
    return str(text).replace(WORD_JOINER, "").replace(_NBSP, " ")


def wrap_even(text: str, width: int) -> List[str]:
    """``text`` (one paragraph) as lines of at most ``width`` characters: as few lines as
    ``textwrap.wrap`` gives at ``width``, at the narrowest width that needs no more, so the lines
    come out of even length (no word or two left alone on the last line); never broken at a
    hyphen nor at a space of :data:`NO_BREAK` (a token longer than ``width`` is cut, as textwrap
    does)."""
    glued = NO_BREAK.sub(_NBSP, text)  # textwrap splits at ASCII whitespace only
    lines = textwrap.wrap(glued, width, break_on_hyphens=False) or [""]
    longest = max((len(t) for t in glued.split()), default=0)
    for w in range(max(1, -(-len(glued) // len(lines)), longest), width):
        even = textwrap.wrap(glued, w, break_on_hyphens=False)
        if len(even) == len(lines):
            lines = even
            break
    return [ln.replace(_NBSP, " ") for ln in lines]


#: The codec error handler (:mod:`codecs`) that :func:`readable_streams` gives a terminal which
#: cannot show every character (a Latin-1 or cp1252 console): a dash, a bound, an arrow or a mark
#: is written in ASCII ("-", "<=", "->", "ok"), a word joiner is dropped, anything else is its
#: ASCII base letter or "?", so a table still prints where it would raise UnicodeEncodeError.
ENCODE_FALLBACK = "gpu-viz-ascii"
_ASCII_FOR = {"\u2013": "-", "\u2014": "--", "\u2212": "-", "\u2265": ">=", "\u2264": "<=", "\u2260": "!=",
              "\u2248": "~", "\u00d7": "x", "\u2026": "...", "\u2192": "->", "\u2190": "<-", "\u25b6": ">",
              "\u25c0": "<", "\u2713": "ok", "\u2717": "x", "\u00b5": "u", "\u03bc": "u", "\u2018": "'",
              "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2022": "*", "\u00b7": ".", "\u00a0": " ",
              "\u2009": " ", "\u202f": " ", WORD_JOINER: "", "\u200b": ""}


def _ascii_fallback(exc: UnicodeError):
    import unicodedata

    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for ch in exc.object[exc.start:exc.end]:
        if ch in _ASCII_FOR:
            out.append(_ASCII_FOR[ch])
        else:
            base = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode("ascii")
            out.append(base or "?")
    return "".join(out), exc.end


def readable_streams(*streams) -> None:
    """Let ``streams`` (default: stdout and stderr) print any text: on an encoding other than
    UTF-8 (a Latin-1 or cp1252 terminal) a character it cannot encode is written as ASCII by
    :data:`ENCODE_FALLBACK` instead of raising UnicodeEncodeError.  Streams without
    ``reconfigure`` (a notebook's, a test's capture) are left as they are."""
    import codecs
    import sys

    try:
        codecs.lookup_error(ENCODE_FALLBACK)
    except LookupError:
        codecs.register_error(ENCODE_FALLBACK, _ascii_fallback)
    for stream in streams or (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        try:
            utf8 = encoding is not None and codecs.lookup(encoding).name == "utf-8"
        except LookupError:
            utf8 = False
        if not utf8 and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=ENCODE_FALLBACK)
