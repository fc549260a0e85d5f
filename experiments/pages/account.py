"""The user's own account page: the API token the command line and scripts log in with."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from experiments.models import ApiToken
from experiments.services.tokens import new_token, revoke_token

SHOWN_ONCE = "new_api_token"


@never_cache  # Cache-Control: no-store: the key shown once stays out of every cache
@login_required
@require_http_methods(["GET", "POST"])
def account_token(request):
    """Make a token (its key shown on the next page only), or revoke it."""
    if request.method == "POST":
        if request.POST.get("action") == "revoke":
            if revoke_token(request.user):
                messages.info(
                    request, "Token revoked: the command line and scripts that used it are refused now."
                )
        else:
            request.session[SHOWN_ONCE] = new_token(request.user)
        return redirect("account-token")
    context = {
        "token": ApiToken.objects.filter(user=request.user).first(),
        "shown": request.session.pop(SHOWN_ONCE, None),  # once: a reload does not show it again
    }
    return render(request, "experiments/account_token.html", context)
