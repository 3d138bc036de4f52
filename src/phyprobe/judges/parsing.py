"""Strict reading of a judge's JSON answer.

Rules (as SVBench-Evaluation's and Sci-VBench-style judge code parse answers): drop a ``<think>...</think>`` block, take the first balanced
``{...}`` object (which also removes any code fence or text around it), ``json.loads`` it, then let the
judge check keys and ranges. Anything else — no object, broken JSON, a missing key, a score outside
its range — raises ``ReplyError`` and becomes a recorded failure with the raw text. There is
deliberately no regex fallback that fishes a number out of malformed text: a reply that does not
follow the format is not evidence of a score.
"""

from __future__ import annotations

import json
import re

from ..errors import json_error_reason

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


class ReplyError(ValueError):
    """The reply does not follow the judge's format; the message says how."""


def first_json_object(text: str) -> dict:
    """The first balanced top-level ``{...}`` of ``text`` (after removing reasoning), as a dict."""
    if text is None:
        raise ReplyError("empty reply")
    text = _THINK.sub("", text)
    start = text.find("{")
    if start < 0:
        raise ReplyError("no JSON object in the reply")
    depth, in_str, esc = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                try:
                    obj = json.loads(text[start : i + 1])
                except json.JSONDecodeError as e:
                    raise ReplyError(f"malformed JSON ({e.msg} at char {e.pos})") from None
                except (ValueError, RecursionError) as e:  # nested too deeply, an integer too long
                    raise ReplyError(json_error_reason(e)) from None
                if not isinstance(obj, dict):
                    raise ReplyError("the JSON value is not an object")
                return obj
    raise ReplyError("unterminated JSON object")


def require_keys(obj: dict, keys) -> None:
    missing = [k for k in keys if k not in obj]
    if missing:
        raise ReplyError(f"missing key(s) {missing}")


def integer_in(value, allowed: range, key: str) -> int:
    """``value`` as an int in ``allowed``: an integer, an integral float, or a numeric string ("4").

    Booleans, fractions (3.5) and anything outside the range are errors.
    """
    if isinstance(value, bool):
        raise ReplyError(f"{key} is a boolean ({value}), expected an integer in {allowed.start}..{allowed.stop - 1}")
    if isinstance(value, str):
        value = value.strip()
        if not re.fullmatch(r"[+-]?\d+", value):
            raise ReplyError(f"{key} is {value!r}, expected an integer in {allowed.start}..{allowed.stop - 1}")
        value = int(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise ReplyError(f"{key} is {value}, not an integer")
        value = int(value)
    if not isinstance(value, int) or value not in allowed:
        raise ReplyError(f"{key} is {value!r}, outside {allowed.start}..{allowed.stop - 1}")
    return value
