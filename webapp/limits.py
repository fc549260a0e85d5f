"""Request bodies larger than UPLOAD_MAX_BYTES are refused with 413 before anything reads them.

Below the limit, Django streams uploaded files of more than FILE_UPLOAD_MAX_MEMORY_SIZE to
temporary files, and the importers read them by seeking: a large upload costs disk, not memory.
"""

from django.conf import settings
from django.http import HttpResponse, JsonResponse


class UploadLimit:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            size = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            size = 0
        limit = settings.UPLOAD_MAX_BYTES
        if size > limit:
            message = (
                f"the request is {size / 2**20:,.0f} MiB; this installation takes at most "
                f"{limit / 2**20:,.0f} MiB (UPLOAD_MAX_BYTES)"
            )
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": message}, status=413)
            return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
