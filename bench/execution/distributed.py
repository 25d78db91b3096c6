"""The ranks of a distributed run: a gloo control group (the plan, each case's exchange) and a data
group (NCCL on CUDA), every collective bounded by a timeout; an exchange that times out raises
`GroupBroken` naming the ranks that never arrived (docs/several-gpus.md)."""

from __future__ import annotations

import os
import re
import socket
import sys
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import NoReturn

import torch
import torch.distributed as dist


class GroupBroken(Exception):
    """Some rank did not arrive at an exchange in time: the group cannot go on."""


@dataclass
class World:
    """This process's place in the run. A one-process run is `World.single()` (rank 0 of 1)."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    node_rank: int = 0
    """The node (torchrun's agent, one per host) this rank runs on: torchrun's `GROUP_RANK`."""
    host: str = field(default_factory=socket.gethostname)
    device: str = "cpu"
    collective_timeout_s: float = 0.0
    data: dist.ProcessGroup | None = None
    """The group DDP, FSDP2 and the collective ceilings use (None in a one-process run)."""
    run_dir: Path | None = None
    """The results folder, where this rank can see it (rank 0's plan names it)."""
    places: list[dict[str, object]] = field(default_factory=list)
    """Every rank's `place()`, in rank order, as the ranks told each other when they joined."""
    _exchanges: int = 0

    @classmethod
    def single(cls, device: str = "cpu") -> World:
        return cls(device=device)

    @property
    def distributed(self) -> bool:
        return self.size > 1

    def place(self) -> dict[str, object]:
        """Where this rank runs: its host, node and local rank (the columns of its rows)."""
        return {"host": self.host, "node_rank": self.node_rank, "local_rank": self.local_rank}

    @property
    def nodes(self) -> int:
        """How many nodes the ranks run on (1 before they told each other their places)."""
        return len({p["node_rank"] for p in self.places}) or 1

    def where(self, rank: int) -> str:
        """A rank in words, with its node and host where the ranks told them: "rank 1 (node 1,
        host b)"."""
        if rank >= len(self.places):
            return f"rank {rank}"
        at = self.places[rank]
        return f"rank {rank} (node {at['node_rank']}, host {at['host']})"

    @property
    def leader(self) -> bool:
        """Rank 0: the rank that writes the results folder."""
        return self.rank == 0

    def renew(self) -> None:
        """A fresh data group (after a case that failed on some rank)."""
        self.data = _data_group(self.device, self.collective_timeout_s)

    def drain(self) -> None:
        """Wait on one collective of the data group, after a case every rank finished. DDP
        chains futures on its bucket all-reduces and never waits on them, and ProcessGroupNCCL
        keeps an unwaited collective's tensors (its guard for the caching allocator): without
        a wait, a finished DDP case's gradient buckets were still allocated when the next case
        began (NOTES, 2026-11-30)."""
        if self.data is None:
            return
        flag = torch.zeros(1, device=self.device)
        dist.all_reduce(flag, group=self.data, async_op=True).wait()
        if self.device == "cuda":
            torch.cuda.synchronize()

    def exchange(self, obj: object, what: str) -> list[object]:
        """Every rank's `obj`, in rank order, on every rank (gloo, outside any timed region).
        Raises `GroupBroken` when some rank does not arrive within the control timeout."""
        if not self.distributed:
            return [obj]
        self._exchanges += 1
        key = f"ampbench/exchange/{self._exchanges}"
        store = _store()
        if store is not None:
            store.set(f"{key}/{self.rank}", "1")
        out: list[object] = [None] * self.size
        try:
            # all_gather rather than gather to rank 0: every rank must know whether the case
            # failed anywhere, to replace the data group together.
            dist.all_gather_object(out, obj)
        except Exception as exc:  # a timeout or a peer gone: the group cannot go on
            missing = _missing(store, key, self.size)
            who = ", ".join(map(self.where, missing)) if missing else "a rank"
            why = _reason(exc)
            # A peer whose process is gone (a host lost) closes its connections at once.
            when = (
                f" within {2 * self.collective_timeout_s:g} s" if "timed out" in why.lower() else ""
            )
            raise GroupBroken(f"{who} did not reach the end of {what}{when} ({why})") from exc
        return out

    def close(self) -> None:
        """Leave the run together: every rank waits for the others, then the groups go. Rank 0
        then renders the report alone, with no collective left to time out."""
        if not self.distributed or not dist.is_initialized():
            return
        self.exchange(None, "the run")
        dist.destroy_process_group()

    def broadcast(self, obj: object) -> object:
        """Rank 0's `obj` on every rank (the plan of the run)."""
        if not self.distributed:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]


def leave(code: int) -> NoReturn:
    """End this rank now, with exit status `code`, without Python's finalization: after
    `World.close` torch's C++ threads (gloo's workers, the autograd engine's) still run, and one
    that touches a Python object during finalization aborts the process (SIGABRT, seen in CI on a
    CPU FSDP2 run, 2026-12-02). Every file of the run is closed by now."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def under_torchrun() -> bool:
    """True in a process that torchrun started (it sets these for every worker)."""
    return "WORLD_SIZE" in os.environ and "RANK" in os.environ


def init(device: str, collective_timeout_s: float) -> World:
    """Join the run torchrun started: the control group and the data group, with their
    timeouts, and every rank's place (`World.places`). On CUDA each rank uses the GPU of its
    local rank."""
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device == "cuda":
        torch.cuda.set_device(local_rank)
    if not dist.is_initialized():
        dist.init_process_group("gloo", timeout=timedelta(seconds=2 * collective_timeout_s))
    world = World(
        rank=rank,
        size=size,
        local_rank=local_rank,
        node_rank=node_rank(),
        device=device,
        collective_timeout_s=collective_timeout_s,
    )
    world.places = [dict(p) for p in world.exchange(world.place(), "joining the run")]
    world.renew()
    return world


def node_rank() -> int:
    """This process's node under torchrun: `GROUP_RANK`, the rank of its agent among the agents
    (what the c10d rendezvous assigned; a static rendezvous takes it from `--node-rank`), else
    `NODE_RANK` (other launchers), else 0."""
    for name in ("GROUP_RANK", "NODE_RANK"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def _data_group(device: str, timeout_s: float) -> dist.ProcessGroup:
    backend = "nccl" if device == "cuda" else "gloo"
    return dist.new_group(backend=backend, timeout=timedelta(seconds=timeout_s))


def _store() -> dist.Store | None:
    # The rendezvous store torchrun shares with every rank. It stays reachable when a collective
    # does not, so it says which ranks reached an exchange. A private accessor: when a torch
    # version lacks it, the message names no rank.
    try:
        return dist.distributed_c10d._get_default_store()
    except Exception:
        return None


def _reason(exc: Exception) -> str:
    """An exception's type and the first sentence of its message, without the source location
    gloo puts first: "RuntimeError: Connection closed by peer [127.0.0.1]:16296."."""
    text = str(exc).strip().split("\n")[0]
    text = re.sub(r"^\[[^\]]*\]\s*", "", text).split(". ")[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _missing(store: dist.Store | None, key: str, size: int) -> list[int]:
    if store is None:
        return []
    try:
        return [r for r in range(size) if not store.check([f"{key}/{r}"])]
    except Exception:
        return []
