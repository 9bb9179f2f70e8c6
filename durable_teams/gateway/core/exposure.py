"""Who may drive the gateway from a browser: the hosts it answers to, the origins it trusts,
and the headers that keep a web page from using a person's browser against it.

A gateway on loopback without tokens is reachable by every program on the machine, and by
every web page its user opens: a page cannot read another origin's answers, but it can send
requests (a form post, a `no-cors` fetch) and, through DNS rebinding, make its own host name
point at 127.0.0.1 and read the answers as its own. So:

- the Host header must name this gateway (`allowed_hosts`): a rebinding page's requests carry
  its own host name and get 421;
- requests that change state must be `Content-Type: application/json` (415 otherwise): a form
  or a `no-cors` fetch cannot send that type without a CORS preflight, which we refuse;
- a request with an `Origin` (or `Sec-Fetch-Site: cross-site`) from an origin that is not this
  gateway's own nor listed (`--allowed-origin`) gets 403; CORS headers go to listed origins
  only.

Pure: decisions on header values, no I/O.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from base64 import b64encode
from collections.abc import Iterable
from dataclasses import dataclass, field

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SERVED_METHODS = SAFE_METHODS | {"POST"}
DELETABLE = "/v1/responses/"
"""The one family of paths that takes DELETE (OpenAI's Responses API defines it); no body."""
LANGGRAPH = "/langgraph/"
"""The LangGraph door's paths: its clients also DELETE (no body), PATCH and PUT (JSON), and
POST with no body at all (`threads.copy`, `runs.cancel`: Content-Length 0, no Content-Type)."""
PAGES = frozenset({"/", "/inbox", "/healthz"})
"""Served to any navigation (no data in them); everything else is API."""
ANY = "*"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(host_header: str) -> str:
    """The name in a Host header, lowercased, without its port (`[::1]:8000` -> `[::1]`)."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@dataclass(frozen=True)
class Exposure:
    """The gateway's answer to "may this request be served?"."""

    allowed_hosts: frozenset[str]
    """Host names (no ports) requests may name; `*` allows any (only sensible with tokens
    behind a proxy that checks the host)."""
    allowed_origins: frozenset[str] = field(default_factory=frozenset)
    """Origins besides the gateway's own that browsers may call it from (CORS)."""

    @classmethod
    def for_bind(cls, bind_host: str, extra_hosts: Iterable[str] = (),
                 origins: Iterable[str] = ()) -> Exposure:
        """The loopback names, the bound address, and `extra_hosts`."""
        hosts = {"localhost", "127.0.0.1", "[::1]"}
        bound = bind_host.strip().lower()
        if bound not in ("0.0.0.0", "::", ""):
            hosts.add(f"[{bound}]" if ":" in bound and not bound.startswith("[") else bound)
        hosts.update(h.strip().lower() for h in extra_hosts if h.strip())
        return cls(frozenset(hosts), frozenset(o.strip().rstrip("/").lower() for o in origins if o.strip()))

    def host_allowed(self, host_header: str | None) -> bool:
        if ANY in self.allowed_hosts:
            return True
        return host_header is not None and host_name(host_header) in self.allowed_hosts

    def origin_allowed(self, origin: str, host_header: str | None) -> bool:
        """The gateway's own origin (the scheme and the Host the request names), or a listed one."""
        origin = origin.strip().rstrip("/").lower()
        if origin in self.allowed_origins or ANY in self.allowed_origins:
            return True
        own = (host_header or "").strip().lower()
        return bool(own) and origin in (f"http://{own}", f"https://{own}")

    def refusal(self, method: str, path: str, headers: dict[bytes, bytes]) -> tuple[int, str, str] | None:
        """(status, message, error type) when the request must not be served, else None."""
        host = _text(headers.get(b"host"))
        if not self.host_allowed(host):
            return (421, f"this gateway does not serve the host {host!r} (allowed: "
                    f"{', '.join(sorted(self.allowed_hosts))}; add one with --allowed-host)",
                    "misdirected_request")
        origin = _text(headers.get(b"origin"))
        site = _text(headers.get(b"sec-fetch-site"))
        if origin is not None and origin != "null":
            if not self.origin_allowed(origin, host) and not (path in PAGES and method in SAFE_METHODS):
                return (403, f"requests from the origin {origin!r} are not allowed (add it with "
                        "--allowed-origin)", "forbidden_origin")
        elif site == "cross-site" and not (path in PAGES and method in SAFE_METHODS):
            return 403, "cross-site requests are not allowed", "forbidden_origin"
        elif origin == "null" and method not in SAFE_METHODS:
            return 403, "requests from an opaque origin are not allowed", "forbidden_origin"
        if method == "DELETE" and path.startswith((DELETABLE, LANGGRAPH)):
            return None
        if path.startswith(LANGGRAPH) and method == "POST" and headers.get(b"content-length") == b"0" \
                and b"content-type" not in headers:
            return None
        if path.startswith(LANGGRAPH) and method in ("PATCH", "PUT"):
            method = "POST"  # a JSON body, as a POST's
        if method not in SERVED_METHODS:  # DELETE, TRACE, PROPFIND...: no route takes them
            return (405, f"method {method[:32]!r} is not allowed: this gateway takes GET and POST",
                    "method_not_allowed")
        if method not in SAFE_METHODS and not is_json(_text(headers.get(b"content-type"))):
            return (415, "the body must be JSON: add the header 'Content-Type: application/json'",
                    "unsupported_media_type")
        return None

    def cors_headers(self, headers: dict[bytes, bytes]) -> list[tuple[bytes, bytes]]:
        """CORS headers for a listed origin (none for any other: deny by default)."""
        origin = _text(headers.get(b"origin"))
        if origin is None or not (origin.strip().rstrip("/").lower() in self.allowed_origins
                                  or ANY in self.allowed_origins):
            return []
        return [(b"access-control-allow-origin", origin.encode()),
                (b"access-control-allow-headers", b"authorization, content-type, idempotency-key, x-thread-id"),
                (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
                (b"access-control-expose-headers", b"x-thread-id"),
                (b"access-control-max-age", b"600"),
                (b"vary", b"Origin")]


def is_json(content_type: str | None) -> bool:
    if content_type is None:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1")


SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


def page_policy(page: str) -> str:
    """A Content-Security-Policy for `page` that allows its own inline script and style (by
    hash) and nothing else: no other scripts, no framing, requests to this origin only."""
    def hashes(tag: str) -> str:
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", page, flags=re.S)
        return " ".join(f"'sha256-{b64encode(hashlib.sha256(b.encode()).digest()).decode()}'"
                        for b in blocks)
    return (f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; "
            "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")
