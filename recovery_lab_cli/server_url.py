"""The address of a live server for `recovery-lab predict` and `exporter`: the scheme, host, port,
account and the TLS settings each driver takes, read from a URL without ever quoting its user-info
(USER:PASSWORD) in a message. No Django."""

import ssl
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

DEFAULT_PORTS = {"mysql": 3306, "mariadb": 3306, "postgresql": 5432, "postgres": 5432}
# The engine a server address means unless --engine says otherwise.
DEFAULT_ENGINE_OF = {"mysql": "innodb", "postgresql": "postgresql"}


class LiveError(Exception):
    """The live server could not be read, said in one line."""


@dataclass
class ServerUrl:
    scheme: str  # mysql or postgresql
    host: str
    port: int
    user: str
    password: str = field(repr=False, default="")
    database: str = ""
    # TLS, as each driver names it: PostgreSQL's sslmode and sslrootcert; MySQL's ssl-mode and ssl-ca
    tls: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """How the server is named in output and metric labels: never with its credentials; a
        socket by its path (a port means nothing there)."""
        return self.host if self.host.startswith("/") else f"{self.host}:{self.port}"


# The URL parameters each kind of server takes: TLS, as its own client names them.
TLS_PARAMETERS = {
    "postgresql": {
        "sslmode": ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
        "sslrootcert": None,  # a file
    },
    "mysql": {
        "ssl-mode": ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"),
        "ssl-ca": None,
    },
}
PERCENT_ENCODED = "a password or user with / # ? @ : or % must be percent-encoded (%2F %23 %3F %40 %3A %25)"


def parse_server_url(text: str) -> ServerUrl:
    """mysql://USER:PASSWORD@HOST:PORT (mariadb:// too) or postgresql://USER:PASSWORD@HOST:PORT/DB;
    a host of a path ('%2Frun%2Fmysqld') is a socket folder or file; TLS settings as parameters
    (?sslmode=verify-full&sslrootcert=FILE, ?ssl-mode=VERIFY_IDENTITY&ssl-ca=FILE). Nothing of the
    user-info (USER:PASSWORD) is ever in a message: a URL that cannot be read says what is wrong
    in general terms."""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise LiveError(f"not a server address: its port is not a number ({PERCENT_ENCODED})") from None
    scheme = {"mariadb": "mysql", "postgres": "postgresql"}.get(parts.scheme, parts.scheme)
    if scheme not in DEFAULT_ENGINE_OF:
        raise LiveError("a server address starts with mysql://, mariadb:// or postgresql://")
    host = unquote(parts.hostname or "")
    if not host:
        raise LiveError(
            f"the server address names no host: mysql://USER:PASSWORD@HOST:PORT ({PERCENT_ENCODED})"
        )
    if parts.fragment:
        raise LiveError(f"the server address has a '#' part ({PERCENT_ENCODED})")
    return ServerUrl(
        scheme=scheme,
        host=host,
        port=port or DEFAULT_PORTS[scheme],
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        database=parts.path.lstrip("/"),
        tls=_tls_parameters(scheme, parts.query),
    )


def _tls_parameters(scheme: str, query: str) -> dict[str, str]:
    known = TLS_PARAMETERS[scheme]
    try:
        given = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise LiveError(f"the server address' parameters cannot be read ({PERCENT_ENCODED})") from None
    tls = {}
    for name, values in given.items():
        canonical = name.replace("_", "-") if scheme == "mysql" else name
        if canonical not in known:
            raise LiveError(
                f"the server address has a parameter this command does not know: {name[:30]!r} "
                f"(a {scheme}:// address takes {', '.join(known)})"
            )
        value = values[-1]
        allowed = known[canonical]
        if allowed is not None and (value.upper() if scheme == "mysql" else value) not in allowed:
            raise LiveError(f"{canonical} takes {', '.join(allowed)}, not {value[:30]!r}")
        tls[canonical] = value.upper() if allowed is not None and scheme == "mysql" else value
    return tls


def scrubbed(message: str, url: ServerUrl) -> str:
    """A driver's message without the password, should a driver ever repeat it."""
    if url.password and len(url.password) >= 3:
        message = message.replace(url.password, "***")
    return message


def mysql_tls(url: ServerUrl) -> dict:
    """PyMySQL's TLS arguments for the URL's ssl-mode (PREFERRED unless given, as MySQL's own
    client): DISABLED, PREFERRED (TLS where the server offers it, unchecked), REQUIRED (TLS or
    no connection), VERIFY_CA (and a certificate signed by ssl-ca), VERIFY_IDENTITY (and for
    this host name)."""
    mode = url.tls.get("ssl-mode", "PREFERRED")
    if mode == "DISABLED":
        return {"ssl_disabled": True}
    if mode == "PREFERRED":
        return {}
    if mode in ("VERIFY_CA", "VERIFY_IDENTITY") and not url.tls.get("ssl-ca"):
        raise LiveError(
            f"ssl-mode={mode} needs ssl-ca=FILE: the authority the server's certificate is checked against"
        )
    context = ssl.create_default_context(cafile=url.tls.get("ssl-ca") or None)
    context.check_hostname = mode == "VERIFY_IDENTITY"
    context.verify_mode = ssl.CERT_NONE if mode == "REQUIRED" else ssl.CERT_REQUIRED
    return {"ssl": context}
