"""A child process for tests/conversation/worker/test_analysis_runner.py: an analysis runner
that answers the rooms of its first chunk and then hangs on the next (its model never replies),
so the parent can kill it (SIGKILL) mid-analysis.

    python tests/support/analysis_child.py DB_URL ANALYSIS_ID CHUNK
"""

from __future__ import annotations

import sys
import time

import conversation.models as models
from conversation.models import OfflineModel
from conversation.worker import AnalysisRunner
from storage import Database


def main() -> None:
    url, analysis_id, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    jobs = 0

    def reply(user_prompt: str, system_prompt: str) -> str:
        return "Yes"

    def resolve(spec: object, **kw: object) -> object:
        nonlocal jobs
        if not isinstance(spec, dict):
            return spec  # analyze() resolves the model it is given again
        jobs += 1
        if jobs > 1:
            time.sleep(3600)  # the second chunk hangs: killed while asking it
        return OfflineModel(func=reply)

    models.resolve_model = resolve  # type: ignore[assignment]
    runner = AnalysisRunner(Database(url), poll_interval=0.05, chunk=chunk)
    print(f"runner {analysis_id}", flush=True)
    runner.run()


if __name__ == "__main__":
    main()
