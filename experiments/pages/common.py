"""What the pages share: annotations, and report pages as HTML or PDF."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string

from experiments import services
from experiments.reports.pdf import PDFError, html_to_pdf
from experiments.roles import require_change


def annotate_page(request, target, experiment):
    """The notes-and-tags form of an experiment's or a run's page, saved on `target`."""
    require_change(request.user, experiment)
    try:
        services.annotate(
            target, notes=request.POST.get("notes"), tags=request.POST.get("tags"), user=request.user
        )
    except services.AnnotationRejected as exc:
        for field_name, message in exc.errors.items():
            messages.error(request, f"{field_name}: {message} (nothing was saved)")
    else:
        messages.info(request, "Notes and tags saved.")
    return redirect(target)


def report_html(request, template: str, context: dict, page: str) -> str:
    """The report as HTML; `page` is the address of its web version (the PDF names it too)."""
    return render_to_string(template, {**context, "permalink": request.build_absolute_uri(page)}, request)


def pdf_response(request, html: str, title: str, filename: str) -> HttpResponse:
    try:
        pdf = html_to_pdf(html, title)
    except PDFError as exc:
        return render(request, "experiments/report_error.html", {"error": str(exc)}, status=503)
    response = HttpResponse(pdf, content_type="application/pdf")
    response["Content-Disposition"] = f'inline; filename="{filename}"'
    return response
