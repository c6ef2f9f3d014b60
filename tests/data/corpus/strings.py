# ruff: noqa
"""Corpus: strings and bytes. str += (immutable, so no aliasing), f-strings, formatting, parsing."""


def caesar(text, shift):
    out = ""
    for ch in text:
        if ch.isalpha() and ch.isascii():
            base = ord("a") if ch.islower() else ord("A")
            out += chr((ord(ch) - base + shift) % 26 + base)
        else:
            out += ch
    return out


def is_palindrome(s):
    cleaned = [c.lower() for c in s if c.isalnum()]
    return cleaned == cleaned[::-1]


def describe(name, score, width=8):
    label = f"{name!r:>{width}}"
    return f"{label}: {score:.2f} ({score:+d})" if isinstance(score, int) else f"{label}: {score:.3e}"


def ruler(n):
    line = ""
    i = 0
    while i < n:
        line += "|" if i % 5 == 0 else "."
        i += 1
    return line


def repeat_word(word, times):
    word *= times
    return word


def title_words(sentence):
    return " ".join(w[:1].upper() + w[1:] for w in sentence.split(" "))


def tokenize(expr):
    tokens = []
    i = 0
    while i < len(expr):
        ch = expr[i]
        if ch.isdigit():
            j = i
            while j < len(expr) and expr[j].isdigit():
                j += 1
            tokens.append(int(expr[i:j]))
            i = j
        elif ch in "+-*/()":
            tokens.append(ch)
            i += 1
        elif ch == " ":
            i += 1
        else:
            raise ValueError(f"bad character {ch!r} at {i}")
    return tokens


def count_vowels(s):
    vowels = set("aeiouAEIOU")
    return sum(1 for c in s if c in vowels)


def percent_format(name, value):
    return "%s=%05.1f%%" % (name, value)


def bytes_accumulate(parts):
    buf = b""
    for p in parts:
        buf += p
    return buf


def bytearray_accumulate(buf, extra):
    buf += extra  # bytearray += mutates in place
    return buf


def longest_common_prefix(words):
    if not words:
        return ""
    prefix = words[0]
    for w in words[1:]:
        while not w.startswith(prefix):
            prefix = prefix[:-1]
    return prefix


def wrap(text, width):
    lines, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(current)
    return "\n".join(lines)


# ==== CHECKS (never mutated) ====
from _checks import Checks
from hypothesis import strategies as st

checks = Checks()
texts = st.text(alphabet="abcXYZ !?é1", max_size=20)


@checks.case
def caesar_cases(m):
    return m.caesar("Hello, World! é", 3), m.caesar(shift=-29, text="abcXYZ")


@checks.case
def palindromes(m):
    return m.is_palindrome("A man, a plan, a canal: Panama"), m.is_palindrome("ab")


@checks.case
def describe_cases(m):
    return (
        m.describe("x", 5),
        m.describe("yy", 2.5, width=3),
        m.describe("n", float("nan")),
        m.describe("i", -0.0),
    )


@checks.case
def ruler_and_repeat(m):
    return m.ruler(12), m.repeat_word("ab", 3), m.repeat_word([1], 2), m.title_words("hello  big world")


@checks.case
def tokenizer(m):
    return m.tokenize("12 + (3*45)/6")


@checks.case
def tokenizer_error(m):
    return m.tokenize("1 + x")


@checks.case
def formatting(m):
    return m.count_vowels("Programming In Python"), m.percent_format("p", 3.14159)


@checks.case
def bytes_cases(m):
    buf = bytearray(b"ab")
    alias = buf
    m.bytearray_accumulate(buf, b"cd")
    return m.bytes_accumulate([b"x", b"", b"yz"]), bytes(alias)


@checks.case
def prefix_and_wrap(m):
    return (
        m.longest_common_prefix(["flower", "flow", "flight"]),
        m.longest_common_prefix([]),
        m.wrap("the quick brown fox jumps over the lazy dog", 10),
    )


@checks.prop(st.tuples(texts, st.integers(-30, 30)))
def caesar_prop(m, ts):
    return m.caesar(*ts), m.is_palindrome(ts[0]), m.count_vowels(ts[0])


@checks.prop(st.tuples(texts, st.integers(1, 12)))
def wrap_prop(m, tw):
    return m.wrap(*tw), m.title_words(tw[0]), m.ruler(tw[1])


@checks.prop(st.text(alphabet="0123456789+-*/() ", max_size=15))
def tokenize_prop(m, s):
    return m.tokenize(s)
