"""The task of an upload of debug files (`writes.process_debug_files`): unpacking, checking each
object and making its symcache, in a worker, never in the request that received the body. The
embedded immediate backend runs it in that request, as it runs uploads."""

from __future__ import annotations

from django.tasks import task

from memdash.symbols import writes
from memdash.symbols.models import DebugFileUpload


@task()
def process_debug_files_task(upload_id: int) -> str:
    upload = DebugFileUpload.objects.select_related("app", "key").get(pk=upload_id)
    return writes.process_debug_files(upload).status
