"""Run a command in a fresh network namespace with only the loopback up, so nothing but
127.0.0.1 is reachable (the agents phone home; the scripted server runs in the same namespace).

``unshare --net --map-root-user`` needs no privileges: the command runs as root of its own user
namespace, which is also what lets it bring ``lo`` up.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


class NamespaceUnavailable(RuntimeError):
    pass


def namespace_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` wrapped to run inside a new user+network namespace with ``lo`` up."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip") or "/usr/sbin/ip"
    if unshare is None or not Path(ip).exists():
        raise NamespaceUnavailable("needs unshare (util-linux) and ip (iproute2)")
    # `exec "$@"`: the command replaces the shell, so its exit status is the namespace's.
    inner = f'{ip} link set lo up && exec "$@"'
    return [unshare, "--net", "--map-root-user", "--", "sh", "-c", inner, "sh", *argv]


def run_isolated(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        namespace_argv(argv),
        env=dict(os.environ if env is None else env),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def interfaces() -> list[str]:
    """The interfaces of this process's network namespace (``/proc/net/dev`` is per namespace,
    unlike ``/sys/class/net``, which shows the namespace sysfs was mounted in)."""
    lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    return sorted(line.split(":", 1)[0].strip() for line in lines)


def assert_isolated() -> None:
    """Refuse to go on unless this process sees no network interface but ``lo`` (called inside
    the namespace before any agent starts)."""
    seen = interfaces()
    if seen != ["lo"]:
        raise NamespaceUnavailable(f"not isolated: interfaces {seen}")
