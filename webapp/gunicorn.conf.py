"""gunicorn's settings for the web process (`gunicorn -c webapp/gunicorn.conf.py webapp.wsgi`).

The worker timeout covers the longest synchronous request the settings allow (an upload of
UPLOAD_MAX_BYTES at UPLOAD_MIN_BYTES_PER_S, a PDF report within REPORT_PDF_TIMEOUT_S): gunicorn's
default of 30 s would kill a worker in the middle of either. Address and worker count stay on
the command line.

`make start`'s unix socket keeps gunicorn's own mode (open to all): who may connect is decided by
the folder it is in, which only nginx's workers and the operator may enter (webapp/proxy.py).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from webapp.settings import LONGEST_REQUEST_S  # noqa: E402

wsgi_app = "webapp.wsgi"
timeout = LONGEST_REQUEST_S
graceful_timeout = 30
