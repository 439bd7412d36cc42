"""The page of one MetricKit diagnostic: what happened and its call stacks, named by the app's
debug files. (The OS page lists them per build and kind: foom.web.exits.)"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memdash.core.web.http import app_or_404, found
from memdash.foom.logic.diagnostics import SUMMARY_KEYS
from memdash.foom.reads import diagnostics as diagnostic_reads


@login_required
def diagnostic_detail(request: HttpRequest, app_id: int, diagnostic_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    with found():
        diagnostic = diagnostic_reads.diagnostic_of(app, diagnostic_id)
    stacks = diagnostic_reads.named_stacks(app, diagnostic)
    frames = [f for s in stacks for f in s.frames]
    facts = [(k, diagnostic.summary[k]) for k in SUMMARY_KEYS if k in diagnostic.summary]
    return render(
        request,
        "foom/diagnostic.html",
        {
            "app": app,
            "diagnostic": diagnostic,
            "facts": facts,
            "stacks": stacks,
            "named": sum(f.named for f in frames),
            "total": len(frames),
        },
    )
