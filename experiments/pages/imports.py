"""The import pages: logs of runs made elsewhere, uploaded and parsed into runs, and the list of
those imports (who, when, from which host, which files, what they became)."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render

from experiments.models import Experiment, LogImport
from experiments.pages.forms import ImportForm
from experiments.roles import FORBIDDEN, may_administer, may_experiment, role_required
from experiments.services.imports import ImportRejected, import_runs


@login_required
@role_required(may_experiment, FORBIDDEN["experiment"])
def import_new(request):
    # runs join an experiment of one's own (an admin's: any)
    mine = Experiment.objects.all()
    if not may_administer(request.user):
        mine = mine.filter(created_by=request.user)
    form = ImportForm(request.POST or None, request.FILES or None, experiments=mine)
    if request.method == "POST" and form.is_valid():
        parameters = form.parameters()
        experiment = parameters.pop("experiment")
        try:
            result = import_runs(
                form.uploads(),
                parameters,
                experiment_id=experiment.pk if experiment else None,
                experiment_name=parameters.pop("experiment_name") or "",
                user=request.user,
                names=form.upload_names(),
            )
        except ImportRejected as exc:
            form.add_import_errors(exc.errors)
        else:
            return redirect(result.experiment)
    return render(request, "experiments/import_new.html", {"form": form})


IMPORTS_PER_PAGE = 50


@login_required
def import_list(request):
    """Every import, newest first: anyone who can read results reads where they came from."""
    found = LogImport.objects.select_related("experiment", "created_by")
    page = Paginator(found, IMPORTS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "experiments/import_list.html", {"page": page, "imports": page.object_list})
