"""URL credentials (``scheme://user:password@host``) hidden in any text. Pure, no I/O.

One rule for every place a URL can surface: endpoint URLs in logs and reprs
(:func:`redact_url`), recorded messages (the trace's ``url_credentials``
redaction) and error messages that quote a URL.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["HIDDEN_USERINFO", "hide_credentials", "redact_url"]

#: What stands in place of ``user:password`` in a URL.
HIDDEN_USERINFO = "***"

# The userinfo of an authority runs from '//' to the LAST '@' before the path, query or
# fragment ('user:p@ss@host' has the password 'p@ss'). It never holds a quote,
# whitespace or a backslash other than a JSON \uXXXX escape, so a match never crosses a
# JSON string's end: the rule works on JSON text (a trace line written with ASCII
# escapes: 'jos\u00e9:pw@') as well as on plain strings.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(?:[^/?#\s\"'<>\\]|\\u[0-9a-f]{4})*@")


def hide_credentials(text: str) -> str:
    """``text`` with the userinfo of every URL in it replaced by ``***``.

    >>> hide_credentials("navigating to http://ada:hunter2@127.0.0.1:9/x failed")
    'navigating to http://***@127.0.0.1:9/x failed'
    """
    if "@" not in text:
        return text
    return _USERINFO.sub(rf"\1{HIDDEN_USERINFO}@", text)


def redact_url(url: str) -> str:
    """The URL with credentials and token-looking query values hidden: what a log, a
    repr or an error message may show of an endpoint.

    >>> redact_url("ws://ada:pw@127.0.0.1:9/devtools/browser/x?token=s3cret&n=1")
    'ws://***@127.0.0.1:9/devtools/browser/x?token=***&n=1'
    """
    try:
        parts = urlsplit(hide_credentials(url))
    except ValueError:
        return "<unparseable url>"
    netloc = parts.netloc
    if "@" in netloc:  # userinfo the text rule did not see (no '//' before it)
        netloc = HIDDEN_USERINFO + "@" + netloc.rsplit("@", 1)[1]
    query = re.sub(r"(?i)((?:token|key|secret|auth|apikey|api_key|password)=)[^&]*", r"\1***",
                   parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
