"""The clock's headers between the agent and `dst serve` (SCHEMA section 1).

Request: `x-umi-clock-us: N`, the agent's clock when it sends. Response:
`x-umi-timing: head_us=H, first_us=F, last_us=L, end_us=E, ending=X`, the simulated
microseconds after the request's arrival when the head, the first body byte, the last
body byte and the end (complete, reset, or a stall's give-up) happened; and, when the
simulation produced no response at all, a 502 with `x-umi-no-response: reset|stall`.
"""

import dataclasses

from .clock import ClockError

CLOCK_HEADER = "x-umi-clock-us"
TIMING_HEADER = "x-umi-timing"
NO_RESPONSE_HEADER = "x-umi-no-response"
TIMING_KEYS = ("head_us", "first_us", "last_us", "end_us", "ending")
ENDINGS = ("complete", "reset", "stall")
NO_RESPONSES = ("reset", "stall")
U64_MAX = 2**64 - 1


class TimingHeaderError(ClockError):
    """A response's `x-umi-timing` (or `x-umi-no-response`) is not what SCHEMA section 1
    says; the message names the header and what is wrong."""


@dataclasses.dataclass(frozen=True)
class Timing:
    """One response's times, in simulated microseconds after the request's arrival."""

    head_us: int
    first_us: int
    last_us: int
    end_us: int
    ending: str

    @classmethod
    def parse(cls, text):
        """The header's value; `TimingHeaderError` naming the header otherwise."""
        where = f"{TIMING_HEADER}: {text!r}"
        items = [item.strip() for item in text.split(",")]
        if len(items) != len(TIMING_KEYS):
            raise TimingHeaderError(f"{where}: {len(items)} items; expected {', '.join(TIMING_KEYS)}")
        values = {}
        for item, key in zip(items, TIMING_KEYS):
            name, equals, value = item.partition("=")
            if not equals or name.strip() != key:
                raise TimingHeaderError(f"{where}: {item!r} where {key}=... belongs")
            values[key] = value.strip()
        ending = values.pop("ending")
        if ending not in ENDINGS:
            raise TimingHeaderError(f"{where}: ending {ending!r}; one of {', '.join(ENDINGS)}")
        times = {key: _u64(value, f"{where}: {key}") for key, value in values.items()}
        timing = cls(ending=ending, **times)
        if not timing.head_us <= timing.first_us <= timing.last_us <= timing.end_us:
            raise TimingHeaderError(f"{where}: the times go backwards (head <= first <= last <= end)")
        return timing


def _u64(text, where):
    if not text.isdigit():
        raise TimingHeaderError(f"{where}: {text!r} is not a whole number of microseconds")
    value = int(text)
    if value > U64_MAX:
        raise TimingHeaderError(f"{where}: {text} is past u64")
    return value


def no_response(headers):
    """`reset`, `stall`, or None: the 502 that stands for no response at all."""
    value = headers.get(NO_RESPONSE_HEADER)
    if value is None:
        return None
    value = value.strip()
    if value not in NO_RESPONSES:
        raise TimingHeaderError(f"{NO_RESPONSE_HEADER}: {value!r}; one of {', '.join(NO_RESPONSES)}")
    return value
