"""A throwaway PostgreSQL cluster a test owns (and may stop and start: a real database restart),
on 127.0.0.1 and a free port, in a temporary folder (TESTING.md's recipe). Needs PostgreSQL's
server programs (Debian's ``postgresql`` package) and, as root, the ``postgres`` user."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

BIN = Path("/usr/lib/postgresql/15/bin")


def available() -> str | None:
    """None when a cluster can be made here, else why not."""
    if not (BIN / "initdb").exists():
        return f"PostgreSQL's server programs are missing ({BIN}): apt-get install -y postgresql"
    if os.geteuid() == 0 and shutil.which("su") is None:
        return "su is missing (the cluster runs as the postgres user)"
    return None


@dataclass
class Cluster:
    folder: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        command = " ".join(f"'{a}'" for a in args)
        if os.geteuid() == 0:
            subprocess.run(["su", "postgres", "-c", command], check=True, capture_output=True)
        else:
            subprocess.run(list(args), check=True, capture_output=True)

    def init(self) -> Cluster:
        self.folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            self.folder.parent.chmod(0o755)
            shutil.chown(self.folder, "postgres")
        self._run(
            str(BIN / "initdb"), "-D", str(self.folder / "data"), "-U", "postgres",
            "--auth=trust", "-E", "UTF8",
        )  # fmt: skip
        return self

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.folder}"
        self._run(
            str(BIN / "pg_ctl"), "-D", str(self.folder / "data"), "-l",
            str(self.folder / "log"), "-o", options, "-w", "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self._run(str(BIN / "pg_ctl"), "-D", str(self.folder / "data"), "-m", mode, "-w", "stop")

    def log(self) -> str:
        path = self.folder / "log"
        return path.read_text(errors="replace") if path.exists() else ""


__all__ = ["BIN", "Cluster", "available"]
