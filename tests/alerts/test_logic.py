"""The alerts' pure parts: when a rate alarms, the signature, the backoff, Slack's escaping."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import timedelta

import pytest

from memdash.alerts.logic.decide import rate_alarm
from memdash.alerts.logic.kinds import RuleFigures, validate
from memdash.alerts.logic.messages import (
    email_subject,
    payload,
    retry_delay,
    signature,
    slack_body,
    verify,
)


@dataclass(frozen=True)
class R:
    rate: float
    low: float
    high: float


def test_a_rate_above_the_ceiling_alarms():
    assert rate_alarm(None, R(0.012, 0.01, 0.02), 0.01, significant=False) == (
        "1.20% is above the limit of 1.00%"
    )
    assert rate_alarm(None, R(0.01, 0.005, 0.02), 0.01, significant=False) == ""  # not above


def test_a_rise_alarms_only_beyond_both_bands():
    base = R(0.05, 0.0089, 0.2361)  # 1 of 20 (Wilson, by hand: 0.89% – 23.61%)
    assert rate_alarm(base, R(0.75, 0.5313, 0.8881), None, True).startswith("75.00%")
    assert rate_alarm(base, R(0.25, 0.1119, 0.4687), None, True) == ""  # the bands overlap
    assert rate_alarm(base, R(0.75, 0.5313, 0.8881), None, False) == ""  # not asked for
    assert rate_alarm(None, R(0.75, 0.5313, 0.8881), None, True) == ""  # nothing to rise from


def test_the_signature_is_stripes_scheme():
    body = b'{"a": 1}'
    expected = hmac.new(b"whsec_x", b'1700000000.{"a": 1}', hashlib.sha256).hexdigest()
    header = signature("whsec_x", 1700000000, body)
    assert header == f"t=1700000000,v1={expected}"
    assert verify("whsec_x", header, body)
    assert not verify("whsec_y", header, body)
    assert not verify("whsec_x", header, body + b" ")


def test_backoff_doubles_up_to_an_hour():
    delays = [retry_delay(n) for n in range(1, 10)]
    assert delays[:4] == [timedelta(seconds=s) for s in (30, 60, 120, 240)]
    assert delays[-1] == timedelta(hours=1)


def test_slack_text_escapes_what_its_markup_reads():
    app = {"name": "Chat <beta>"}
    alert = {"title": "A & <b>", "text": "x > y", "url": "https://m.example/a"}
    text = slack_body(app, [alert])["text"]
    assert text == (
        "*memdash · Chat &lt;beta&gt;*\n• <https://m.example/a|A &amp; &lt;b&gt;>: x &gt; y"
    )
    assert json.loads(json.dumps(payload(app, [alert])))["alerts"] == [alert]
    assert email_subject(app, [alert, alert]) == "[memdash] Chat <beta>: 2 alerts"


def test_figures_out_of_range_are_refused():
    with pytest.raises(ValueError, match="percentage"):
        validate(RuleFigures(kind="foom_rate", threshold_percent=150))
    with pytest.raises(ValueError, match="no alert kind"):
        validate(RuleFigures(kind="nope"))
