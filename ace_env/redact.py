"""Credentials never leave in text: the password of a URL and the secrets ACE is given are masked.

ACE reads secrets from the environment (``NEO4J_PASSWORD``, a password written into ``NEO4J_URI``,
``OPENAI_API_KEY``) and from the managed server's password file.  Any text that may carry one (an
error message, a log line, a URL shown to the user) goes through :func:`redact` first.

>>> redact_url("bolt://neo4j:s3cret@db.example:7687")
'bolt://neo4j:***@db.example:7687'
>>> redact("Cannot reach http://u:p%40ss@h/v1 (key sk-123)", ["sk-123"])
'Cannot reach http://u:***@h/v1 (key ***)'
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

MASK = "***"

#: ``scheme://user:password@`` anywhere in a text: the password (up to the authority's last ``@``) is masked.
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*):(?P<password>[^/\s]*)@")

#: Environment variables whose whole value is a secret.
SECRET_VARIABLES = ("NEO4J_PASSWORD", "OPENAI_API_KEY")

#: Shorter values are not masked as text (a one-letter password would mask every such letter of a message).
MIN_SECRET_CHARS = 4


#: A URL query parameter whose name says it carries a credential (``?key=``, ``&api_key=``, ``?access_token=``):
#: its value is masked (a base URL with a query is refused, and the refusal repeated it).
_QUERY_SECRET = re.compile(r"(?P<head>://[^\s?#]*\?(?:[^\s#]*?[&;])?[\w.-]*(?:key|token|secret|passw(?:or)?d|pass|auth|sig"
                           r"|signature|credential)[\w.-]*=)(?P<value>(?!\*\*\*)[^&;#\s'\"]+)", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` with the password of its user information masked (the user name is kept), and the value of any
    query parameter named as a credential (``?key=``, ``?api_key=``, ``?token=``)."""
    url = _USERINFO.sub(lambda m: f"{m.group('head')}:{MASK}@", url)
    previous = None
    while previous != url:  # one parameter per pass: a URL may carry several
        previous, url = url, _QUERY_SECRET.sub(lambda m: f"{m.group('head')}{MASK}", url)
    return url


def url_password(url: str | None) -> str | None:
    """The password written into a URL (``scheme://user:password@host``), decoded; None without one."""
    if not url:
        return None
    try:
        password = urlsplit(url).password
    except ValueError:  # a malformed URL: take what the pattern finds
        m = _USERINFO.search(url)
        password = m.group("password") if m else None
    return unquote(password) if password else None


def env_secrets() -> list[str]:
    """The secrets the environment gives ACE: ``NEO4J_PASSWORD``, ``OPENAI_API_KEY``, ``NEO4J_URI``'s password."""
    found = [os.environ.get(name) for name in SECRET_VARIABLES]
    uri = os.environ.get("NEO4J_URI")
    password = url_password(uri)
    if password:
        found += [password, uri.split("@")[0].rpartition(":")[2]]  # also as written (percent-encoded)
    return [s for s in found if s]


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every URL's password and each of ``secrets`` (and :func:`env_secrets`) masked."""
    text = redact_url(text)
    for secret in sorted({s for s in [*secrets, *env_secrets()] if s and len(s) >= MIN_SECRET_CHARS},
                         key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
