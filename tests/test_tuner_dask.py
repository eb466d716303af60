"""Tuning on a real Dask cluster: a LocalCluster (a scheduler and two worker processes under
nannies) started from a script, tuned through its address; a worker killed in the middle of a
batch loses no record."""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("dask.distributed")

import toolkit as tk  # noqa: E402
from isa import Program  # noqa: E402
from simulators.base import RunResult  # noqa: E402
from networks.explore import explore  # noqa: E402
from toolkit.cli import main as cli_main  # noqa: E402
from tuner.database import Database, Record  # noqa: E402
from simulators.stand_in import run as stand_in_run  # noqa: E402

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
TINY = tk.HardwareConfig.preset("tiny")
OP = tk.matmul(8, 8, 16, bias="row")
KILL_AT = 3   # the call that kills its worker: the fourth candidate of the first batch of 8

# a LocalCluster starts worker processes, which needs a script (not stdin); it runs until stdin closes
CLUSTER = textwrap.dedent("""
    import sys
    from dask.distributed import LocalCluster

    if __name__ == "__main__":
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        print(cluster.scheduler_address, flush=True)
        sys.stdin.read()
        cluster.close()
""")


def _call_number(calls: Path, schedule: dict) -> int:
    """Claim the next call number across the cluster's processes (a file created exclusively)."""
    n = 0
    while True:
        try:
            fd = os.open(calls / f"call-{n}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            n += 1
            continue
        os.write(fd, json.dumps(schedule).encode())
        os.close(fd)
        return n


def stand_in_killing_a_worker(program: Program, inputs: dict, **_: object) -> RunResult:
    """The stand-in's results; call number KILL_AT kills the worker process that runs it (SIGKILL)."""
    if _call_number(Path(os.environ["SYSTOLIC_TEST_CALLS"]), program.meta["schedule"]) == KILL_AT:
        os.kill(os.getpid(), signal.SIGKILL)
    return stand_in_run(program, inputs)


stand_in_killing_a_worker.BACKEND = "stand-in"   # its records are the stand-in's


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """(scheduler address, the folder where the workers count backend calls)."""
    work = tmp_path_factory.mktemp("dask")
    calls = work / "calls"
    calls.mkdir()
    (work / "cluster.py").write_text(CLUSTER)
    path = os.pathsep.join(filter(None, [str(TESTS), str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "SYSTOLIC_TEST_CALLS": str(calls)}
    proc = subprocess.Popen([sys.executable, str(work / "cluster.py")], cwd=work, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        ready = select.select([proc.stdout], [], [], 120)[0]
        address = proc.stdout.readline().strip() if ready else ""
        assert address.startswith("tcp://"), f"the LocalCluster did not start (got {address!r})"
        yield address, calls
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _fields(rec: Record) -> tuple:
    """What a record says about a measurement (not when, nor how long it took)."""
    return (json.dumps(rec.schedule, sort_keys=True), rec.status, rec.cycles, rec.counters, rec.workload,
            rec.hw_hash, rec.backend, rec.tuner, rec.error)


@pytest.mark.slow
def test_a_worker_killed_mid_batch_loses_no_record_and_records_match_local_ones(cluster, tmp_path: Path) -> None:
    address, calls = cluster
    options = dict(trials=16, tuner="random", seed=5, batch_size=8, progress=False, timeout=120)
    remote = tk.tune(OP, TINY, backend=stand_in_killing_a_worker, scheduler=address, db=tmp_path / "dask.db",
                     **options)
    local = tk.tune(OP, TINY, backend="stand-in", workers=2, db=tmp_path / "local.db", **options)
    on_cluster, here = Database(tmp_path / "dask.db").records(), Database(tmp_path / "local.db").records()
    # the killed worker's candidate was measured again elsewhere (and so was any result it held that
    # the client had not gathered yet): more calls than trials, yet one record per candidate, none lost
    killed = json.dumps(json.loads((calls / f"call-{KILL_AT}").read_text()), sort_keys=True)
    assert len(list(calls.iterdir())) > options["trials"]
    schedules = [_fields(r)[0] for r in on_cluster]
    assert len(on_cluster) == len(set(schedules)) == options["trials"] and all(r.ok for r in on_cluster)
    assert killed in schedules
    # the same records a local pool makes, field for field
    assert sorted(map(_fields, on_cluster)) == sorted(map(_fields, here))
    assert (remote.cycles, remote.schedule) == (local.cycles, local.schedule)


@pytest.mark.slow
def test_cli_tunes_through_the_scheduler(cluster, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    address, _ = cluster
    db = tmp_path / "cli.db"
    rc = cli_main(["tune", "matmul", "--m", "12", "--n", "8", "--k", "8", "--config", "tiny", "--backend", "stand-in",
                   "--trials", "6", "--scheduler", address, "--db", str(db), "--quiet"])
    assert rc == 0, capsys.readouterr().err
    recs = Database(db).records()
    assert len(recs) == 6 and all(r.ok and r.backend == "stand-in" for r in recs)


def area_saying_where(hw: tk.HardwareConfig) -> dict[str, int]:
    """A stand-in area model (no Yosys) that says which process ran it."""
    return {"transistors": 1000 * hw.dim ** 2, "pid": os.getpid()}


@pytest.mark.slow
def test_explore_synthesizes_on_the_cluster(cluster, tmp_path: Path) -> None:
    """With a scheduler, each point's area is computed on a worker, not in the exploring process."""
    address, _ = cluster
    res = explore(OP, {"dim": [4, 8]}, trials=2, backend="stand-in", scheduler=address, db=str(tmp_path / "e.db"),
                  base="tiny", progress=False, area_model=area_saying_where)
    assert [p.area["transistors"] for p in res.points] == [16_000, 64_000]
    assert all(p.area["pid"] != os.getpid() and p.cycles for p in res.points)
