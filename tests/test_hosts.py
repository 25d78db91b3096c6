"""Several hosts, on one machine: two torchrun agents (`--nnodes 2 --nproc-per-node 1`) meet in a
c10d rendezvous on the loopback, as two hosts would, and run a tiny grid with gloo on the CPU.

The command docs/several-gpus.md shows, with one agent and its worker killed in the second of
three cases (as a host that goes away): the first case's row records each rank's host and node,
the second is a row naming the lost rank, and the run ends with a resume hint; then that resume,
by two agents again, which runs the case left and finishes the folder. One run does all three,
since each start of two agents and their workers costs seconds of imports. Only 127.0.0.1 is
used: the rendezvous, the workers' store (`--local-addr`) and gloo (`GLOO_SOCKET_IFNAME=lo`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.execution import launch
from bench.store import results
from tests.conftest import tiny_case

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "tests" / "dist_worker.py"
GRID = [
    *("--device", "cpu", "--preset", "tiny", "--modes", "fp32", "--optimizers", "fused"),
    *("--parallel", "ddp,none,ddp-bf16", "--batch-sizes", "8", "--steps", "2", "--warmup", "1"),
    *("--repeats", "1", "--no-overhead", "--collective-timeout", "60"),
]
"""The tiny MLP, fp32, fused Adam, with DDP, without it and with DDP's bf16 compression, 2 timed
steps. The collective timeout is long: a killed agent must end the case by its closed
connections, not by a timeout."""
NONE_CASE = tiny_case(mode="fp32", optimizer="fused").case_id
"""The case killed: without DDP, rank 0 finishes it and waits for rank 1 at the exchange after
it (in a DDP case it would fail in DDP's own collectives, an `error` row)."""
WAIT_S = 90
"""The longest an agent may take (a run takes about 15 s on 2 busy cores)."""


def agent(port: int, rdzv_id: str, args: list[str], *, store_host: bool) -> list[str]:
    """One agent's command line: `torchrun` (`python -m torch.distributed.run`) for one of two
    nodes. On one machine both agents would match 127.0.0.1 and race to host the rendezvous
    store; the second says it does not (`is_host=0`)."""
    return [
        *(sys.executable, "-m", "torch.distributed.run"),
        *("--nnodes", "2", "--nproc-per-node", "1"),
        *("--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}"),
        *("--rdzv-id", rdzv_id, "--local-addr", "127.0.0.1"),
        *([] if store_host else ["--rdzv-conf", "is_host=0"]),
        *args,
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != launch.RUN_DIR_VAR}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return {**env, "GLOO_SOCKET_IFNAME": "lo", **extra}


def _start(args: list[str], rdzv_id: str, env: dict[str, str]) -> list[subprocess.Popen]:
    """The two agents, each in a session of its own (as on its own host); the first holds the
    rendezvous store."""
    port = _free_port()
    return [
        subprocess.Popen(
            agent(port, rdzv_id, args, store_host=node == 0),
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for node in range(2)
    ]


def _finish(agents: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    """Each agent's (exit status, stdout, stderr); an agent still running after `WAIT_S` is
    stopped (SIGTERM: torchrun ends its workers) and the test fails."""
    out = []
    try:
        for proc in agents:
            stdout, stderr = proc.communicate(timeout=WAIT_S)
            out.append((proc.returncode, stdout, stderr))
    finally:
        for proc in agents:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.communicate(timeout=30)
    return out


def _workers(agent_pid: int) -> dict[int, int]:
    """An agent's worker processes: pid -> global rank (from their environment)."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if ppid != agent_pid:
                continue
            environ = (stat.parent / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue  # a process that ended meanwhile
        env = dict(item.decode().split("=", 1) for item in environ if b"=" in item)
        if "RANK" in env:
            out[int(stat.parent.name)] = int(env["RANK"])
    return out


def _run_dir(parent: Path) -> Path:
    (run_dir,) = [p for p in parent.iterdir() if p.is_dir()]
    return run_dir


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, Path, list]:
    """The grid with rank 1 stalled in its second case (`tests/dist_worker.py`) and its agent
    and worker killed there, while rank 0 waits for it at the exchange after the case; then
    `--resume` by two new agents. (The killed run's outcomes, the folder, the resume's
    outcomes.)"""
    parent = tmp_path_factory.mktemp("killed")
    args = [str(WORKER), "run", "--gpus", "2", *GRID, "--results-dir", str(parent)]
    agents = _start(args, "ampbench-killed", _env(AMPBENCH_TEST_FAULTS=f"hang|{NONE_CASE}|1"))
    try:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:  # until rank 0 marks the case in flight
            marks = list(parent.glob(f"*/{launch.INFLIGHT}"))
            if marks and json.loads(marks[0].read_text() or "{}").get("case_id") == NONE_CASE:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the second case never started")
        # The agent of rank 1 and its worker: torchrun starts each worker in a session of its
        # own, so a host that goes away is the agent's process group and the workers'.
        (target,) = [a for a in agents if 1 in _workers(a.pid).values()]
        workers = list(_workers(target.pid))
        os.killpg(target.pid, signal.SIGKILL)
        for pid in workers:
            os.killpg(pid, signal.SIGKILL)
    finally:
        outcomes = _finish(agents)
    run_dir = _run_dir(parent)
    resume = ["-m", "bench", "run", "--resume", str(run_dir), "--gpus", "2"]
    resumed = _finish(_start([*resume, "--collective-timeout", "60"], "ampbench-resume", _env()))
    return outcomes, run_dir, resumed


def test_two_agents_run_a_case_and_rows_record_every_ranks_host_and_node(killed):
    _, run_dir, _ = killed
    df = results.load(run_dir).set_index("parallel")
    assert list(df.index) == ["ddp", "none", "ddp-bf16"]
    ok = df[df["status"] == "ok"]  # the first case, and the one the resume ran
    assert list(ok.index) == ["ddp", "ddp-bf16"], df["error"].to_dict()
    assert set(df["world_size"]) == {2} and set(df["nodes"]) == {2}
    host = socket.gethostname()
    assert set(ok["host"]) == {host} and set(ok["hosts"]) == {host}
    assert set(df["rank_hosts"]) == {f"{host},{host}"}
    assert set(df["rank_node_ranks"]) == {"0,1"}  # one rank a node, rank 1 on node 1
    for row in ok.itertuples():  # the row is the slowest rank's, with its node and place
        assert row.node_rank == row.slowest_rank and row.local_rank == 0
    assert set(ok["global_batch_size"]) == {16}


def test_a_killed_agent_ends_the_case_as_a_row_naming_the_lost_rank(killed):
    outcomes, run_dir, _ = killed
    survivor = [o for o in outcomes if o[0] != -signal.SIGKILL]
    ((code, _, stderr),) = survivor
    assert code != 0
    first, row = results.read_jsonl(run_dir / results.ROWS)[:2]  # the rows before the resume
    assert first["status"] == "ok"
    assert row["case_id"] == NONE_CASE and row["status"] == "timeout"
    assert row["error"].startswith(
        f"rank 1 (node 1, host {socket.gethostname()}) did not reach the end of case {NONE_CASE}"
    )
    assert row["rank_node_ranks"] == "0,1" and row["nodes"] == 2 and row["world_size"] == 2
    assert not (run_dir / launch.INFLIGHT).exists()
    assert f"the run ended with 2 case(s) in {run_dir}" in stderr
    assert f"`-m bench run --resume {run_dir} --gpus 2`" in stderr


def test_the_resume_hint_finishes_the_folder_and_rank_0_names_it(killed):
    _, run_dir, resumed = killed
    assert [code for code, _, _ in resumed] == [0, 0], [err[-2000:] for _, _, err in resumed]
    # Rank 0 alone prints the folder it wrote: the agent of node 0.
    printed = [out.strip().splitlines()[-1:] == [str(run_dir)] for _, out, _ in resumed]
    assert sorted(printed) == [False, True]
    df = results.load(run_dir).set_index("parallel")
    assert list(df["status"]) == ["ok", "timeout", "ok"]  # the lost case keeps its row
    env = results.read_env(run_dir)
    assert len(env["resumed"]) == 1 and "ended" in env and (run_dir / results.REPORT).is_file()
