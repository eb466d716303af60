"""A tuning run in a process of its own, for the tests that kill one or run two on one database.

    python tests/tune_process.py DB TRIALS WORKERS SEED [BARRIER]

It tunes an 8x8x16 matmul on the tiny preset with the stand-in, slowed to 0.1 s a candidate so
that a test can act mid-run, and prints the run's outcome as JSON. With BARRIER (a directory) it
waits there for a second process, so that two runs start together.
"""
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import toolkit as tk  # noqa: E402
from tuner.api import tune  # noqa: E402
from simulators.stand_in import run as stand_in_run  # noqa: E402


def slow(program, inputs, **options):
    time.sleep(0.1)
    return stand_in_run(program, inputs)


if __name__ == "__main__":
    db, trials, workers, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if len(sys.argv) > 5:
        barrier = Path(sys.argv[5])
        (barrier / str(os.getpid())).touch()
        deadline = time.time() + 60
        while len(list(barrier.iterdir())) < 2 and time.time() < deadline:
            time.sleep(0.01)
    result = tune(tk.matmul(8, 8, 16, bias="row"), tk.HardwareConfig.preset("tiny"), trials=trials,
                  tuner="model", backend=slow, db=db, workers=workers, batch_size=4, seed=seed,
                  progress=False, tuner_options={"feature_budget": 64})
    print(json.dumps({"measured_now": result.measured_now, "trials": len(result.history)}))
