"""Debian's nginx in front of several app processes, configured by docs/deploy.md's recipe.

The recipe is read from docs/deploy.md (its ``nginx`` block) and run as written, but for the
three things a test machine changes: the listening port, the app processes' ports (one ``server``
line per process in each upstream) and the log folder. So the documented recipe is the one that
is tested (``tests/browser/participant/test_proxy.py``) and measured
(``benchmarks/participants_load.py --processes N --proxy``).
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "docs" / "deploy.md"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
#: The top of nginx.conf that Debian's package provides around ``conf.d/*.conf`` (the recipe is
#: one of those files), with the paths a user without /etc and /var can write.
MAIN = """
worker_processes auto;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    include {folder}/rooms.conf;
}}
"""


def recipe() -> str:
    """The nginx block of docs/deploy.md's "Several app processes behind nginx" section."""
    text = DEPLOY.read_text(encoding="utf-8")
    section = text.split("### Several app processes behind nginx", 1)[1]
    found = re.search(r"```nginx\n(.*?)```", section, re.S)
    if found is None:
        raise SystemExit("docs/deploy.md has no nginx block under its proxy section")
    return found.group(1)


def configured(app_ports: list[int], port: int, folder: Path) -> str:
    """The recipe for these app ports, this listening port and this log folder."""
    text = recipe()
    servers = "".join(f"    server 127.0.0.1:{p};\n" for p in app_ports)
    text = re.sub(r"(    server 127\.0\.0\.1:\d+;\n)+", servers, text)
    text = text.replace("listen 80;", f"listen 127.0.0.1:{port};")
    text = text.replace("/var/log/nginx/", f"{folder}/")
    return text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_nginx(app_ports: list[int], folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """nginx in the foreground on a free port of 127.0.0.1, in front of ``app_ports``; returns
    the process and the proxy's URL. Stop it with ``terminate()``."""
    if not Path(NGINX).exists():
        raise SystemExit("nginx is missing: apt-get install -y nginx")
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    (folder / "rooms.conf").write_text(configured(app_ports, port, folder), encoding="utf-8")
    (folder / "nginx.conf").write_text(MAIN.format(folder=folder), encoding="utf-8")
    check = subprocess.run(
        [NGINX, "-t", "-q", "-c", str(folder / "nginx.conf"), "-p", str(folder)],
        capture_output=True, text=True,
    )  # fmt: skip
    if check.returncode:
        raise SystemExit(f"nginx refused the recipe:\n{check.stderr}")
    process = subprocess.Popen(
        [NGINX, "-c", str(folder / "nginx.conf"), "-p", str(folder), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL, stderr=(folder / "stderr.log").open("wb"),
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process, f"http://127.0.0.1:{port}"
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.05)
    process.kill()
    raise SystemExit(f"nginx did not start; see {folder / 'error.log'}")


__all__ = ["configured", "recipe", "start_nginx"]
